package rtmp

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/relaymesh/relaymesh/internal/av"
)

// A sampled connection observes each media frame from its arrival in the hub
// to the writev that carried it; frames that arrived before the viewer
// started playing (its join burst) are left out.
func TestWriteLatencySampled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := NewFlusher(ctx, 50*time.Millisecond, 1)
	m := NewMetrics()
	srv, cli := flusherPair(t, f, ConnConfig{Metrics: m})
	srv.lat = &latencySample{} // whichever connection the sampling picked

	src := &memSource{}
	burst := video(0, 500)
	burst.Arrived = av.Monotonic() - int64(time.Second)
	src.push(burst)
	srv.Bind(1, src, nil, nil)
	cli.SetReadTimeout(5 * time.Second)
	if _, err := cli.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	const live = 5
	for i := range live {
		v := video(uint32(40*(i+1)), 1000)
		v.Arrived = av.Monotonic()
		src.push(v)
		srv.MediaReady()
		if _, err := cli.ReadMessage(); err != nil {
			t.Fatal(err)
		}
	}
	var h dto.Metric
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := m.keepingUp.(prometheus.Metric).Write(&h); err != nil {
			t.Fatal(err)
		}
		if h.GetHistogram().GetSampleCount() >= live || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	hist := h.GetHistogram()
	if hist.GetSampleCount() != live {
		t.Fatalf("%d frames observed, want the %d live ones", hist.GetSampleCount(), live)
	}
	// Each live frame was read before the next was queued: none waited
	// anywhere near the burst frame's second.
	if sum := hist.GetSampleSum(); sum <= 0 || sum >= 0.5 {
		t.Fatalf("latency sum %.3f s", sum)
	}
}
