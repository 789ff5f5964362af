package peer

import (
	"math"
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
