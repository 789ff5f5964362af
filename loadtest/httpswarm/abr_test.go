package httpswarm

import (
	"testing"
	"time"
)

func TestEstimator(t *testing.T) {
	e := newEstimator()
	if e.bps() != 0 {
		t.Fatal("an estimate without samples")
	}
	e.add(1000, time.Millisecond) // too small to count
	if e.bps() != 0 {
		t.Fatal("a tiny download counted")
	}
	for range 20 {
		e.add(100_000, 100*time.Millisecond) // 8 Mbit/s
	}
	if b := e.bps(); b < 7.9e6 || b > 8.1e6 {
		t.Fatalf("estimate %.0f, want 8 Mbit/s", b)
	}
	e.add(100_000, time.Second) // one slow download: the fast average drops first
	if b := e.bps(); b >= 8e6 {
		t.Fatalf("estimate %.0f after a slow download", b)
	}
}

func TestABRHysteresis(t *testing.T) {
	bws := []int{400_000, 1_200_000, 1_500_000}
	now := time.Unix(1000, 0)
	a := abr{up: 0.7, down: 0.9, hold: 4 * time.Second}
	// 1.8 Mbit/s: full (1.5) does not fit in 0.7 × 1.8 = 1.26; lite does.
	if got := a.choose(0, bws, 1.8e6, false, now); got != 1 {
		t.Fatalf("up to %d, want lite", got)
	}
	// Within the hold, no move up even with plenty.
	if got := a.choose(1, bws, 10e6, false, now.Add(time.Second)); got != 1 {
		t.Fatalf("moved up to %d within the hold", got)
	}
	if got := a.choose(1, bws, 10e6, false, now.Add(5*time.Second)); got != 2 {
		t.Fatalf("%d after the hold, want full", got)
	}
	now = now.Add(5 * time.Second)
	// Between the thresholds (1.5 ≤ 0.9 × 1.7 but 1.5 > 0.7 × 1.7): stay.
	if got := a.choose(2, bws, 1.7e6, false, now.Add(10*time.Second)); got != 2 {
		t.Fatalf("moved to %d inside the hysteresis band", got)
	}
	// Below: down at once (no hold), to the highest rung that fits in 0.7 × 1.0.
	if got := a.choose(2, bws, 1.0e6, false, now.Add(10*time.Second+time.Millisecond)); got != 0 {
		t.Fatalf("down to %d, want key", got)
	}
	// A stall moves down a rung that is not safely below the estimate.
	b := abr{up: 0.7, down: 0.9, hold: 4 * time.Second}
	if got := b.choose(2, bws, 2.0e6, true, now); got != 1 {
		t.Fatalf("stalled at 2 Mbit/s on full: %d, want lite", got)
	}
}
