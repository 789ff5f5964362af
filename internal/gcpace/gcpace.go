// Package gcpace sets a server's garbage-collector target from the size of
// its live heap: a fixed headroom of garbage above the live heap rather than
// a fixed percentage of it.
//
// A relay allocates per stream (a frame's payload, once), not per viewer,
// so the collector's CPU — cycles per second × the live heap marked each
// cycle — is the allocation rate divided by the GC percent, whatever the
// audience; while the memory the percentage lets the heap grow by is a share
// of the live heap, which is mostly per-viewer state. With few viewers the
// percentage is kept at MaxPercent (the heap is small, and the collector's
// CPU is a fixed cost shared by few); with many it falls, down to
// MinPercent, so that the heap stays within Headroom of its live size.
package gcpace

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

const (
	// MaxPercent is the GC percent of a small heap (and the most).
	MaxPercent = 25
	// MinPercent is the least: at 10 the collector costs 2.5 times its
	// CPU at MaxPercent.
	MinPercent = 10
	// Headroom is the garbage allowed above the live heap (while the
	// percentage stays within its bounds).
	Headroom = 3 << 19 // 1.5 MiB
	// Every is how often the live heap is looked at.
	Every = 5 * time.Second
)

// Percent is the GC percent for a live heap of live bytes.
func Percent(live uint64) int {
	if live == 0 {
		return MaxPercent
	}
	p := uint64(Headroom) * 100 / live
	return int(min(max(p, MinPercent), MaxPercent))
}

// Run sets the GC percent from the live heap now and every Every until ctx
// ends.
func Run(ctx context.Context) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	last := -1
	apply := func() {
		metrics.Read(sample)
		var live uint64
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live = sample[0].Value.Uint64()
		}
		if p := Percent(live); p != last {
			debug.SetGCPercent(p)
			last = p
		}
	}
	apply()
	t := time.NewTicker(Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			apply()
		}
	}
}
