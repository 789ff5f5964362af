package hub

import "github.com/prometheus/client_golang/prometheus"

// Metric descriptions. Counting happens in plain fields under the locks the
// hot path already holds; the collector sums them at scrape time, so a frame
// costs no metric lookup and no allocation.
//
// The relaymesh_hub_* totals count every stream over the life of the
// process. The relaymesh_stream_* series carry app and stream labels for at
// most Config.MetricsStreams hubs at a time (the first ones to appear); the
// hubs beyond the bound are summed under stream="_other", which keeps
// counting across their departures. A labelled stream's series end when its
// hub leaves the registry (and restart from zero if it comes back).
var (
	descStreams     = prometheus.NewDesc("relaymesh_hub_streams", "Hubs in the registry.", nil, nil)
	descLive        = prometheus.NewDesc("relaymesh_hub_streams_live", "Hubs with a publishing session.", nil, nil)
	descUnlabelled  = prometheus.NewDesc("relaymesh_hub_streams_unlabelled", "Hubs beyond the per-stream label bound, summed under stream=\"_other\".", nil, nil)
	descSubscribers = prometheus.NewDesc("relaymesh_hub_subscribers", "Subscribers by kind.", []string{"kind"}, nil)
	descFramesIn    = prometheus.NewDesc("relaymesh_hub_frames_in_total", "Frames written by publishers.", nil, nil)
	descSent        = prometheus.NewDesc("relaymesh_hub_frames_sent_total", "Frames handed to subscribers.", nil, nil)
	descDropped     = prometheus.NewDesc("relaymesh_hub_frames_dropped_total", "Frames dropped by the viewer drop policy, by class.", []string{"class"}, nil)
	descClosed      = prometheus.NewDesc("relaymesh_hub_subscribers_closed_total", "Subscribers closed by the hub, by reason.", []string{"reason"}, nil)

	streamLabels      = []string{"app", "stream"}
	descSFramesIn     = prometheus.NewDesc("relaymesh_stream_frames_in_total", "Frames written by the stream's publishers.", streamLabels, nil)
	descSBytesIn      = prometheus.NewDesc("relaymesh_stream_bytes_in_total", "Payload bytes written by the stream's publishers.", streamLabels, nil)
	descSFramesSent   = prometheus.NewDesc("relaymesh_stream_frames_sent_total", "Frames of the stream handed to subscribers.", streamLabels, nil)
	descSBytesOut     = prometheus.NewDesc("relaymesh_stream_bytes_out_total", "Payload bytes of the stream handed to subscribers (RTMP viewers, relays' pulls, the packager).", streamLabels, nil)
	descSDropped      = prometheus.NewDesc("relaymesh_stream_frames_dropped_total", "Frames of the stream dropped by the viewer drop policy, by class.", append(streamLabels[:2:2], "class"), nil)
	descSClosed       = prometheus.NewDesc("relaymesh_stream_subscribers_closed_total", "Subscribers of the stream closed by the hub, by reason.", append(streamLabels[:2:2], "reason"), nil)
	descSBitrate      = prometheus.NewDesc("relaymesh_stream_bitrate_bits_per_second", "Ingest bitrate of the live stream over the last few seconds of media time.", streamLabels, nil)
	descSSubscribers  = prometheus.NewDesc("relaymesh_stream_subscribers", "Subscribers of the stream by kind.", append(streamLabels[:2:2], "kind"), nil)
	otherStream       = "_other"
	streamDescriptors = []*prometheus.Desc{descSFramesIn, descSBytesIn, descSFramesSent, descSBytesOut, descSDropped, descSClosed, descSBitrate, descSSubscribers}
)

// streamCounts is what the per-stream series of one label pair show.
type streamCounts struct {
	framesIn, bytesIn uint64
	sub               subTotals
	bps               float64
	viewers, lossless int
}

func (c *streamCounts) add(o streamCounts) {
	c.framesIn += o.framesIn
	c.bytesIn += o.bytesIn
	c.sub.add(o.sub)
	c.bps += o.bps
	c.viewers += o.viewers
	c.lossless += o.lossless
}

func (t *subTotals) add(o subTotals) {
	t.sent += o.sent
	t.sentBytes += o.sentBytes
	t.dropped.add(o.dropped)
	t.tooSlow += o.tooSlow
	t.overflw += o.overflw
}

// streamMetrics is the registry's side of the label bound; guarded by
// Registry.mu.
type streamMetrics struct {
	labelled int
	// other holds, by app, the counters of unlabelled hubs that have left
	// (so "_other" never goes backwards). Its apps are bounded like the
	// streams: beyond the bound they share app="_other".
	other map[string]*streamCounts
}

// labelLocked gives a new hub its own labels if the bound allows. r.mu is held.
func (r *Registry) labelLocked(h *Hub) {
	if r.labelled < r.cfg.MetricsStreams {
		r.labelled++
		h.labelled = true
	}
}

// unlabelLocked frees a leaving hub's labels, or folds its counters into
// "_other". r.mu and h.mu are held; t is h's subscriber totals.
func (r *Registry) unlabelLocked(h *Hub, t subTotals) {
	if h.labelled {
		h.labelled = false
		r.labelled--
		return
	}
	r.otherOf(h.app).add(streamCounts{framesIn: h.framesIn, bytesIn: h.bytesIn, sub: t})
}

// otherOf returns the "_other" counters of app. r.mu is held.
func (r *Registry) otherOf(app string) *streamCounts {
	if r.other == nil {
		r.other = map[string]*streamCounts{}
	}
	return bucket(r.other, app, r.cfg.MetricsStreams)
}

// bucket returns m[app], created if m has fewer than limit apps, else
// m["_other"]: the apps of "_other" are bounded like the streams.
func bucket(m map[string]*streamCounts, app string, limit int) *streamCounts {
	if c := m[app]; c != nil {
		return c
	}
	if len(m) >= limit {
		app = otherStream
		if c := m[app]; c != nil {
			return c
		}
	}
	c := &streamCounts{}
	m[app] = c
	return c
}

// Collector returns a prometheus.Collector for every hub of the registry.
func (r *Registry) Collector() prometheus.Collector { return collector{r} }

// RegisterMetrics registers the registry's collector on reg.
func (r *Registry) RegisterMetrics(reg prometheus.Registerer) error {
	return reg.Register(r.Collector())
}

type collector struct{ r *Registry }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descStreams, descLive, descUnlabelled, descSubscribers, descFramesIn, descSent, descDropped, descClosed} {
		ch <- d
	}
	for _, d := range streamDescriptors {
		ch <- d
	}
}

// labelled is one stream's series at scrape time.
type labelled struct {
	app, stream string
	c           streamCounts
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	r := c.r
	// The registry lock keeps hubs from leaving (and folding their counters
	// into r.retired) while we sum; scrapes are rare.
	r.mu.Lock()
	t := r.retired
	in := r.inGone
	streams := len(r.hubs)
	live, viewers, lossless, unlabelled := 0, 0, 0, 0
	per := make([]labelled, 0, len(r.hubs))
	other := map[string]*streamCounts{}
	for app, oc := range r.other {
		cp := *oc
		other[app] = &cp
	}
	for _, h := range r.hubs {
		h.mu.Lock()
		ht := h.totalsLocked()
		t.add(ht)
		in += h.framesIn
		sc := streamCounts{framesIn: h.framesIn, bytesIn: h.bytesIn, sub: ht}
		if h.live {
			live++
			sc.bps = float64(h.rate.kbps(h.lastTS)) * 1000
		}
		for _, s := range *h.subs.Load() {
			if s.lossless {
				lossless++
				sc.lossless++
			} else {
				viewers++
				sc.viewers++
			}
		}
		if h.labelled {
			per = append(per, labelled{h.app, h.name, sc})
		} else {
			unlabelled++
			bucket(other, h.app, r.cfg.MetricsStreams).add(sc)
		}
		h.mu.Unlock()
	}
	r.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descStreams, prometheus.GaugeValue, float64(streams))
	ch <- prometheus.MustNewConstMetric(descLive, prometheus.GaugeValue, float64(live))
	ch <- prometheus.MustNewConstMetric(descUnlabelled, prometheus.GaugeValue, float64(unlabelled))
	ch <- prometheus.MustNewConstMetric(descSubscribers, prometheus.GaugeValue, float64(viewers), "viewer")
	ch <- prometheus.MustNewConstMetric(descSubscribers, prometheus.GaugeValue, float64(lossless), "lossless")
	ch <- prometheus.MustNewConstMetric(descFramesIn, prometheus.CounterValue, float64(in))
	ch <- prometheus.MustNewConstMetric(descSent, prometheus.CounterValue, float64(t.sent))
	for _, d := range dropClasses(t.dropped) {
		ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(d.n), d.class)
	}
	ch <- prometheus.MustNewConstMetric(descClosed, prometheus.CounterValue, float64(t.tooSlow), "too_slow")
	ch <- prometheus.MustNewConstMetric(descClosed, prometheus.CounterValue, float64(t.overflw), "overflow")

	for _, l := range per {
		emitStream(ch, l.app, l.stream, l.c)
	}
	for app, oc := range other {
		emitStream(ch, app, otherStream, *oc)
	}
}

func emitStream(ch chan<- prometheus.Metric, app, stream string, c streamCounts) {
	counter := func(d *prometheus.Desc, v uint64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{app, stream}, extra...)...)
	}
	counter(descSFramesIn, c.framesIn)
	counter(descSBytesIn, c.bytesIn)
	counter(descSFramesSent, c.sub.sent)
	counter(descSBytesOut, c.sub.sentBytes)
	for _, d := range dropClasses(c.sub.dropped) {
		counter(descSDropped, d.n, d.class)
	}
	counter(descSClosed, c.sub.tooSlow, "too_slow")
	counter(descSClosed, c.sub.overflw, "overflow")
	ch <- prometheus.MustNewConstMetric(descSBitrate, prometheus.GaugeValue, c.bps, app, stream)
	ch <- prometheus.MustNewConstMetric(descSSubscribers, prometheus.GaugeValue, float64(c.viewers), app, stream, "viewer")
	ch <- prometheus.MustNewConstMetric(descSSubscribers, prometheus.GaugeValue, float64(c.lossless), app, stream, "lossless")
}

type dropClass struct {
	class string
	n     uint64
}

func dropClasses(d DropCounts) [4]dropClass {
	return [4]dropClass{{"disposable", d.Disposable}, {"inter", d.Inter}, {"key", d.Key}, {"audio", d.Audio}}
}

// StreamLabels returns the app and stream labels the per-stream series of
// app/name carry: its own, or those of the "_other" it is summed under (a
// stream without a hub too). Other per-stream metrics use it to keep to the
// same bound.
func (r *Registry) StreamLabels(app, name string) (string, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.hubs[key(app, name)]; h != nil && h.labelled {
		return app, name
	}
	if _, ok := r.other[app]; ok || len(r.other) < r.cfg.MetricsStreams {
		return app, otherStream
	}
	return otherStream, otherStream
}
