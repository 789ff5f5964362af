package packager

import (
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the packager's Prometheus series.
type metrics struct {
	segments *prometheus.CounterVec // produced, by rendition
	parts    *prometheus.CounterVec // produced, by rendition
	bytes    *prometheus.CounterVec // served, by rendition ("playlist" for manifests)
	renders  *prometheus.CounterVec // playlists/manifests rendered, by kind
	viewers  *prometheus.GaugeVec   // HTTP viewers, by app and stream
	streams  prometheus.Gauge       // streams being packaged
	requests *prometheus.CounterVec // HTTP requests, by status code
	waiting  prometheus.Gauge       // requests waiting for a file that does not exist yet

	// The series every request counts into, looked up once rather than by
	// label values per request: by status code (made on first use), and
	// bytes served by rendition, then playlist, then muxed.
	byCode [600]atomic.Pointer[counter]
	served [numRenditions + 2]prometheus.Counter
}

type counter struct{ c prometheus.Counter }

// Indexes of metrics.served past the renditions.
const (
	servedPlaylist = int(numRenditions)
	servedMuxed    = int(numRenditions) + 1
)

// request counts a request answered with code.
func (m *metrics) request(code int) {
	if code < 0 || code >= len(m.byCode) {
		m.requests.WithLabelValues(strconv.Itoa(code)).Inc()
		return
	}
	c := m.byCode[code].Load()
	if c == nil {
		c = &counter{m.requests.WithLabelValues(strconv.Itoa(code))}
		m.byCode[code].Store(c) // a race stores the same series
	}
	c.c.Inc()
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		segments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "relaymesh", Subsystem: "packager", Name: "segments_produced_total",
			Help: "Media segments produced, by rendition (each production serves every viewer).",
		}, []string{"rendition"}),
		parts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "relaymesh", Subsystem: "packager", Name: "parts_produced_total",
			Help: "Low-latency HLS parts produced, by rendition.",
		}, []string{"rendition"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "relaymesh", Subsystem: "packager", Name: "served_bytes_total",
			Help: "Response body bytes served, by rendition (playlist for playlists and manifests, muxed for the files of muxed.m3u8).",
		}, []string{"rendition"}),
		renders: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "relaymesh", Subsystem: "packager", Name: "playlists_rendered_total",
			Help: "Playlists and manifests rendered, by kind (concurrent requests share one rendering).",
		}, []string{"kind"}),
		viewers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "relaymesh", Subsystem: "packager", Name: "viewers",
			Help: "Distinct HTTP clients (by session token or address) seen within the viewer window, by stream.",
		}, []string{"app", "stream"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "relaymesh", Subsystem: "packager", Name: "streams",
			Help: "Streams being packaged.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "relaymesh", Subsystem: "packager", Name: "http_requests_total",
			Help: "HTTP requests, by status code.",
		}, []string{"code"}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "relaymesh", Subsystem: "packager", Name: "waiting_requests",
			Help: "Requests waiting for a playlist update, part or segment that does not exist yet.",
		}),
	}
	for r := Full; r < numRenditions; r++ {
		m.served[r] = m.bytes.WithLabelValues(r.String())
	}
	m.served[servedPlaylist] = m.bytes.WithLabelValues("playlist")
	m.served[servedMuxed] = m.bytes.WithLabelValues(muxedName)
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.segments, m.parts, m.bytes, m.renders, m.viewers, m.streams, m.requests, m.waiting} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, errors.New("packager: metrics already registered (one Packager per registerer)")
			}
			return nil, err
		}
	}
	return m, nil
}
