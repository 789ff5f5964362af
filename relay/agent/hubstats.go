package agent

import (
	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/relay/hub"
)

// HubStats reads the per-stream load of a relay from its hub registry.
func HubStats(reg *hub.Registry) StatsFunc {
	return func() []bus.StreamStatus {
		hubs := reg.List()
		out := make([]bus.StreamStatus, 0, len(hubs))
		for _, h := range hubs {
			in := h.Info()
			// Outgoing bandwidth: every viewer receives about the stream's bitrate.
			mbps := float64(in.BitrateKbps) / 1000 * float64(in.Viewers)
			out = append(out, bus.StreamStatus{App: in.App, Name: in.Name, Viewers: in.Viewers, Mbps: mbps, Live: in.Live})
		}
		return out
	}
}
