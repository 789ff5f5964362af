package httpswarm

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/packager"
)

// The AVC decoder configuration (640x360 High) and AAC AudioSpecificConfig
// the packager's own tests use.
var (
	synthAVCSeq = []byte{0x17, 0x00, 0x00, 0x00, 0x00, 0x01, 0x64, 0x00, 0x1e, 0xff, 0xe1, 0x00, 0x1a, 0x67, 0x64, 0x00, 0x1e, 0xac, 0xd9, 0x40, 0xa0, 0x2f, 0xf9, 0x70, 0x11, 0x00, 0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x03, 0x00, 0x32, 0x0f, 0x16, 0x2d, 0x96, 0x01, 0x00, 0x06, 0x68, 0xeb, 0xe3, 0xcb, 0x22, 0xc0, 0xfd, 0xf8, 0xf8, 0x00}
	synthAACSeq = []byte{0xaf, 0x00, 0x12, 0x08, 0x56, 0xe5, 0x00}
)

// avcFrame is an FLV AVC NALU tag body: one NAL unit of n bytes with the
// given header byte (0x65 IDR slice, 0x41 reference P slice, 0x01 a
// non-reference slice).
func avcFrame(frameType, nalHdr byte, n int) []byte {
	b := []byte{frameType<<4 | av.CodecAVC, 1, 0, 0, 0}
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = append(b, nalHdr)
	return append(b, make([]byte, n-1)...)
}

// synthStream is an endless synthetic stream: 25 fps video in GOPs of gop
// (I P b P b …, the b frames disposable) with AAC interleaved, about kbps
// of video. It delivers burst of media at once on subscription, then runs
// in real time.
type synthStream struct {
	gop   time.Duration
	kbps  int
	burst time.Duration
}

func (s synthStream) frames(from, to time.Duration, emit func(*av.Frame)) {
	const frameMs = 40
	perGOP := int(s.gop / (frameMs * time.Millisecond))
	// Sizes: a keyframe is 10 interframes' worth, a b frame a third of one.
	unitBytes := s.kbps * 1000 / 8 * int(s.gop/time.Second) / (10 + perGOP)
	if unitBytes < 16 {
		unitBytes = 16
	}
	aStep := 1024 * 1000 / 44100.0
	for ms := from.Milliseconds() / frameMs * frameMs; ms < to.Milliseconds(); ms += frameMs {
		if ms < from.Milliseconds() {
			continue
		}
		// The audio frames whose time falls in [ms, ms+40).
		for n := math.Ceil(float64(ms) / aStep); n*aStep < float64(ms+frameMs); n++ {
			emit(av.New(av.KindAudio, uint32(n*aStep), append([]byte{0xaf, 1}, make([]byte, 200)...), 0))
		}
		i := int(ms/frameMs) % perGOP
		switch {
		case i == 0:
			emit(av.New(av.KindVideo, uint32(ms), avcFrame(1, 0x65, 10*unitBytes), 4))
		case i%2 == 1:
			emit(av.New(av.KindVideo, uint32(ms), avcFrame(2, 0x01, unitBytes/3+8), 4))
		default:
			emit(av.New(av.KindVideo, uint32(ms), avcFrame(2, 0x41, unitBytes), 4))
		}
	}
}

type synthSource struct {
	s synthStream
}

func (src synthSource) Subscribe(_ context.Context, app, name string) (packager.Subscription, error) {
	if (app != "live" && app != "stb") || name != "test" {
		return nil, fmt.Errorf("%s/%s: %w", app, name, packager.ErrNotFound)
	}
	return &synthSub{s: src.s, start: time.Now(), closed: make(chan struct{})}, nil
}

type synthSub struct {
	s       synthStream
	start   time.Time
	sent    time.Duration // media time delivered so far
	headers bool
	once    sync.Once
	closed  chan struct{}
}

func (s *synthSub) Next(ctx context.Context, dst []*av.Frame, _ int) ([]*av.Frame, error) {
	dst = dst[:0]
	if !s.headers {
		s.headers = true
		dst = append(dst, av.New(av.KindVideo, 0, synthAVCSeq, 4), av.New(av.KindAudio, 0, synthAACSeq, 0))
	}
	for {
		until := (time.Since(s.start) + s.s.burst) / (40 * time.Millisecond) * (40 * time.Millisecond)
		if until > s.sent {
			s.s.frames(s.sent, until, func(f *av.Frame) { dst = append(dst, f) })
			s.sent = until
			return dst, nil
		}
		if len(dst) > 0 {
			return dst, nil
		}
		select {
		case <-ctx.Done():
			return dst, ctx.Err()
		case <-s.closed:
			return dst, context.Canceled
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *synthSub) Close() { s.once.Do(func() { close(s.closed) }) }

// testServer is the project's packager over a synthetic stream on loopback;
// the stream is live/test (and stb/test, for an app configured otherwise).
func testServer(t *testing.T, cfg packager.Config, s synthStream) *httptest.Server {
	t.Helper()
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Registerer = prometheus.NewRegistry()
	p, err := packager.New(synthSource{s: s}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(func() {
		srv.Close()
		p.Close()
	})
	return srv
}
