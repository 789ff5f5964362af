package rtmp

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaymesh/relaymesh/internal/av"
)

// The write latency of sampled connections: for each media frame, the time
// from its arrival in the hub (av.Frame.Arrived) to the return of the writev
// that handed the last byte of its batch to the kernel. That is what the
// server adds per hop (the coalescing, the wait for the connection's round,
// the round over the connections before it, the writev), without what a
// player takes to read. Frames of a viewer's join burst (they arrived before
// it started playing) are left out.

// latencySampleEvery: one connection in this many is sampled (a histogram
// observation per frame costs a few atomic operations).
const latencySampleEvery = 8

// maxLatencyFrames bounds the frames remembered per batch; a batch with more
// (a viewer catching up) is sampled by its first ones.
const maxLatencyFrames = 32

var latencySeq atomic.Uint32

// writeLatencyBuckets are in seconds: fine around the 30 ms per hop that
// matters, coarse beyond.
var writeLatencyBuckets = []float64{.001, .002, .003, .005, .0075, .01, .015, .02, .025, .03, .04, .05, .075, .1, .15, .2, .3, .5, 1, 2}

// Values of the viewer label: whether the viewer kept up, or its socket was
// full or its media held back lately (then its frames also waited for the
// viewer, not only for the server).
const (
	latencyKeepingUp = "keeping_up"
	latencyBehind    = "behind"
)

func newWriteLatency() *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "relaymesh_rtmp_write_latency_seconds",
		Help:    "For sampled viewers (one connection in " + strconv.Itoa(latencySampleEvery) + "), per media frame: from its arrival in the hub to the return of the writev that handed it to the kernel; viewer=behind when the viewer's socket was full or its media held back within the last second.",
		Buckets: writeLatencyBuckets,
	}, []string{"viewer"})
	h.WithLabelValues(latencyKeepingUp)
	h.WithLabelValues(latencyBehind)
	return h
}

// latencySample is a sampled connection's record of the batch pending in
// its chunk writer (nil for the others). Owned by the connection's writer.
type latencySample struct {
	arrived [maxLatencyFrames]int64
	n       int
	held    time.Time // media was last held back for the viewer then
}

// sampleLatency decides whether c is sampled (only with metrics).
func (c *Conn) sampleLatency() {
	if c.cfg.Metrics != nil && latencySeq.Add(1)%latencySampleEvery == 0 {
		c.lat = &latencySample{}
	}
}

// latencyFrame remembers f, appended to the pending batch of b's stream.
func (c *Conn) latencyFrame(b *binding, f *av.Frame) {
	if c.lat == nil || f.Kind == av.KindEvent || f.Arrived <= b.since || c.lat.n == maxLatencyFrames {
		return
	}
	c.lat.arrived[c.lat.n] = f.Arrived
	c.lat.n++
}

// latencyWritten observes the remembered frames once the chunk writer has
// nothing pending: the writev that just returned carried the last of them.
func (c *Conn) latencyWritten() {
	if c.lat == nil || c.lat.n == 0 || c.writer.Pending() > 0 {
		return
	}
	now := av.Monotonic()
	h := c.cfg.Metrics.keepingUp
	if t := time.Now(); t.Before(c.slowUntil) || t.Sub(c.lat.held) < time.Second {
		h = c.cfg.Metrics.behind
	}
	for _, a := range c.lat.arrived[:c.lat.n] {
		h.Observe(time.Duration(now - a).Seconds())
	}
	c.lat.n = 0
}

// latencyHeld notes that media was held back for the viewer (the kernel
// holds enough of it): its next frames waited for the viewer too.
func (c *Conn) latencyHeld(now time.Time) {
	if c.lat != nil {
		c.lat.held = now
	}
}
