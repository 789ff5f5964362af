package pull

import "github.com/prometheus/client_golang/prometheus"

var (
	descUpstreamPulls = prometheus.NewDesc("relaymesh_upstream_pulls",
		"Streams pulled from upstream, by state: playing (the upstream plays it) or connecting (between attempts, or before the first answer).",
		[]string{"state", "held"}, nil)
	descUpstreamReconnects = prometheus.NewDesc("relaymesh_upstream_reconnects_total",
		"Upstream attempts made after a pull's first (lost or unreachable upstreams).", nil, nil)
)

// Collector exports the pulls' states and the reconnect count.
func (u *Upstream) Collector() prometheus.Collector { return upstreamCollector{u} }

type upstreamCollector struct{ u *Upstream }

func (c upstreamCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descUpstreamPulls
	ch <- descUpstreamReconnects
}

func (c upstreamCollector) Collect(ch chan<- prometheus.Metric) {
	var n [2][2]int // [playing][held]
	c.u.mu.Lock()
	for _, p := range c.u.pulls {
		i, j := 0, 0
		if p.playing {
			i = 1
		}
		if p.hold {
			j = 1
		}
		n[i][j]++
	}
	c.u.mu.Unlock()
	for i, state := range []string{"connecting", "playing"} {
		for j, held := range []string{"false", "true"} {
			ch <- prometheus.MustNewConstMetric(descUpstreamPulls, prometheus.GaugeValue, float64(n[i][j]), state, held)
		}
	}
	ch <- prometheus.MustNewConstMetric(descUpstreamReconnects, prometheus.CounterValue, float64(c.u.reconnects.Load()))
}
