package hub

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
)

func kinds(fs []*av.Frame) string {
	s := ""
	for _, f := range fs {
		switch {
		case f.Kind == av.KindEvent && f.Event == av.EventPublish:
			s += "P"
		case f.Kind == av.KindEvent:
			s += "U"
		case f.Metadata:
			s += "M"
		case f.SeqHeader && f.Kind == av.KindVideo:
			s += "V"
		case f.SeqHeader:
			s += "A"
		case f.Kind == av.KindAudio:
			s += "a"
		case f.Keyframe:
			s += "I"
		case f.Disposable:
			s += "b"
		case f.Kind == av.KindVideo:
			s += "p"
		default:
			s += "d"
		}
	}
	return s
}

func TestInstantStart(t *testing.T) {
	r := newTestRegistry(Config{})
	h := r.Acquire("live", "s")
	defer h.Release()
	h.Begin(PublisherInfo{Addr: "127.0.0.1:1", ID: "c1"})
	h.Write(av.KindData, 0, metaMsg)
	h.Write(av.KindVideo, 0, avcSeq)
	h.Write(av.KindAudio, 0, aacSeq)
	h.Write(av.KindAudio, 10, aacRaw) // before any keyframe: not cached
	h.Write(av.KindVideo, 40, idr)
	h.Write(av.KindAudio, 43, aacRaw)
	h.Write(av.KindVideo, 80, pRef)
	h.Write(av.KindAudio, 66, aacRaw)
	h.Write(av.KindVideo, 120, bDisp)

	s := h.Subscribe(SubscribeOptions{ID: "v1"})
	defer s.Close()
	if !s.JoinedLive() {
		t.Fatal("JoinedLive false")
	}
	got := pending(s)
	if k := kinds(got); k != "MVAIapab" {
		t.Fatalf("burst = %q", k)
	}
	wantTS := []uint32{0, 0, 0, 40, 43, 80, 66, 120}
	for i, f := range got {
		if f.Timestamp != wantTS[i] {
			t.Fatalf("frame %d ts %d, want %d", i, f.Timestamp, wantTS[i])
		}
	}
	h.Write(av.KindVideo, 160, pRef)
	if k := kinds(pending(s)); k != "p" {
		t.Fatalf("live = %q", k)
	}
}

func TestStartWithoutKeyframe(t *testing.T) {
	for _, lossless := range []bool{false, true} {
		r := newTestRegistry(Config{})
		h := r.Acquire("live", "s")
		h.Begin(PublisherInfo{})
		h.Write(av.KindVideo, 0, avcSeq)
		h.Write(av.KindAudio, 0, aacSeq)
		h.Write(av.KindVideo, 0, idr)
		for i := 0; i < 3000; i++ { // beyond GOPCacheMaxFrames: cache dropped
			h.Write(av.KindVideo, uint32(40+i), pRef)
		}
		s := h.Subscribe(SubscribeOptions{Lossless: lossless})
		if k := kinds(pending(s)); k != "VA" {
			t.Fatalf("lossless=%v burst = %q", lossless, k)
		}
		h.Write(av.KindAudio, 5000, aacRaw)
		h.Write(av.KindVideo, 5000, pRef)
		h.Write(av.KindVideo, 5040, bDisp)
		h.Write(av.KindVideo, 5080, idr)
		h.Write(av.KindVideo, 5120, pRef)
		if k := kinds(pending(s)); k != "aIp" {
			t.Fatalf("lossless=%v live = %q", lossless, k)
		}
		s.Close()
		h.Release()
	}
}

func TestSubscribeBeforeLive(t *testing.T) {
	r := newTestRegistry(Config{})
	h := r.Acquire("live", "s")
	defer h.Release()
	s := h.Subscribe(SubscribeOptions{})
	defer s.Close()
	if s.JoinedLive() {
		t.Fatal("JoinedLive true")
	}
	h.Write(av.KindVideo, 0, idr) // not live: ignored
	h.Begin(PublisherInfo{})
	h.Write(av.KindData, 0, metaMsg)
	h.Write(av.KindVideo, 0, avcSeq)
	h.Write(av.KindVideo, 0, pRef) // before the first keyframe: skipped
	h.Write(av.KindVideo, 40, idr)
	h.End()
	if k := kinds(pending(s)); k != "PMVIU" {
		t.Fatalf("got %q", k)
	}
	if h.Live() {
		t.Fatal("live after End")
	}
}

func TestTimestampRebase(t *testing.T) {
	r := newTestRegistry(Config{})
	h := r.Acquire("live", "s")
	defer h.Release()
	s := h.Subscribe(SubscribeOptions{Lossless: true})
	defer s.Close()

	h.Begin(PublisherInfo{})
	h.Write(av.KindVideo, 1000, avcSeq)
	h.Write(av.KindVideo, 1000, idr)
	h.Write(av.KindAudio, 1010, aacRaw)
	h.Write(av.KindVideo, 1040, pRef)
	h.End()
	h.Begin(PublisherInfo{})
	h.Write(av.KindData, 0, metaMsg)
	h.Write(av.KindVideo, 0, avcSeq)
	h.Write(av.KindVideo, 0, idr)
	h.Write(av.KindAudio, 5, aacRaw)
	h.Write(av.KindVideo, 40, pRef)
	h.End()
	h.Begin(PublisherInfo{}) // a session that starts mid-way
	h.Write(av.KindVideo, 70000, idr)
	h.Write(av.KindVideo, 69990, bDisp) // below the session's first timestamp: clamped

	got := pending(s)
	if k := kinds(got); k != "PVIapUPMVIapUPIb" {
		t.Fatalf("got %q", k)
	}
	want := []uint32{0, 1000, 1000, 1010, 1040, 1040, 1040, 1041, 1041, 1041, 1046, 1081, 1081, 1081, 1082, 1082}
	for i, f := range got {
		if f.Timestamp != want[i] {
			t.Errorf("frame %d (%v): ts %d, want %d", i, f, f.Timestamp, want[i])
		}
	}
}

func TestNextMaxBytesAndContext(t *testing.T) {
	r := newTestRegistry(Config{})
	h := r.Acquire("live", "s")
	defer h.Release()
	h.Begin(PublisherInfo{})
	s := h.Subscribe(SubscribeOptions{Lossless: true})
	h.Write(av.KindVideo, 0, idr)
	h.Write(av.KindVideo, 40, pRef)
	h.Write(av.KindVideo, 80, pRef)
	buf := make([]*av.Frame, 0, 8)
	got, err := s.Next(context.Background(), buf, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("got %d frames, %v", len(got), err)
	}
	got, err = s.Next(context.Background(), got, len(pRef)*2)
	if err != nil || kinds(got) != "pp" {
		t.Fatalf("got %q, %v", kinds(got), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Next(ctx, got, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	// A blocked Next wakes on a write, then on Close.
	res := make(chan error, 2)
	go func() {
		_, err := s.Next(context.Background(), nil, 0)
		res <- err
		_, err = s.Next(context.Background(), nil, 0)
		res <- err
	}()
	h.Write(av.KindAudio, 100, aacRaw)
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := <-res; !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if s.Err() != nil {
		t.Fatalf("Err after owner's Close: %v", s.Err())
	}
	s.Close() // idempotent
	if h.SubscriberCount() != 0 {
		t.Fatal("still subscribed")
	}
}

func TestLosslessOverflow(t *testing.T) {
	r := newTestRegistry(Config{LosslessQueueFrames: 10})
	h := r.Acquire("live", "s")
	defer h.Release()
	h.Begin(PublisherInfo{})
	s := h.Subscribe(SubscribeOptions{Lossless: true})
	h.Write(av.KindVideo, 0, idr)
	for i := 1; i < 10; i++ {
		h.Write(av.KindVideo, uint32(i*40), pRef)
	}
	if s.Err() != nil {
		t.Fatal("closed too early")
	}
	h.Write(av.KindVideo, 400, bDisp) // 11th frame: overflow
	if !errors.Is(s.Err(), ErrOverflow) {
		t.Fatalf("Err = %v", s.Err())
	}
	if _, err := s.Next(context.Background(), nil, 0); !errors.Is(err, ErrOverflow) {
		t.Fatalf("Next: %v", err)
	}
	select {
	case <-s.Done():
	case <-time.After(time.Second):
		t.Fatal("Done not closed")
	}
	if h.SubscriberCount() != 0 {
		t.Fatal("overflowed subscriber still listed")
	}
	if in := h.Info(); in.Live != true || len(in.Subscribers) != 0 {
		t.Fatalf("info %+v", in)
	}
}

func TestGOPCacheByteBound(t *testing.T) {
	r := newTestRegistry(Config{GOPCacheMaxBytes: 100})
	h := r.Acquire("live", "s")
	defer h.Release()
	h.Begin(PublisherInfo{})
	h.Write(av.KindVideo, 0, idr)
	for i := 1; i <= 20; i++ { // ~13 bytes each: beyond 100 bytes the cache goes
		h.Write(av.KindVideo, uint32(i*40), pRef)
	}
	s := h.Subscribe(SubscribeOptions{})
	if k := kinds(pending(s)); k != "" {
		t.Fatalf("burst after overflow: %q", k)
	}
	if h.Info().GOPCacheSize != 0 {
		t.Fatal("cache not dropped")
	}
	h.Write(av.KindVideo, 1000, idr) // the next keyframe restarts it
	h.Write(av.KindVideo, 1040, pRef)
	s2 := h.Subscribe(SubscribeOptions{})
	if k := kinds(pending(s2)); k != "Ip" {
		t.Fatalf("burst: %q", k)
	}
	s.Close()
	s2.Close()
}

func TestNewSessionReplacesHeaders(t *testing.T) {
	r := newTestRegistry(Config{})
	h := r.Acquire("live", "s")
	defer h.Release()
	h.Begin(PublisherInfo{ID: "one"})
	h.Write(av.KindData, 0, amfMeta(1920, 1080))
	h.Write(av.KindVideo, 0, avcSeq)
	h.Write(av.KindAudio, 0, aacSeq)
	h.Write(av.KindVideo, 0, idr)
	old := h.Subscribe(SubscribeOptions{})
	defer old.Close()
	pending(old)
	h.Begin(PublisherInfo{ID: "two"}) // without End: the first session ends
	if in := h.Info(); in.PublisherID != "two" || in.Width != 0 || in.VideoCodec != "" {
		t.Fatalf("stale info %+v", in)
	}
	if k := kinds(pending(old)); k != "UP" {
		t.Fatalf("events %q", k)
	}
	h.Write(av.KindData, 0, amfMeta(320, 240))
	h.Write(av.KindVideo, 0, idr)
	s := h.Subscribe(SubscribeOptions{})
	defer s.Close()
	got := pending(s)
	if k := kinds(got); k != "MI" { // the new metadata only, no old headers
		t.Fatalf("burst %q", k)
	}
	if w, _, _ := metadataVideoSize(got[0].Payload); w != 320 {
		t.Fatalf("old metadata delivered (width %d)", w)
	}
	if k := kinds(pending(old)); k != "MI" {
		t.Fatalf("existing subscriber got %q", k)
	}
}
