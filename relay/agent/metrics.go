package agent

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaymesh/relaymesh/internal/bus"
)

// ViewersCollector exports what stats reports at every scrape:
// relaymesh_viewers{app,stream,protocol} and relaymesh_viewers_mbps, the
// same figures the relay sends the control plane.
func ViewersCollector(stats StatsFunc) prometheus.Collector { return viewersCollector{stats} }

var (
	viewersDesc = prometheus.NewDesc("relaymesh_viewers",
		"Viewers of a stream on this server, by protocol (rtmp players; hls and dash clients seen within the audience window).",
		[]string{"app", "stream", "protocol"}, nil)
	viewersMbpsDesc = prometheus.NewDesc("relaymesh_viewers_mbps",
		"Mbit/s sent to the viewers of a stream on this server, by protocol (rtmp: bitrate × viewers; hls, dash: bytes served).",
		[]string{"app", "stream", "protocol"}, nil)
)

type viewersCollector struct{ stats StatsFunc }

func (c viewersCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- viewersDesc
	ch <- viewersMbpsDesc
}

func (c viewersCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.stats() {
		// Every protocol of a stream the server carries, with viewers or not.
		by := map[string]bus.ProtocolLoad{bus.ProtoRTMP: {}, bus.ProtoHLS: {}, bus.ProtoDASH: {}}
		for _, p := range st.Protocols {
			by[p.Protocol] = p
		}
		for proto, p := range by {
			ch <- prometheus.MustNewConstMetric(viewersDesc, prometheus.GaugeValue, float64(p.Viewers), st.App, st.Name, proto)
			ch <- prometheus.MustNewConstMetric(viewersMbpsDesc, prometheus.GaugeValue, p.Mbps, st.App, st.Name, proto)
		}
	}
}
