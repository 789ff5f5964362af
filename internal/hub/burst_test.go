package hub

import (
	"errors"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
)

// burstStream plays the first viewer of a relay: it subscribes before the
// pull starts, then the upstream sends the metadata and sequence headers of
// the session's start (timestamp 0) and its GOP cache at once (every frame
// before joinAt arrives at wall time 0), then the live stream in real time.
// The reader stalls from frame stallFrom on (-1: never) and otherwise reads
// whatever is queued every 100 ms of wall time, but never during the burst
// (the writer is not scheduled before the whole burst is queued).
func burstStream(t *testing.T, r *Registry, clock *int64, gop int, joinAt uint32, stallFrom int) (*Subscriber, []written, int) {
	t.Helper()
	in := synthStream(30, gop) // 25 fps: 50 frames are 2 s
	h := r.Acquire("live", t.Name())
	t.Cleanup(h.Release)
	s := h.Subscribe(SubscribeOptions{ID: "first-viewer"})
	t.Cleanup(s.Close)
	h.Begin(PublisherInfo{ID: "upstream"})
	// The parent's GOP cache starts at its latest keyframe before joinAt.
	start := 0
	for i, w := range in {
		if w.ts > joinAt {
			break
		}
		if w.kind == av.KindVideo && string(w.payload) == string(idr) {
			start = i
		}
	}
	in = append(append([]written{}, in[:3]...), in[start:]...) // metadata, headers, GOP
	got := 0
	lastRead := int64(0)
	for i, w := range in {
		*clock = max(int64(w.ts)-int64(joinAt), 0)
		h.Write(w.kind, w.ts, w.payload)
		if stallFrom >= 0 && i >= stallFrom {
			continue
		}
		if w.ts > joinAt && *clock-lastRead >= 100 {
			got += len(pending(s))
			lastRead = *clock
		}
	}
	if stallFrom < 0 {
		got += len(pending(s))
	}
	return s, in, got
}

func manualClock(cfg Config) (*Registry, *int64) {
	r := NewRegistry(cfg, nil)
	clock := new(int64)
	r.now = func() int64 { return *clock }
	return r, clock
}

// TestUpstreamBurstIsNotBacklog: the first viewer of a relay receives every
// frame of the upstream's start-up burst (issue 12: it got the keyframe and
// a few frames, then jumped to the next keyframe).
func TestUpstreamBurstIsNotBacklog(t *testing.T) {
	for _, joinAt := range []uint32{20300, 21000, 21960} {
		r, clock := manualClock(Config{})
		s, in, got := burstStream(t, r, clock, 50, joinAt, -1)
		if in := s.Info(); in.Dropped != 0 {
			t.Errorf("joined %d ms into the GOP: %d frames dropped %+v", joinAt, in.Dropped, in.DroppedByClass)
		}
		if got != len(in)+1 { // + the publish event
			t.Errorf("joined %d ms into the GOP: %d frames received, %d written", joinAt, got-1, len(in))
		}

		// Measured by the frames' own timestamps (as before), the same burst
		// is a backlog: the test reproduces the loss.
		old := newTestRegistry(Config{})
		var unused int64
		s, _, _ = burstStream(t, old, &unused, 50, joinAt, -1)
		if joinAt >= 21000 && s.Info().DroppedByClass.Inter == 0 {
			t.Errorf("joined %d ms into the GOP: the burst measured by timestamps dropped nothing", joinAt)
		}
	}
}

// A long GOP (8 s: 200 video frames and 350 of audio in the burst) is more
// than a quarter of ViewerQueueFrames (1024): frames that arrive together
// do not count by number either.
func TestLongGOPBurstIsNotBacklog(t *testing.T) {
	r, clock := manualClock(Config{})
	s, in, got := burstStream(t, r, clock, 200, 23900, -1)
	if info := s.Info(); info.Dropped != 0 || got != len(in)+1 {
		t.Fatalf("%d frames dropped %+v, %d of %d received", info.Dropped, info.DroppedByClass, got-1, len(in))
	}
	// The frame bound still holds for a reader that stops: 64 frames of
	// media waiting (here: all arrived at once, then waited) are too many.
	r, clock = manualClock(Config{ViewerQueue: time.Hour, ViewerQueueFrames: 64, SlowViewerTimeout: time.Hour})
	s, _, _ = burstStream(t, r, clock, 200, 23900, 0)
	if d := s.Info().DroppedByClass; d.Disposable == 0 || d.Inter == 0 {
		t.Fatalf("a reader that never reads lost only %+v", d)
	}
}

// A viewer that stops reading after the burst is still protected: its
// backlog counts from when it stopped, by the time frames wait.
func TestSlowViewerAfterBurst(t *testing.T) {
	cfg := Config{ViewerQueue: time.Second, SlowViewerTimeout: time.Hour}
	r, clock := manualClock(cfg)
	// The burst (about 150 frames) is read, then the reader stops 1 s later.
	s, _, _ := burstStream(t, r, clock, 50, 21960, 220)
	d := s.Info().DroppedByClass
	if d.Disposable == 0 || d.Inter == 0 || d.Key == 0 {
		t.Fatalf("a viewer stalled for ~5 s lost only %+v", d)
	}
	if s.Err() != nil {
		t.Fatalf("closed: %v", s.Err())
	}

	// One that never reads at all is closed after SlowViewerTimeout.
	cfg.SlowViewerTimeout = 3 * time.Second
	r, clock = manualClock(cfg)
	s, _, _ = burstStream(t, r, clock, 50, 21960, 0)
	if !errors.Is(s.Err(), ErrTooSlow) {
		t.Fatalf("a viewer that never reads: Err = %v, want ErrTooSlow", s.Err())
	}
}

// The arrival clock follows the wall clock between the stream's pace and
// maxBurst behind it.
func TestArrivalClock(t *testing.T) {
	var c arrivalClock
	steps := []struct {
		edge uint32
		now  int64
		want uint32
	}{
		{1000, 0, 1000},      // first frame
		{3000, 0, 1000},      // a burst: 2 s of media at once
		{3040, 40, 1040},     // live: the clock runs with the wall
		{3080, 2000, 3000},   // a late frame uses up most of the lead
		{3120, 3000, 3120},   // a slow publisher sets the pace
		{30000, 4000, 20000}, // never more than maxBurst behind
		{30040, 99000, 30040},
	}
	for i, st := range steps {
		if got := c.arrive(st.edge, st.now); got != st.want {
			t.Fatalf("step %d: arrive(%d, %d) = %d, want %d", i, st.edge, st.now, got, st.want)
		}
	}
}
