package hub

import (
	"errors"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
)

// stalledViewer returns a live hub and a viewer whose queue is empty.
func stalledViewer(t *testing.T, cfg Config) (*Hub, *Subscriber) {
	t.Helper()
	r := newTestRegistry(cfg)
	h := r.Acquire("live", t.Name())
	t.Cleanup(h.Release)
	h.Begin(PublisherInfo{})
	s := h.Subscribe(SubscribeOptions{ID: "viewer"})
	t.Cleanup(s.Close)
	pending(s)
	return h, s
}

func TestDropLevels(t *testing.T) {
	h, s := stalledViewer(t, Config{ViewerQueue: time.Second, ViewerQueueFrames: 1000})
	steps := []struct {
		kind    av.Kind
		ts      uint32
		payload []byte
		queued  bool
	}{
		{av.KindVideo, 0, idr, true},
		{av.KindAudio, 100, aacRaw, true},
		{av.KindVideo, 250, bDisp, false}, // ≥ 1/4: disposable dropped
		{av.KindVideo, 260, pRef, true},   // reference frames still queued
		{av.KindAudio, 300, aacRaw, true},
		{av.KindVideo, 500, pRef, false},  // ≥ 1/2: non-key dropped, wait for a keyframe
		{av.KindVideo, 501, avcSeq, true}, // sequence headers never dropped
		{av.KindData, 502, metaMsg, true}, // data never dropped
		{av.KindVideo, 510, bDisp, false}, // waiting for a keyframe
		{av.KindVideo, 520, idr, true},    // keyframe below 3/4: resync
		{av.KindVideo, 560, bDisp, false}, // still ≥ 1/2
		{av.KindAudio, 600, aacRaw, true}, // audio flows below full
		// ≥ 3/4: every queued picture is stale and is purged (the keyframes at
		// 0 and 520 and the P frame at 260); the backlog is then measured
		// from the oldest audio, and this keyframe resyncs the viewer.
		{av.KindVideo, 760, idr, true},
		{av.KindAudio, 800, aacRaw, true},
		{av.KindAudio, 1000, aacRaw, true},  // 3/4 < backlog < full: audio still flows
		{av.KindVideo, 1001, pRef, false},   // ≥ 3/4 again: purge (the keyframe at 760), wait for a keyframe
		{av.KindAudio, 1400, aacRaw, false}, // full: audio dropped
	}
	purgeAt := map[uint32]bool{760: true, 1001: true}
	type queued struct {
		ts    uint32
		video bool
	}
	var want []queued
	for i, st := range steps {
		h.Write(st.kind, st.ts, st.payload)
		if purgeAt[st.ts] {
			kept := want[:0]
			for _, w := range want {
				if !w.video {
					kept = append(kept, w)
				}
			}
			want = kept
		}
		if st.queued {
			want = append(want, queued{st.ts, st.kind == av.KindVideo && st.payload[1] != 0})
		}
		s.mu.Lock()
		n := s.q.n
		s.mu.Unlock()
		if n != len(want) {
			t.Fatalf("step %d (%v ts=%d): queue holds %d, want %d", i, st.kind, st.ts, n, len(want))
		}
	}
	got := pending(s)
	for i, f := range got {
		if f.Timestamp != want[i].ts {
			t.Fatalf("frame %d: ts %d, want %d", i, f.Timestamp, want[i].ts)
		}
	}
	in := s.Info()
	if want := (DropCounts{Disposable: 3, Inter: 3, Key: 3, Audio: 1}); in.DroppedByClass != want {
		t.Fatalf("drops %+v, want %+v", in.DroppedByClass, want)
	}
	if in.Sent != uint64(len(got)) || !in.WaitingForKey {
		t.Fatalf("info %+v", in)
	}
	// Drained: the next keyframe resyncs the viewer, then everything flows.
	h.Write(av.KindVideo, 1500, pRef)
	h.Write(av.KindVideo, 1540, idr)
	h.Write(av.KindVideo, 1580, bDisp)
	if k := kinds(pending(s)); k != "Ib" {
		t.Fatalf("after drain: %q", k)
	}
}

func TestDropByFrameCount(t *testing.T) {
	h, s := stalledViewer(t, Config{ViewerQueue: time.Hour, ViewerQueueFrames: 8})
	h.Write(av.KindVideo, 0, idr)
	h.Write(av.KindVideo, 0, pRef) // 2/8 = 1/4 after this one
	h.Write(av.KindVideo, 0, bDisp)
	h.Write(av.KindVideo, 0, pRef) // 3/8 after this one
	h.Write(av.KindVideo, 0, pRef) // 4/8 after this one
	h.Write(av.KindVideo, 0, pRef) // ≥ 1/2: dropped
	h.Write(av.KindAudio, 0, aacRaw)
	if k := kinds(pending(s)); k != "Ipppa" {
		t.Fatalf("got %q", k)
	}
}

func TestSlowViewerClosed(t *testing.T) {
	h, s := stalledViewer(t, Config{ViewerQueue: time.Hour, ViewerQueueFrames: 8, SlowViewerTimeout: 500 * time.Millisecond})
	for i := 0; i < 8; i++ {
		h.Write(av.KindAudio, uint32(i), aacRaw)
	}
	h.Write(av.KindAudio, 100, aacRaw) // full: dropping starts
	h.Write(av.KindVideo, 300, idr)
	h.Write(av.KindAudio, 599, aacRaw)
	if s.Err() != nil {
		t.Fatalf("closed early: %v", s.Err())
	}
	h.Write(av.KindAudio, 600, aacRaw)
	if !errors.Is(s.Err(), ErrTooSlow) {
		t.Fatalf("Err = %v", s.Err())
	}
	if _, err := s.Next(t.Context(), nil, 0); !errors.Is(err, ErrTooSlow) {
		t.Fatalf("Next: %v", err)
	}
	if h.SubscriberCount() != 0 {
		t.Fatal("still listed")
	}
}

func TestStarvingRunResets(t *testing.T) {
	h, s := stalledViewer(t, Config{ViewerQueue: time.Hour, ViewerQueueFrames: 8, SlowViewerTimeout: 500 * time.Millisecond})
	for i := 0; i < 8; i++ {
		h.Write(av.KindAudio, uint32(i), aacRaw)
	}
	h.Write(av.KindAudio, 100, aacRaw) // dropping starts
	pending(s)                         // the reader catches up once
	h.Write(av.KindAudio, 200, aacRaw) // queued: the run ends
	for i := 0; i < 7; i++ {
		h.Write(av.KindAudio, 300, aacRaw)
	}
	h.Write(av.KindAudio, 400, aacRaw) // a new run starts here
	h.Write(av.KindAudio, 800, aacRaw)
	if s.Err() != nil {
		t.Fatalf("closed: %v", s.Err())
	}
}

func TestNeverDroppedFramesOverflow(t *testing.T) {
	h, s := stalledViewer(t, Config{ViewerQueue: time.Hour, ViewerQueueFrames: 8, SlowViewerTimeout: time.Hour})
	for i := 0; i < 8; i++ {
		h.Write(av.KindAudio, uint32(i), aacRaw)
	}
	for i := 0; i < ringSlack; i++ { // the slack above the limit takes them
		h.Write(av.KindData, 10, metaMsg)
	}
	if s.Err() != nil {
		t.Fatalf("closed early: %v", s.Err())
	}
	h.Write(av.KindData, 10, metaMsg)
	if !errors.Is(s.Err(), ErrTooSlow) {
		t.Fatalf("Err = %v", s.Err())
	}
}

// stream generates a synthetic publisher: 25 fps video in GOPs of gop
// frames (I b P b P …, every b disposable), AAC every 23 ms, an onCuePoint
// data message every 2 s and the sequence headers repeated every 5 s.
type written struct {
	kind    av.Kind
	ts      uint32
	payload []byte
}

func synthStream(seconds, gop int) []written {
	var out []written
	out = append(out, written{av.KindData, 0, metaMsg}, written{av.KindVideo, 0, avcSeq}, written{av.KindAudio, 0, aacSeq})
	cue := append([]byte{2, 0, 10}, "onCuePoint"...)
	var v, a, d, sh uint32 = 0, 3, 2000, 5000
	end := uint32(seconds * 1000)
	for i := 0; v < end || a < end; {
		switch {
		case d <= v && d <= a:
			out = append(out, written{av.KindData, d, cue})
			d += 2000
		case sh <= v && sh <= a:
			out = append(out, written{av.KindVideo, sh, avcSeq}, written{av.KindAudio, sh, aacSeq})
			sh += 5000
		case v <= a:
			p := pRef
			switch {
			case i%gop == 0:
				p = idr
			case i%2 == 1:
				p = bDisp
			}
			out = append(out, written{av.KindVideo, v, p})
			v += 40
			i++
		default:
			out = append(out, written{av.KindAudio, a, aacRaw})
			a += 23
		}
	}
	return out
}

func TestDropPolicyStalledReader(t *testing.T) {
	cases := []struct {
		name          string
		cfg           Config
		gop           int
		stallFrom     int // index into the written frames
		stallTo       int
		wantDropped   []string // classes that must see drops
		wantNoDropped []string // classes that must not
		closed        error
	}{
		{"short stall: disposable only", Config{ViewerQueue: 2 * time.Second}, 50, 100, 165,
			[]string{"disposable"}, []string{"inter", "key", "audio"}, nil},
		{"medium stall: inter", Config{ViewerQueue: 2 * time.Second}, 50, 100, 220,
			[]string{"disposable", "inter"}, []string{"audio"}, nil},
		{"long stall: keys", Config{ViewerQueue: 2 * time.Second}, 25, 100, 230,
			[]string{"disposable", "inter", "key"}, []string{"audio"}, nil},
		{"very long stall: audio", Config{ViewerQueue: 2 * time.Second, SlowViewerTimeout: time.Hour}, 25, 100, 800,
			[]string{"disposable", "inter", "key", "audio"}, nil, nil},
		{"frame bound", Config{ViewerQueue: time.Hour, ViewerQueueFrames: 64, SlowViewerTimeout: time.Hour}, 25, 50, 600,
			[]string{"disposable", "inter", "key", "audio"}, nil, nil},
		{"too slow", Config{ViewerQueue: time.Second, SlowViewerTimeout: 3 * time.Second}, 25, 100, 100000,
			nil, nil, ErrTooSlow},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := synthStream(30, c.gop)
			r := newTestRegistry(c.cfg)
			h := r.Acquire("live", "s")
			defer h.Release()
			s := h.Subscribe(SubscribeOptions{})
			defer s.Close()
			h.Begin(PublisherInfo{})
			var got []*av.Frame
			var err error
			for i, w := range in {
				h.Write(w.kind, w.ts, w.payload)
				if i < c.stallFrom || i >= c.stallTo {
					got = append(got, pending(s)...)
				}
			}
			got = append(got, pending(s)...)
			err = s.Err()
			if !errors.Is(err, c.closed) {
				t.Fatalf("Err = %v, want %v", err, c.closed)
			}
			if err != nil {
				return
			}
			if len(got) == 0 || got[0].Kind != av.KindEvent {
				t.Fatalf("stream does not start with the publish event")
			}
			got = got[1:]
			drops := checkSubsequence(t, in, got)
			info := s.Info()
			if info.DroppedByClass != drops {
				t.Fatalf("counters %+v, computed %+v", info.DroppedByClass, drops)
			}
			if info.Sent != uint64(len(got)+1) || info.Sent+info.Dropped != uint64(len(in)+1) {
				t.Fatalf("sent %d dropped %d written %d", info.Sent, info.Dropped, len(in)+1)
			}
			byClass := map[string]uint64{"disposable": drops.Disposable, "inter": drops.Inter, "key": drops.Key, "audio": drops.Audio}
			for _, k := range c.wantDropped {
				if byClass[k] == 0 {
					t.Errorf("no %s frames dropped: %+v", k, drops)
				}
			}
			for _, k := range c.wantNoDropped {
				if byClass[k] != 0 {
					t.Errorf("%s frames dropped: %+v", k, drops)
				}
			}
		})
	}
}

// checkSubsequence asserts that got is in's frames in order with only
// droppable ones missing, and that after every gap in the video the next
// video frame is a keyframe unless the gap held only disposable frames. It
// returns the drops by class.
func checkSubsequence(t *testing.T, in []written, got []*av.Frame) DropCounts {
	t.Helper()
	var drops DropCounts
	j := 0
	gapNeedsKey := false
	for i, w := range in {
		ref := av.New(w.kind, w.ts, w.payload, 4)
		if j < len(got) && got[j].Kind == w.kind && got[j].Timestamp == w.ts && string(got[j].Payload) == string(w.payload) {
			if w.kind == av.KindVideo && !ref.SeqHeader {
				if gapNeedsKey && !ref.Keyframe {
					t.Fatalf("frame %d (%v) follows a gap of reference frames", i, ref)
				}
				gapNeedsKey = false
			}
			j++
			continue
		}
		if !ref.Droppable() {
			t.Fatalf("frame %d (%v) was dropped but is never droppable", i, ref)
		}
		if w.kind == av.KindVideo && !ref.Disposable {
			gapNeedsKey = true
		}
		switch {
		case w.kind == av.KindAudio:
			drops.Audio++
		case ref.Keyframe:
			drops.Key++
		case ref.Disposable:
			drops.Disposable++
		default:
			drops.Inter++
		}
	}
	if j != len(got) {
		t.Fatalf("%d frames received that were not written in that order (first: %v)", len(got)-j, got[j])
	}
	return drops
}

// A viewer of a video-only stream that never reads is purged again and
// again without ever reaching the full level; it is still closed once it has
// been behind for SlowViewerTimeout.
func TestStalledVideoOnlyViewerClosed(t *testing.T) {
	h, s := stalledViewer(t, Config{ViewerQueue: time.Second, SlowViewerTimeout: 3 * time.Second})
	for ts := uint32(0); ts < 10000; ts += 40 {
		p := pRef
		if ts%2000 == 0 {
			p = idr
		}
		h.Write(av.KindVideo, ts, p)
	}
	if !errors.Is(s.Err(), ErrTooSlow) {
		t.Fatalf("Err = %v, want ErrTooSlow", s.Err())
	}
}

// What a viewer's writer gathers on purpose (WriteBatch) is not a backlog:
// the thresholds count from beyond it.
func TestDropLevelsIgnoreWriteBatch(t *testing.T) {
	h, s := stalledViewer(t, Config{ViewerQueue: time.Second, ViewerQueueFrames: 1000, WriteBatch: 200 * time.Millisecond})
	h.Write(av.KindVideo, 0, idr)
	h.Write(av.KindVideo, 300, bDisp) // 300 ms queued, 100 beyond the batch: kept
	h.Write(av.KindVideo, 460, bDisp) // 260 beyond the batch: ≥ 1/4, dropped
	if in := s.Info(); in.Queued != 2 || in.DroppedByClass.Disposable != 1 {
		t.Fatalf("queued %d, dropped %+v; want 2 queued and the second disposable frame dropped", in.Queued, in.DroppedByClass)
	}
}

// A queue starts small and grows to its bound without losing order.
func TestQueueGrows(t *testing.T) {
	q := newQueue(2, 100, true)
	frames := make([]*av.Frame, 100)
	for i := range frames {
		frames[i] = &av.Frame{Kind: av.KindAudio, Timestamp: uint32(i), Payload: aacRaw}
	}
	// Wrap the ring before it grows.
	q.push(frames[0], false, frames[0].Timestamp, frames[0].Timestamp)
	q.push(frames[1], false, frames[1].Timestamp, frames[1].Timestamp)
	if q.pop() != frames[0] {
		t.Fatal("order")
	}
	next := 1
	for i := 2; i < 100; i++ {
		q.push(frames[i], false, frames[i].Timestamp, frames[i].Timestamp)
		if i%3 == 0 { // interleave pops so the head moves around
			if f := q.pop(); f != frames[next] {
				t.Fatalf("popped ts %d, want %d", f.Timestamp, next)
			}
			next++
		}
	}
	if oldest, _ := q.oldestTS(); oldest != uint32(next) {
		t.Fatalf("oldest timestamp %d, want %d", oldest, next)
	}
	for q.n > 0 {
		if f := q.pop(); f != frames[next] {
			t.Fatalf("popped ts %d, want %d", f.Timestamp, next)
		}
		next++
	}
	if next != 100 || len(q.frames) > 100 {
		t.Fatalf("got %d frames, ring of %d", next, len(q.frames))
	}
	for i := range 100 {
		q.push(frames[i], false, frames[i].Timestamp, frames[i].Timestamp)
	}
	if !q.full() {
		t.Fatal("a queue holding its bound is not full")
	}
}
