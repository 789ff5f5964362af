// Package audience is the viewers of a stream by protocol: what the data
// plane counts (the hub its RTMP viewers, the packager its HLS and DASH
// clients) and the control plane reports in the relays' status.
package audience

// Protocols of a viewer.
const (
	RTMP = "rtmp"
	HLS  = "hls"
	DASH = "dash"
)

// Load is the share of one protocol in a stream's audience.
type Load struct {
	Protocol string  `json:"protocol"` // RTMP, HLS or DASH
	Viewers  int     `json:"viewers"`
	Mbps     float64 `json:"mbps"`
}
