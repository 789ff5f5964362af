package hub

import "github.com/prometheus/client_golang/prometheus"

// Metric descriptions. Counting happens in plain fields under the locks the
// hot path already holds; the collector sums them at scrape time.
var (
	descStreams     = prometheus.NewDesc("relaymesh_hub_streams", "Hubs in the registry.", nil, nil)
	descLive        = prometheus.NewDesc("relaymesh_hub_streams_live", "Hubs with a publishing session.", nil, nil)
	descSubscribers = prometheus.NewDesc("relaymesh_hub_subscribers", "Subscribers by kind.", []string{"kind"}, nil)
	descFramesIn    = prometheus.NewDesc("relaymesh_hub_frames_in_total", "Frames written by publishers.", nil, nil)
	descSent        = prometheus.NewDesc("relaymesh_hub_frames_sent_total", "Frames handed to subscribers.", nil, nil)
	descDropped     = prometheus.NewDesc("relaymesh_hub_frames_dropped_total", "Frames dropped by the viewer drop policy, by class.", []string{"class"}, nil)
	descClosed      = prometheus.NewDesc("relaymesh_hub_subscribers_closed_total", "Subscribers closed by the hub, by reason.", []string{"reason"}, nil)
)

// Collector returns a prometheus.Collector for every hub of the registry.
func (r *Registry) Collector() prometheus.Collector { return collector{r} }

// RegisterMetrics registers the registry's collector on reg.
func (r *Registry) RegisterMetrics(reg prometheus.Registerer) error {
	return reg.Register(r.Collector())
}

type collector struct{ r *Registry }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descStreams, descLive, descSubscribers, descFramesIn, descSent, descDropped, descClosed} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	r := c.r
	// The registry lock keeps hubs from leaving (and folding their counters
	// into r.retired) while we sum; scrapes are rare.
	r.mu.Lock()
	t := r.retired
	in := r.inGone
	streams := len(r.hubs)
	live, viewers, lossless := 0, 0, 0
	for _, h := range r.hubs {
		h.mu.Lock()
		ht := h.totalsLocked()
		t.sent += ht.sent
		t.dropped.add(ht.dropped)
		t.tooSlow += ht.tooSlow
		t.overflw += ht.overflw
		in += h.framesIn
		if h.live {
			live++
		}
		for _, s := range *h.subs.Load() {
			if s.lossless {
				lossless++
			} else {
				viewers++
			}
		}
		h.mu.Unlock()
	}
	r.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descStreams, prometheus.GaugeValue, float64(streams))
	ch <- prometheus.MustNewConstMetric(descLive, prometheus.GaugeValue, float64(live))
	ch <- prometheus.MustNewConstMetric(descSubscribers, prometheus.GaugeValue, float64(viewers), "viewer")
	ch <- prometheus.MustNewConstMetric(descSubscribers, prometheus.GaugeValue, float64(lossless), "lossless")
	ch <- prometheus.MustNewConstMetric(descFramesIn, prometheus.CounterValue, float64(in))
	ch <- prometheus.MustNewConstMetric(descSent, prometheus.CounterValue, float64(t.sent))
	for _, c := range []struct {
		class string
		n     uint64
	}{{"disposable", t.dropped.Disposable}, {"inter", t.dropped.Inter}, {"key", t.dropped.Key}, {"audio", t.dropped.Audio}} {
		ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(c.n), c.class)
	}
	ch <- prometheus.MustNewConstMetric(descClosed, prometheus.CounterValue, float64(t.tooSlow), "too_slow")
	ch <- prometheus.MustNewConstMetric(descClosed, prometheus.CounterValue, float64(t.overflw), "overflow")
}
