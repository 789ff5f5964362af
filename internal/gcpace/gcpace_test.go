package gcpace

import (
	"context"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, MaxPercent},
		{4 << 20, MaxPercent},   // a hundred viewers: the headroom is more than 25 %
		{6 << 20, MaxPercent},   // 1.5 MiB is exactly 25 %
		{12 << 20, 12},          // a thousand viewers
		{100 << 20, MinPercent}, // never below
		{1 << 40, MinPercent},
	} {
		if got := Percent(c.live); got != c.want {
			t.Errorf("Percent(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}

func TestRunSetsAndStops(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Run(ctx); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		if p >= MinPercent && p <= MaxPercent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GC percent %d, want within [%d, %d]", p, MinPercent, MaxPercent)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
}
