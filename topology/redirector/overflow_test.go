package redirector

import (
	"github.com/prometheus/client_golang/prometheus"
	"net/http"
	"testing"

	"github.com/relaymesh/relaymesh/topology/placement"
)

// With every server full, HLS and DASH viewers spill to the configured CDN;
// RTMP viewers (and everyone without an overflow) are told to retry later.
func TestOverflowToCDN(t *testing.T) {
	for _, overflow := range []string{"https://cdn.example.net/", ""} {
		r := newTest(t, nil, Config{DevIP: true, OverflowURL: overflow})
		m := r.Mesh()
		if _, err := m.AddStream("live/big", 2.5); err != nil {
			t.Fatal(err)
		}
		for i := range m.NumServers() {
			m.SetDraining(placement.ServerID(i), true)
		}
		h := r.Handler()
		w := get(t, h, "/play/live/big?proto=hls&ip=198.51.100.7", nil)
		if overflow != "" {
			if w.Code != http.StatusFound || w.Header().Get("Location") != "https://cdn.example.net/hls/live/big/index.m3u8" {
				t.Fatalf("hls with overflow: %d %q", w.Code, w.Header().Get("Location"))
			}
			if c := choice(t, h, "/play/live/big?proto=dash&ip=198.51.100.7"); c.URL != "https://cdn.example.net/dash/live/big/manifest.mpd" {
				t.Fatalf("dash with overflow: %+v", c)
			}
		} else if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
			t.Fatalf("hls without overflow: %d", w.Code)
		}
		if w := get(t, h, "/play/live/big?proto=rtmp&ip=198.51.100.7", nil); w.Code != http.StatusServiceUnavailable {
			t.Fatalf("rtmp when full: %d", w.Code)
		}
	}
}

// The /play answers are counted for Prometheus.
func TestAnswerMetrics(t *testing.T) {
	r := newTest(t, nil, Config{DevIP: true, OverflowURL: "https://cdn.example.net"})
	h := r.Handler()
	get(t, h, "/play/live/x?proto=rtmp&ip=198.51.100.7", nil)
	m := r.Mesh()
	if _, err := m.AddStream("live/big", 2.5); err != nil {
		t.Fatal(err)
	}
	for i := range m.NumServers() {
		m.SetDraining(placement.ServerID(i), true)
	}
	get(t, h, "/play/live/big?proto=hls&ip=198.51.100.7", nil)
	get(t, h, "/play/live/big?proto=rtmp&ip=198.51.100.7", nil)
	if n := r.answers.byReason[placement.ReasonUnknown].Load(); n != 1 {
		t.Errorf("unknown-stream answers %d", n)
	}
	if r.answers.overflow.Load() != 1 || r.answers.full.Load() != 1 {
		t.Errorf("overflow %d, full %d", r.answers.overflow.Load(), r.answers.full.Load())
	}
	ch := make(chan prometheus.Metric, 16)
	r.Collector().Collect(ch)
	close(ch)
	n := 0
	for range ch {
		n++
	}
	if n < 4 {
		t.Errorf("%d metrics collected", n)
	}
}
