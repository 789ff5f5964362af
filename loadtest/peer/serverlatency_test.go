package peer

import (
	"fmt"
	"math"
	"strconv"
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

// Any page parses without a panic; a page written from counts reads back
// as those counts, by label value and summed.
func FuzzParseHistogram(f *testing.F) {
	f.Add(`relaymesh_rtmp_write_latency_seconds_bucket{le="NaN"} x`, uint32(1), uint32(2), 0.01)
	f.Add(`relaymesh_rtmp_write_latency_seconds_bucket{`, uint32(0), uint32(7), 1.0)
	f.Add("", uint32(3), uint32(0), math.Inf(1))
	f.Fuzz(func(t *testing.T, page string, behind, up uint32, le float64) {
		_, _ = parseHistogram(strings.NewReader(page), writeLatencyMetric, "viewer")
		if math.IsNaN(le) {
			return
		}
		bound := strconv.FormatFloat(le, 'g', -1, 64)
		if math.IsInf(le, 1) {
			bound = "+Inf"
		}
		text := fmt.Sprintf("%s_bucket{viewer=\"behind\",le=\"%s\"} %d\n%s_bucket{viewer=\"keeping_up\",le=\"%s\"} %d\n",
			writeLatencyMetric, bound, behind, writeLatencyMetric, bound, up)
		hs, err := parseHistogram(strings.NewReader(text), writeLatencyMetric, "viewer")
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if hs["behind"][le] != float64(behind) || hs["keeping_up"][le] != float64(up) || hs[""][le] != float64(behind)+float64(up) {
			t.Fatalf("%q read back as %v", text, hs)
		}
	})
}
