package relay

import (
	"net/http"

	"github.com/relaymesh/relaymesh/internal/httpserver"
	"github.com/relaymesh/relaymesh/relay/hub"
)

// StreamsHandler serves GET /api/v1/streams: every stream of the registry
// with its publisher, codecs, bitrate, viewers and their drop counters.
func StreamsHandler(hubs *hub.Registry) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		list := hubs.List()
		out := make([]hub.Info, 0, len(list))
		for _, h := range list {
			out = append(out, h.Info())
		}
		httpserver.WriteJSON(w, http.StatusOK, map[string]any{"streams": out})
	})
}
