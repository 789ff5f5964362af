package agent

import (
	"sort"
	"strings"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/hub"
)

// HTTPFunc returns the streams served over HLS and DASH, by "app/name"
// (the packager's, adapted by the process).
type HTTPFunc func() map[string]HTTPStream

// HTTPStream is what a server's packager serves of one stream.
type HTTPStream struct {
	Ready bool               // it has segments: a player sent here plays at once
	Loads []bus.ProtocolLoad // the audience by protocol
}

// HubStats reads the per-stream load of a relay from its hub registry.
func HubStats(reg *hub.Registry) StatsFunc { return Stats(reg, nil) }

// Stats reads the per-stream load of a relay from its hub registry (RTMP
// viewers) and http (HLS/DASH viewers, may be nil): Viewers and Mbps of each
// stream are the totals over the protocols, Protocols lists the shares of
// the protocols that have viewers. A stream with HTTP viewers but no hub
// (its pull ended under them) is listed too, not live.
func Stats(reg *hub.Registry, http HTTPFunc) StatsFunc {
	return func() []bus.StreamStatus {
		var aud map[string]HTTPStream
		if http != nil {
			aud = http()
		}
		hubs := reg.List()
		out := make([]bus.StreamStatus, 0, len(hubs))
		seen := make(map[string]bool, len(hubs))
		for _, h := range hubs {
			in := h.Info()
			key := in.App + "/" + in.Name
			seen[key] = true
			// Outgoing bandwidth: every viewer receives about the stream's bitrate.
			mbps := float64(in.BitrateKbps) / 1000 * float64(in.Viewers)
			st := bus.StreamStatus{App: in.App, Name: in.Name, Viewers: in.Viewers, Mbps: mbps, Live: in.Live,
				VideoCodec: in.VideoCodec, AudioCodec: in.AudioCodec, Width: in.Width, Height: in.Height, BitrateKbps: in.BitrateKbps}
			if in.Viewers > 0 {
				st.Protocols = append(st.Protocols, bus.ProtocolLoad{Protocol: bus.ProtoRTMP, Viewers: in.Viewers, Mbps: mbps})
			}
			addHTTP(&st, aud[key].Loads)
			st.HTTPReady = aud[key].Ready && in.Live
			out = append(out, st)
		}
		var rest []string
		for key, hs := range aud {
			if !seen[key] && viewersOf(hs.Loads) > 0 {
				rest = append(rest, key)
			}
		}
		sort.Strings(rest)
		for _, key := range rest {
			app, name, _ := strings.Cut(key, "/")
			st := bus.StreamStatus{App: app, Name: name}
			addHTTP(&st, aud[key].Loads)
			out = append(out, st)
		}
		return out
	}
}

// addHTTP adds the HTTP protocols with viewers to st and its totals.
func addHTTP(st *bus.StreamStatus, pl []bus.ProtocolLoad) {
	for _, p := range pl {
		if p.Viewers <= 0 {
			continue
		}
		st.Viewers += p.Viewers
		st.Mbps += p.Mbps
		st.Protocols = append(st.Protocols, p)
	}
}

func viewersOf(pl []bus.ProtocolLoad) int {
	n := 0
	for _, p := range pl {
		n += p.Viewers
	}
	return n
}
