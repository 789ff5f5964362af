package agent

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaymesh/relaymesh/internal/bus"
)

// ViewersCollector exports what stats reports at every scrape:
// relaymesh_viewers{app,stream,protocol} and relaymesh_viewers_mbps, the
// same figures the relay sends the control plane. labels (nil: a stream's
// own) maps a stream to the app and stream labels its series carry; streams
// mapped to one pair are summed (hub.Registry.StreamLabels keeps these
// metrics to the hub's per-stream label bound).
func ViewersCollector(stats StatsFunc, labels LabelsFunc) prometheus.Collector {
	return viewersCollector{stats, labels}
}

// LabelsFunc maps a stream to the app and stream labels of its series.
type LabelsFunc func(app, name string) (string, string)

var (
	viewersDesc = prometheus.NewDesc("relaymesh_viewers",
		"Viewers of a stream on this server, by protocol (rtmp players; hls and dash clients seen within the audience window).",
		[]string{"app", "stream", "protocol"}, nil)
	viewersMbpsDesc = prometheus.NewDesc("relaymesh_viewers_mbps",
		"Mbit/s sent to the viewers of a stream on this server, by protocol (rtmp: bitrate × viewers; hls, dash: bytes served).",
		[]string{"app", "stream", "protocol"}, nil)
)

type viewersCollector struct {
	stats  StatsFunc
	labels LabelsFunc
}

func (c viewersCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- viewersDesc
	ch <- viewersMbpsDesc
}

func (c viewersCollector) Collect(ch chan<- prometheus.Metric) {
	type pair struct{ app, stream string }
	sums := map[pair]map[string]bus.ProtocolLoad{}
	var order []pair
	for _, st := range c.stats() {
		k := pair{st.App, st.Name}
		if c.labels != nil {
			k.app, k.stream = c.labels(st.App, st.Name)
		}
		by := sums[k]
		if by == nil {
			// Every protocol of a stream the server carries, with viewers or not.
			by = map[string]bus.ProtocolLoad{bus.ProtoRTMP: {}, bus.ProtoHLS: {}, bus.ProtoDASH: {}}
			sums[k] = by
			order = append(order, k)
		}
		for _, p := range st.Protocols {
			s := by[p.Protocol]
			s.Viewers += p.Viewers
			s.Mbps += p.Mbps
			by[p.Protocol] = s
		}
	}
	for _, k := range order {
		for proto, p := range sums[k] {
			ch <- prometheus.MustNewConstMetric(viewersDesc, prometheus.GaugeValue, float64(p.Viewers), k.app, k.stream, proto)
			ch <- prometheus.MustNewConstMetric(viewersMbpsDesc, prometheus.GaugeValue, p.Mbps, k.app, k.stream, proto)
		}
	}
}
