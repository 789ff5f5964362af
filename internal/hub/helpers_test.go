package hub

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
)

// FLV tag bodies for synthetic streams.
var (
	// AVC sequence header of a 640x360 main-profile stream (SPS, PPS from an x264 encode).
	avcSeq = []byte{0x17, 0, 0, 0, 0, 1, 0x4d, 0x40, 0x1e, 0xff, 0xe1, 0, 24,
		0x67, 0x4d, 0x40, 0x1e, 0xec, 0xa0, 0x50, 0x17, 0xfc, 0xb8, 0x08, 0x80, 0x00, 0x00,
		0x03, 0x00, 0x80, 0x00, 0x00, 0x19, 0x07, 0x8b, 0x16, 0xcb,
		1, 0, 5, 0x68, 0xeb, 0xe3, 0xcb, 0x20}
	aacSeq  = []byte{0xaf, 0, 0x12, 0x10}
	aacRaw  = []byte{0xaf, 1, 0x21, 0x10, 0x04}
	metaMsg = amfMeta(640, 360)
)

// avc builds an AVC video tag body: frame type, AVCPacketType 1, CTS 0, one NAL unit.
func avc(frameType byte, nal ...byte) []byte {
	p := []byte{frameType<<4 | av.CodecAVC, 1, 0, 0, 0}
	n := len(nal)
	p = append(p, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	return append(p, nal...)
}

var (
	idr   = avc(1, 0x65, 0x88, 0x84, 0x00)
	pRef  = avc(2, 0x41, 0x9a, 0x02)
	bDisp = avc(2, 0x01, 0x9e, 0x04) // nal_ref_idc 0: disposable
)

// amfMeta builds onMetaData with an ECMA array holding width and height.
func amfMeta(w, h float64) []byte {
	p := []byte{2, 0, 10}
	p = append(p, "onMetaData"...)
	p = append(p, 8, 0, 0, 0, 2)
	p = appendNum(p, "width", w)
	p = appendNum(p, "height", h)
	return append(p, 0, 0, 9)
}

func appendNum(p []byte, key string, v float64) []byte {
	p = append(p, byte(len(key)>>8), byte(len(key)))
	p = append(p, key...)
	p = append(p, 0)
	var b [8]byte
	bits := math.Float64bits(v)
	for i := range b {
		b[i] = byte(bits >> (56 - 8*i))
	}
	return append(p, b[:]...)
}

// newTestRegistry returns a registry whose streams arrive in real time: its
// clock jumps far ahead at every frame, so no frame arrives early and the
// drop policy measures backlog by the frames' timestamps, whatever the pace
// of the test (see arrivalClock; burst tests set a clock of their own).
func newTestRegistry(cfg Config) *Registry {
	r := NewRegistry(cfg, nil)
	var now atomic.Int64
	r.now = func() int64 { return now.Add(1 << 16) } // 65 s: beyond maxBurst, within uint32 serial range for any queue
	return r
}

// drain reads every frame queued now (Next with a short deadline once empty).
func drain(t testing.TB, s *Subscriber) []*av.Frame {
	t.Helper()
	var out []*av.Frame
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		got, err := s.Next(ctx, nil, 0)
		cancel()
		if err != nil {
			return out
		}
		out = append(out, got...)
	}
}

// pending returns the frames queued now without waiting.
func pending(s *Subscriber) []*av.Frame {
	s.mu.Lock()
	n := s.q.n
	s.mu.Unlock()
	if n == 0 {
		return nil
	}
	got, _ := s.Next(context.Background(), nil, 0)
	return got
}
