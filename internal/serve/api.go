package serve

import (
	"net/http"

	"github.com/relaymesh/relaymesh/internal/audience"
	"github.com/relaymesh/relaymesh/internal/httpserver"
	"github.com/relaymesh/relaymesh/internal/hub"
)

// StreamView is one stream of /api/v1/streams: the hub's Info, with viewers
// counted over every protocol and their breakdown (rtmp from the hub, hls
// and dash from the HTTP audience).
type StreamView struct {
	hub.Info
	Viewers   int             `json:"viewers"` // every protocol
	Protocols []audience.Load `json:"protocols"`
}

// StreamsHandler serves GET /api/v1/streams: every stream of the registry
// with its publisher, codecs, bitrate, viewers and their drop counters.
// httpAudience (may be nil) gives the HLS/DASH viewers by "app/name".
func StreamsHandler(hubs *hub.Registry, httpAudience func() map[string][]audience.Load) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var aud map[string][]audience.Load
		if httpAudience != nil {
			aud = httpAudience()
		}
		list := hubs.List()
		out := make([]StreamView, 0, len(list))
		for _, h := range list {
			in := h.Info()
			v := StreamView{Info: in, Viewers: in.Viewers,
				Protocols: []audience.Load{{Protocol: audience.RTMP, Viewers: in.Viewers, Mbps: float64(in.BitrateKbps) / 1000 * float64(in.Viewers)}}}
			for _, p := range aud[in.App+"/"+in.Name] {
				v.Viewers += p.Viewers
				v.Protocols = append(v.Protocols, p)
			}
			out = append(out, v)
		}
		httpserver.WriteJSON(w, http.StatusOK, map[string]any{"streams": out})
	})
}
