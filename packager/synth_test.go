package packager

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// avcFrame builds an FLV AVC NALU tag body: one NAL unit of n bytes with the
// given header byte (0x65 IDR slice, 0x41 reference P slice, 0x01 a
// non-reference slice).
func avcFrame(frameType byte, nalHdr byte, cts int32, n int) []byte {
	b := []byte{frameType<<4 | av.CodecAVC, 1, byte(cts >> 16), byte(cts >> 8), byte(cts)}
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = append(b, nalHdr)
	for i := 1; i < n; i++ {
		b = append(b, byte(i))
	}
	return b
}

func keyframe(n int) []byte               { return avcFrame(1, 0x65, 0, n) }
func interframe(n int) []byte             { return avcFrame(2, 0x41, 0, n) }
func disposableFrame(n int) []byte        { return avcFrame(2, 0x01, 0, n) }
func aacFrame(n int) []byte               { return append([]byte{0xaf, 1}, make([]byte, n)...) }
func video(ts uint32, p []byte) *av.Frame { return av.New(av.KindVideo, ts, p, 4) }
func audio(ts uint32, p []byte) *av.Frame { return av.New(av.KindAudio, ts, p, 0) }

// synthGOPs returns n GOPs of 2 s at 25 fps (pattern I P b P b …) with AAC
// frames interleaved, starting with the sequence headers, from ms start.
func synthGOPs(start uint32, n int, withHeaders bool) []*av.Frame {
	var out []*av.Frame
	if withHeaders {
		out = append(out, video(start, testAVCSeq), audio(start, testAACSeq))
	}
	aNext := float64(start)
	for g := 0; g < n; g++ {
		for i := 0; i < 50; i++ {
			ts := start + uint32(g*2000+i*40)
			for aNext <= float64(ts) {
				out = append(out, audio(uint32(aNext), aacFrame(200)))
				aNext += 1024 * 1000 / 44100.0
			}
			switch {
			case i == 0:
				out = append(out, video(ts, keyframe(5000)))
			case i%2 == 1:
				out = append(out, video(ts, disposableFrame(500)))
			default:
				out = append(out, video(ts, interframe(1500)))
			}
		}
	}
	return out
}

// pushSource is a Source whose one stream is fed by the test.
type pushSource struct {
	mu   sync.Mutex
	cond *sync.Cond
	sub  *pushSub
	subs int
	gone bool // the stream is no more: Subscribe answers ErrNotFound
}

type pushSub struct {
	ch     chan *av.Frame
	closed chan struct{}
	once   sync.Once
}

func newPushSource() *pushSource {
	s := &pushSource{}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *pushSource) Subscribe(ctx context.Context, app, name string) (Subscription, error) {
	if app != "live" || name != "test" {
		return nil, fmt.Errorf("%s/%s: %w", app, name, ErrNotFound)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return nil, fmt.Errorf("%s/%s: %w", app, name, ErrNotFound)
	}
	s.sub = &pushSub{ch: make(chan *av.Frame, 100000), closed: make(chan struct{})}
	s.subs++
	s.cond.Broadcast()
	return s.sub, nil
}

// current waits (bounded) for a subscription and returns it.
func (s *pushSource) current(t testing.TB) *pushSub {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.sub == nil {
		if time.Now().After(deadline) {
			t.Fatal("the packager never subscribed")
		}
		s.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		s.mu.Lock()
	}
	return s.sub
}

func (s *pushSub) push(fr ...*av.Frame) {
	for _, f := range fr {
		s.ch <- f
	}
}

func (s *pushSub) Next(ctx context.Context, dst []*av.Frame, maxBytes int) ([]*av.Frame, error) {
	dst = dst[:0]
	select {
	case f := <-s.ch:
		dst = append(dst, f)
	case <-ctx.Done():
		return dst, ctx.Err()
	case <-s.closed:
		return dst, errSubClosed
	}
	for len(dst) < 256 {
		select {
		case f := <-s.ch:
			dst = append(dst, f)
		default:
			return dst, nil
		}
	}
	return dst, nil
}

func (s *pushSub) Close() { s.once.Do(func() { close(s.closed) }) }
