package packager

import (
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
)

// TestHoldKeepsStreams: a held stream is packaged without a request, the
// linger leaves it alone, it starts again after its source ended and came
// back, and once released it lingers out as usual; EndAll ends it for good.
func TestHoldKeepsStreams(t *testing.T) {
	p, src, srv := testServer(t, Config{Linger: 50 * time.Millisecond, EndedLinger: 200 * time.Millisecond})
	p.Hold("live", "test")
	p.Hold("live", "test") // twice: one hold
	sub := src.current(t)
	sub.push(synthGOPs(0, 2, true)...)
	waitUntil(t, "the held stream to have segments", func() bool {
		r, _ := get(t, srv.Client(), srv.URL+"/hls/live/test/full.m3u8")
		return r.StatusCode == 200
	})
	time.Sleep(300 * time.Millisecond) // several lingers without a request
	if len(p.Streams()) != 1 {
		t.Fatal("the linger stopped a held stream")
	}

	// The source ends: the playlists say so, then the hold packages the
	// stream again.
	sub.push(av.NewEvent(av.EventUnpublish, 4000))
	waitUntil(t, "a second subscription", func() bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return src.subs == 2
	})

	p.Release("live", "test")
	waitUntil(t, "the released stream to linger out", func() bool { return len(p.Streams()) == 0 })

	// EndAll releases the holds: nothing starts again.
	p.Hold("live", "test")
	waitUntil(t, "a third subscription", func() bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return src.subs == 3
	})
	src.current(t).push(synthGOPs(0, 1, true)...)
	p.EndAll()
	time.Sleep(200*time.Millisecond + 2*holdRetryMin)
	src.mu.Lock()
	subs := src.subs
	src.mu.Unlock()
	if subs != 3 || len(p.Streams()) != 0 {
		t.Fatalf("after EndAll: %d subscriptions, %d streams", subs, len(p.Streams()))
	}

	// A name the packager does not serve is not held.
	p.Hold("live", "../x")
	p.mu.Lock()
	held := p.held["live/../x"] != nil
	p.mu.Unlock()
	if held {
		t.Fatal("held an invalid name")
	}
}
