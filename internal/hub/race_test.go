package hub

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
)

// TestRaceChurn runs one writer, a set of steady subscribers and goroutines
// that subscribe and unsubscribe in a loop, plus Info and metrics readers.
// Run with -race. Every steady subscriber must see monotonic timestamps and a
// keyframe first after the sequence header.
func TestRaceChurn(t *testing.T) {
	r := newTestRegistry(Config{ViewerQueueFrames: 64, LosslessQueueFrames: 100000, SlowViewerTimeout: time.Hour})
	h := r.Acquire("live", "race")
	defer h.Release()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	const frames = 3000
	var wg sync.WaitGroup
	h.Begin(PublisherInfo{})
	for i := 0; i < 8; i++ {
		lossless := i%2 == 0
		s := h.Subscribe(SubscribeOptions{Lossless: lossless})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.Close()
			var buf []*av.Frame
			var last uint32
			sawVideo := false
			for {
				var err error
				buf, err = s.Next(ctx, buf, 4096)
				if err != nil {
					// A viewer may legitimately be too slow for a writer
					// running flat out.
					if !errors.Is(err, context.Canceled) && (lossless || !errors.Is(err, ErrTooSlow)) {
						t.Errorf("Next: %v", err)
					}
					return
				}
				for _, f := range buf {
					if int32(f.Timestamp-last) < 0 && f.Kind != av.KindData {
						t.Errorf("timestamp went back: %d after %d", f.Timestamp, last)
						return
					}
					last = max(last, f.Timestamp)
					if f.Kind == av.KindVideo && !f.SeqHeader && !sawVideo {
						if !f.Keyframe {
							t.Errorf("first video frame %v is not a keyframe", f)
						}
						sawVideo = true
					}
				}
			}
		}()
	}
	var churn sync.WaitGroup
	for i := 0; i < 4; i++ {
		churn.Add(1)
		go func() {
			defer churn.Done()
			var buf []*av.Frame
			for n := 0; ctx.Err() == nil && n < 2000; n++ {
				s := h.Subscribe(SubscribeOptions{Lossless: n%3 == 0})
				c, stop := context.WithCancel(ctx)
				stop() // take what is queued without waiting
				buf, _ = s.Next(c, buf, 0)
				s.Close()
				h.Info()
			}
		}()
	}
	churn.Add(1)
	go func() {
		defer churn.Done()
		for ctx.Err() == nil {
			r.List()
			collect(t, r)
		}
	}()
	in := synthStream(frames/69+1, 25)
	for i, w := range in {
		if i == len(in)/2 { // a second session halfway
			h.End()
			h.Begin(PublisherInfo{})
		}
		h.Write(w.kind, w.ts, w.payload)
	}
	h.End()
	cancel()
	wg.Wait()
	churn.Wait()
	if n := h.SubscriberCount(); n != 0 {
		t.Fatalf("%d subscribers left", n)
	}
}
