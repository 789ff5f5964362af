package packager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/packager/internal/flvfile"
)

// fakeSource serves streams replayed from frame lists.
type fakeSource struct {
	mu      sync.Mutex
	streams map[string]*clip
	subs    int
}

// clip is a recorded stream, replayed in a loop with increasing timestamps.
type clip struct {
	frames []*av.Frame
	// burst is how much media time is delivered at once on subscription
	// (the hub's GOP cache and a publisher ahead of real time); the rest
	// follows in real time times speed.
	burst time.Duration
	speed float64
	// loops bounds the replays (0: forever); after the last one the
	// subscription sends EventUnpublish and then blocks.
	loops int
	// base is added to every timestamp delivered: a stream that has been
	// going for that long.
	base time.Duration
}

func (s *fakeSource) add(app, name string, c *clip) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams == nil {
		s.streams = make(map[string]*clip)
	}
	s.streams[app+"/"+name] = c
}

func (s *fakeSource) Subscribe(ctx context.Context, app, name string) (Subscription, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.streams[app+"/"+name]
	if !ok {
		return nil, fmt.Errorf("%s/%s: %w", app, name, ErrNotFound)
	}
	s.subs++
	return &fakeSub{c: c, start: time.Now(), closed: make(chan struct{})}, nil
}

// fakeSub replays a clip.
type fakeSub struct {
	c      *clip
	start  time.Time
	i      int
	loop   int
	offset uint32
	ended  bool
	once   sync.Once
	closed chan struct{}
}

var errSubClosed = errors.New("subscription closed")

func (s *fakeSub) Next(ctx context.Context, dst []*av.Frame, maxBytes int) ([]*av.Frame, error) {
	dst = dst[:0]
	bytes := 0
	for {
		if s.ended {
			select {
			case <-ctx.Done():
				return dst, ctx.Err()
			case <-s.closed:
				return dst, errSubClosed
			}
		}
		if s.i == len(s.c.frames) {
			s.loop++
			if s.c.loops > 0 && s.loop >= s.c.loops {
				s.ended = true
				return append(dst, av.NewEvent(av.EventUnpublish, s.offset)), nil
			}
			last := s.c.frames[len(s.c.frames)-1].Timestamp
			s.offset += last + 40
			s.i = 0
		}
		f := s.c.frames[s.i]
		if s.loop > 0 && (f.SeqHeader || f.Kind == av.KindData) {
			s.i++
			continue
		}
		ts := f.Timestamp + s.offset
		due := s.start.Add(time.Duration(float64(time.Duration(ts)*time.Millisecond-s.c.burst) / s.c.speed))
		if wait := time.Until(due); wait > 0 {
			if len(dst) > 0 {
				return dst, nil
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return dst, ctx.Err()
			case <-s.closed:
				t.Stop()
				return dst, errSubClosed
			}
		}
		g := *f
		g.Timestamp = ts + uint32(s.c.base.Milliseconds())
		dst = append(dst, &g)
		s.i++
		bytes += len(f.Payload)
		if bytes >= maxBytes {
			return dst, nil
		}
	}
}

func (s *fakeSub) Close() { s.once.Do(func() { close(s.closed) }) }

// mediaDir holds the FLV files made once per test binary.
var (
	mediaOnce sync.Map // name → *mediaFile
)

type mediaFile struct {
	once   sync.Once
	frames []*av.Frame
	err    error
}

// needFFmpeg skips the test when ffmpeg/ffprobe are missing (fails on CI).
func needFFmpeg(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required on CI: %v", tool, err)
			}
			t.Skipf("%s not installed: skipping the end-to-end test", tool)
		}
	}
}

// encode returns the frames of an FLV made by ffmpeg from a test pattern
// and a sine tone, 640x360 at 25 fps, GOP 50. Extra x264 arguments (like
// "-bf", "0") change the encoding; each variant is encoded once.
func encode(t testing.TB, seconds int, x264 ...string) []*av.Frame {
	t.Helper()
	return encodeSize(t, "640x360", seconds, x264...)
}

// encodeSize is encode with another picture size.
func encodeSize(t testing.TB, size string, seconds int, x264 ...string) []*av.Frame {
	t.Helper()
	needFFmpeg(t)
	key := fmt.Sprint(size, seconds, x264)
	v, _ := mediaOnce.LoadOrStore(key, &mediaFile{})
	mf := v.(*mediaFile)
	mf.once.Do(func() {
		dir, err := os.MkdirTemp("", "packager-test")
		if err != nil {
			mf.err = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "out.flv")
		args := []string{"-hide_banner", "-loglevel", "error", "-y",
			"-f", "lavfi", "-i", "testsrc2=size=" + size + ":rate=25",
			"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
			"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "50"}
		args = append(args, x264...)
		args = append(args, "-c:a", "aac", "-t", fmt.Sprint(seconds), "-f", "flv", out)
		if b, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
			mf.err = fmt.Errorf("ffmpeg: %v: %s", err, b)
			return
		}
		fh, err := os.Open(out)
		if err != nil {
			mf.err = err
			return
		}
		defer fh.Close()
		mf.frames, mf.err = flvfile.ReadAll(fh, 100000)
	})
	if mf.err != nil {
		t.Fatal(mf.err)
	}
	return mf.frames
}
