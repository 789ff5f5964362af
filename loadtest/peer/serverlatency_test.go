package peer

import (
	"math"
	"strings"
	"testing"
)

func TestServerLatencyQuantiles(t *testing.T) {
	before := histogram{0.001: 10, 0.01: 10, 0.03: 10, math.Inf(1): 10}
	// In the window: 50 frames ≤ 1 ms, 40 in (1, 10] ms, 10 in (10, 30] ms.
	after := histogram{0.001: 60, 0.01: 100, 0.03: 110, math.Inf(1): 110}
	st := serverLatency(before, after)
	if st.Frames != 100 {
		t.Fatalf("frames %d, want 100", st.Frames)
	}
	if math.Abs(st.P50-1) > 1e-9 {
		t.Errorf("p50 %.3f ms, want 1", st.P50)
	}
	// Rank 99 is the 9th of 10 in (10, 30]: 10 + 20 × 9/10 = 28 ms.
	if math.Abs(st.P99-28) > 1e-9 {
		t.Errorf("p99 %.3f ms, want 28", st.P99)
	}
	if st.Max != 30 {
		t.Errorf("max %.1f ms, want 30", st.Max)
	}
	if got := serverLatency(after, after); got.Frames != 0 {
		t.Errorf("an empty window gave %+v", got)
	}
}

func TestParseHistogramByLabel(t *testing.T) {
	page := `# HELP relaymesh_rtmp_write_latency_seconds x
relaymesh_rtmp_write_latency_seconds_bucket{viewer="behind",le="0.01"} 1
relaymesh_rtmp_write_latency_seconds_bucket{viewer="behind",le="+Inf"} 4
relaymesh_rtmp_write_latency_seconds_bucket{viewer="keeping_up",le="0.01"} 10
relaymesh_rtmp_write_latency_seconds_bucket{viewer="keeping_up",le="+Inf"} 10
relaymesh_rtmp_write_latency_seconds_sum{viewer="behind"} 3
`
	hs, err := parseHistogram(strings.NewReader(page), writeLatencyMetric, "viewer")
	if err != nil {
		t.Fatal(err)
	}
	if got := hs[""][math.Inf(1)]; got != 14 {
		t.Errorf("all: %v frames, want 14", got)
	}
	if got := hs["behind"][0.01]; got != 1 {
		t.Errorf("behind ≤ 10 ms: %v, want 1", got)
	}
	if got := hs["keeping_up"][math.Inf(1)]; got != 10 {
		t.Errorf("keeping up: %v, want 10", got)
	}
}
