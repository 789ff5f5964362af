package hub

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
)

// BenchmarkFanout measures Write with n viewers. One op is one frame written
// and queued for every viewer; readers drain every 32 frames with the timer
// stopped. allocs/op counts Write's own per-stream allocations (the payload
// copy and the Frame, av.New): they do not grow with the number of viewers.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("subs=%d", n), func(b *testing.B) {
			r := newTestRegistry(Config{})
			h := r.Acquire("live", "bench")
			defer h.Release()
			h.Begin(PublisherInfo{})
			h.Write(av.KindVideo, 0, avcSeq)
			h.Write(av.KindAudio, 0, aacSeq)
			subs := make([]*Subscriber, n)
			for i := range subs {
				subs[i] = h.Subscribe(SubscribeOptions{})
			}
			buf := make([]*av.Frame, 0, 256)
			drainAll := func() {
				for _, s := range subs {
					for s.q.n > 0 {
						buf, _ = s.Next(context.Background(), buf, 0)
					}
				}
			}
			drainAll()
			pattern := [][]byte{idr, aacRaw, pRef, aacRaw, bDisp, aacRaw, pRef, aacRaw, bDisp}
			kinds := []av.Kind{av.KindVideo, av.KindAudio, av.KindVideo, av.KindAudio, av.KindVideo, av.KindAudio, av.KindVideo, av.KindAudio, av.KindVideo}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := i % len(pattern)
				h.Write(kinds[k], uint32(i*5), pattern[k]) // 32 frames between drains: 155 ms, below every drop threshold
				if i%32 == 31 {
					b.StopTimer()
					drainAll()
					b.StartTimer()
				}
			}
			b.StopTimer()
			for _, s := range subs {
				if in := s.Info(); in.Dropped != 0 {
					b.Fatalf("dropped %d", in.Dropped)
				}
				s.Close()
			}
		})
	}
}

// BenchmarkFanoutDropping is BenchmarkFanout with readers that never read:
// the drop policy runs for every viewer on every frame.
func BenchmarkFanoutDropping(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("subs=%d", n), func(b *testing.B) {
			r := newTestRegistry(Config{SlowViewerTimeout: 1 << 62})
			h := r.Acquire("live", "bench")
			defer h.Release()
			h.Begin(PublisherInfo{})
			for i := 0; i < n; i++ {
				h.Subscribe(SubscribeOptions{})
			}
			pattern := [][]byte{idr, aacRaw, pRef, aacRaw, bDisp, aacRaw, pRef, aacRaw, bDisp}
			kinds := []av.Kind{av.KindVideo, av.KindAudio, av.KindVideo, av.KindAudio, av.KindVideo, av.KindAudio, av.KindVideo, av.KindAudio, av.KindVideo}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := i % len(pattern)
				h.Write(kinds[k], uint32(i*10), pattern[k])
			}
		})
	}
}

// BenchmarkNext measures a reader taking 16 frames per call, with the 16
// writes that queue them counted in (stopping the timer around the writes
// of every iteration cost far more than the call measured, and kept
// `go test -bench` running for minutes).
func BenchmarkNext(b *testing.B) {
	h, s, buf := liveReader(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < 16; j++ {
			h.Write(av.KindAudio, uint32(i*16+j), aacRaw)
		}
		buf, _ = s.Next(context.Background(), buf, 0)
	}
}

// BenchmarkFanoutReaders is BenchmarkFanout with a reader goroutine per
// viewer (as the RTMP writers run), so it includes waking idle readers.
// Readers that fall behind on two cores meet the drop policy.
func BenchmarkFanoutReaders(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("subs=%d", n), func(b *testing.B) {
			r := newTestRegistry(Config{SlowViewerTimeout: 1 << 62})
			h := r.Acquire("live", "bench")
			defer h.Release()
			h.Begin(PublisherInfo{})
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				s := h.Subscribe(SubscribeOptions{})
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer s.Close()
					buf := make([]*av.Frame, 0, 4096)
					for {
						var err error
						if buf, err = s.Next(ctx, buf, 64<<10); err != nil {
							return
						}
					}
				}()
			}
			pattern := [][]byte{idr, aacRaw, pRef, aacRaw, bDisp, aacRaw, pRef, aacRaw, bDisp}
			kinds := []av.Kind{av.KindVideo, av.KindAudio, av.KindVideo, av.KindAudio, av.KindVideo, av.KindAudio, av.KindVideo, av.KindAudio, av.KindVideo}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := i % len(pattern)
				h.Write(kinds[k], uint32(i*10), pattern[k])
			}
			b.StopTimer()
			cancel()
			wg.Wait()
		})
	}
}

// TestNextAllocatesNothing: a reader's call takes its frames without
// allocating (BenchmarkNext counts the writes' allocations in).
func TestNextAllocatesNothing(t *testing.T) {
	h, s, buf := liveReader(t)
	for j := 0; j < 64*16; j++ {
		h.Write(av.KindAudio, uint32(j), aacRaw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a bound, not a timing
	defer cancel()
	max := 16 * len(aacRaw) // 16 frames a call
	if n := testing.AllocsPerRun(50, func() { buf, _ = s.Next(ctx, buf, max) }); n != 0 {
		t.Errorf("Next: %v allocations per call", n)
	}
	if len(buf) != 16 {
		t.Errorf("Next took %d frames, want 16", len(buf))
	}
}

// liveReader returns a live hub with a lossless reader that has taken the
// first keyframe, and the reader's 16-frame buffer.
func liveReader(tb testing.TB) (*Hub, *Subscriber, []*av.Frame) {
	r := newTestRegistry(Config{})
	h := r.Acquire("live", "bench")
	tb.Cleanup(h.Release)
	h.Begin(PublisherInfo{})
	s := h.Subscribe(SubscribeOptions{Lossless: true})
	h.Write(av.KindVideo, 0, idr)
	buf := make([]*av.Frame, 0, 16)
	buf, _ = s.Next(context.Background(), buf, 0)
	return h, s, buf
}
