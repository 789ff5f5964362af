package packager

import (
	"bytes"
	"testing"
	"time"

	"github.com/Eyevinn/mp4ff/mp4"
	"github.com/relaymesh/relaymesh/internal/av"
)

func testSegmenter(parts, ts bool) *segmenter {
	return newSegmenter(segmenterConfig{segMin: 1000, partTarget: 200, count: 7, keep: 10, maxBytes: 32 << 20, parts: parts, ts: ts},
		discardLogger(), time.Now, nil)
}

// samples decodes init+segment and returns the samples of the track.
func samples(t *testing.T, init, seg []byte) []mp4.FullSample {
	t.Helper()
	f, err := mp4.DecodeFile(bytes.NewReader(append(append([]byte{}, init...), seg...)))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	var out []mp4.FullSample
	trex := f.Init.Moov.Mvex.Trex
	for _, s := range f.Segments {
		for _, fr := range s.Fragments {
			fs, err := fr.GetFullSamples(trex)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fs...)
		}
	}
	return out
}

func TestSegmenterCutsAtKeyframes(t *testing.T) {
	s := testSegmenter(true, true)
	for _, f := range synthGOPs(0, 4, true) {
		s.push(f)
	}
	segs := s.complete()
	if len(segs) != 3 || s.cur == nil || s.cur.msn != 3 {
		t.Fatalf("%d complete segments, current %v", len(segs), s.cur)
	}
	sess := s.sess
	for k, seg := range segs {
		if seg.dur != 2000 || seg.start != int64(k)*2000 {
			t.Fatalf("segment %d: start %d dur %d", k, seg.start, seg.dur)
		}
		full := samples(t, sess.byRend[Full].init, seg.tracks[0].data)
		lite := samples(t, sess.byRend[Lite].init, seg.tracks[1].data)
		key := samples(t, sess.byRend[Key].init, seg.tracks[2].data)
		aud := samples(t, sess.audio.init, seg.tracks[3].data)
		if len(full) != 50 || len(lite) != 25 || len(key) != 1 {
			t.Fatalf("segment %d: samples full %d lite %d key %d", k, len(full), len(lite), len(key))
		}
		for name, ss := range map[string][]mp4.FullSample{"full": full, "lite": lite, "key": key} {
			var d uint64
			for _, x := range ss {
				d += uint64(x.Dur)
			}
			if d != 180000 || ss[0].DecodeTime != uint64(k)*180000 || !ss[0].IsSync() {
				t.Fatalf("segment %d %s: duration %d, starts at %d, sync %v", k, name, d, ss[0].DecodeTime, ss[0].IsSync())
			}
		}
		if len(aud) < 84 || len(aud) > 88 {
			t.Fatalf("segment %d: %d audio frames", k, len(aud))
		}
		if n := len(seg.tracks[0].parts); n != 10 {
			t.Fatalf("segment %d: %d video parts", k, n)
		}
		if !seg.tracks[0].parts[0].independent || seg.tracks[0].parts[1].independent {
			t.Fatal("INDEPENDENT flags of parts")
		}
		if len(seg.tracks[1].parts) != 0 || len(seg.tracks[2].parts) != 0 {
			t.Fatal("lite and key have no parts")
		}
		var joined []byte
		for _, p := range seg.tracks[0].parts {
			joined = append(joined, p.data...)
		}
		if !bytes.Equal(joined, seg.tracks[0].data) {
			t.Fatal("a segment is not the concatenation of its parts")
		}
		for r := Full; r < numRenditions; r++ {
			if ts := seg.ts[r]; ts == nil || !ts.done || len(ts.data)%188 != 0 || len(ts.data) == 0 {
				t.Fatalf("segment %d: MPEG-TS %v", k, r)
			}
		}
	}
	full, _ := s.bandwidth(Full)
	lite, _ := s.bandwidth(Lite)
	key, _ := s.bandwidth(Key)
	if !(full > lite && lite > key && key > 0) {
		t.Fatalf("bandwidths full %d lite %d key %d", full, lite, key)
	}
}

func TestSegmenterNewSessionOnCodecChange(t *testing.T) {
	s := testSegmenter(false, false)
	for _, f := range synthGOPs(0, 2, true) {
		s.push(f)
	}
	first := s.sess
	changed := append([]byte{}, testAVCSeq...)
	changed[len(changed)-5] ^= 0x01 // a different PPS
	s.push(video(4000, changed))
	for _, f := range synthGOPs(4000, 2, false) {
		s.push(f)
	}
	if s.sess == first || s.sess.disc != 1 || s.sess.id == first.id {
		t.Fatalf("no new session (disc %d)", s.sess.disc)
	}
	// The same renditions: the old session's segments stay listed before
	// the new one's.
	got := s.complete()
	if len(got) != 3 || got[0].sess != first || got[1].sess != first || got[2].sess != s.sess || got[2].msn != 2 || got[2].start != 4000 {
		t.Fatalf("complete segments after the change: %d", len(got))
	}
	if s.session(first.id) != first || s.session(s.sess.id) != s.sess || s.session("00000000") != nil {
		t.Fatal("sessions by id")
	}
	if s.find(first.id, 1) == nil || s.find(s.sess.id, 1) != nil {
		t.Fatal("segments are found by session and number")
	}
	if full, _ := s.bandwidth(Full); full == 0 {
		t.Fatal("no bandwidth across the change")
	}
	// Once the old session's segments are evicted, it is gone.
	for _, f := range synthGOPs(8000, 12, false) {
		s.push(f)
	}
	if s.session(first.id) != nil || s.complete()[0].sess != s.sess {
		t.Fatal("the old session outlived its segments")
	}
}

// TestSegmenterRestartsOnNewRenditions: when the renditions change (here
// audio-only, then audio and video), the old segments cannot share the new
// playlists: the listing starts afresh.
func TestSegmenterRestartsOnNewRenditions(t *testing.T) {
	s := testSegmenter(false, false)
	s.push(audio(0, testAACSeq))
	for ms := 0.0; ms < 3000; ms += 1024 * 1000 / 44100.0 {
		s.push(audio(uint32(ms), aacFrame(100)))
	}
	audioOnly := s.sess
	if len(s.complete()) == 0 {
		t.Fatal("no audio-only segment")
	}
	for _, f := range synthGOPs(3100, 2, false) {
		s.push(f)
	}
	s.push(video(3100, testAVCSeq))
	for _, f := range synthGOPs(3200, 2, false) {
		s.push(f)
	}
	if s.sess == audioOnly || !s.sess.hasRendition(Full) {
		t.Fatal("no audio and video session")
	}
	for _, seg := range s.segs {
		if seg.sess != s.sess {
			t.Fatal("an audio-only segment is still listed")
		}
	}
}

func TestSegmenterUnpublishEndsSegment(t *testing.T) {
	s := testSegmenter(true, false)
	for _, f := range synthGOPs(0, 2, true) {
		s.push(f)
	}
	s.push(av.NewEvent(av.EventUnpublish, 4000))
	if s.cur != nil || len(s.complete()) != 2 {
		t.Fatalf("after unpublish: cur %v, %d complete", s.cur, len(s.complete()))
	}
	if d := s.segs[1].dur; d != 2000 {
		t.Fatalf("last segment lasts %d ms", d)
	}
	// The publisher returns ten seconds later; frames before the first
	// keyframe are not packaged.
	s.push(av.NewEvent(av.EventPublish, 14000))
	s.push(video(14000, interframe(100)))
	if s.cur != nil {
		t.Fatal("a segment started without a keyframe")
	}
	for _, f := range synthGOPs(14040, 2, false) {
		s.push(f)
	}
	segs := s.complete()
	if last := segs[len(segs)-1]; last.start != 14040 {
		t.Fatalf("segment after the gap starts at %d", last.start)
	}
}

func TestSegmenterAudioOnly(t *testing.T) {
	s := testSegmenter(true, true)
	s.push(audio(0, testAACSeq))
	for ms := 0.0; ms < 5000; ms += 1024 * 1000 / 44100.0 {
		s.push(audio(uint32(ms), aacFrame(100)))
	}
	if s.sess == nil || s.sess.vc != nil || !s.sess.hasRendition(Audio) || s.sess.hasRendition(Full) {
		t.Fatal("audio-only session")
	}
	if n := len(s.complete()); n < 3 {
		t.Fatalf("%d audio-only segments", n)
	}
}

func TestSegmenterBoundsSegmentSize(t *testing.T) {
	s := testSegmenter(false, false)
	s.cfg.maxBytes = 20000
	for _, f := range synthGOPs(0, 3, true) {
		s.push(f)
	}
	for _, seg := range s.complete() {
		if n := len(seg.tracks[0].data); n > 20000 {
			t.Fatalf("segment of %d bytes", n)
		}
	}
}

func TestExtenderWraps(t *testing.T) {
	var e extender
	if e.ext(0xfffffff0) != 0xfffffff0 {
		t.Fatal("first")
	}
	if got := e.ext(0x10); got != 1<<32+0x10 {
		t.Fatalf("after wrap: %x", got)
	}
	if got := e.ext(0xfffffff8); got != 0xfffffff8 {
		t.Fatalf("late frame from before the wrap: %x", got)
	}
}

// FuzzSegmenter pushes hostile frames: no panic, whatever the bytes.
func FuzzSegmenter(f *testing.F) {
	f.Add(byte(9), uint32(0), testAVCSeq)
	f.Add(byte(9), uint32(40), keyframe(50))
	f.Add(byte(8), uint32(0), testAACSeq)
	f.Add(byte(9), uint32(80), avcFrame(1, 0x65, -40, 3))
	f.Fuzz(func(t *testing.T, kind byte, ts uint32, payload []byte) {
		s := testSegmenter(true, true)
		s.push(video(0, testAVCSeq))
		s.push(audio(0, testAACSeq))
		s.push(video(0, keyframe(100)))
		k := av.KindVideo
		if kind&1 == 0 {
			k = av.KindAudio
		}
		s.push(av.New(k, ts, payload, 4))
		s.push(av.New(k, ts+40, payload, 4))
		s.push(video(ts+2000, keyframe(100)))
		s.push(av.NewEvent(av.EventUnpublish, ts+2040))
	})
}

// noBFrameGOPs returns n GOPs of 2 s at 25 fps without disposable frames
// (I P P P …, every frame the same size) and AAC audio, from ms start.
func noBFrameGOPs(start uint32, n int, withHeaders bool) []*av.Frame {
	var out []*av.Frame
	if withHeaders {
		out = append(out, video(start, testAVCSeq), audio(start, testAACSeq))
	}
	aNext := float64(start)
	for i := 0; i < n*50; i++ {
		ts := start + uint32(i*40)
		for aNext <= float64(ts) {
			out = append(out, audio(uint32(aNext), aacFrame(200)))
			aNext += 1024 * 1000 / 44100.0
		}
		if i%50 == 0 {
			out = append(out, video(ts, keyframe(4000)))
		} else {
			out = append(out, video(ts, interframe(4000)))
		}
	}
	return out
}

// TestLiteBandwidthWithoutBFrames: for a stream without disposable frames,
// lite keeps the first GOP whole (no GOP length known yet) and half of every
// later one. That first segment must not set lite's peak: it measured full's
// bandwidth for as long as the segment was kept (issue 3).
func TestLiteBandwidthWithoutBFrames(t *testing.T) {
	s := testSegmenter(true, false)
	for _, f := range noBFrameGOPs(0, 5, true) {
		s.push(f)
	}
	if segs := s.complete(); len(segs) != 4 || !segs[0].tracks[1].warmup || segs[1].tracks[1].warmup {
		t.Fatalf("%d complete segments; the first is lite's warmup, the others not", len(segs))
	}
	full, fullAvg := s.bandwidth(Full)
	lite, liteAvg := s.bandwidth(Lite)
	// Every frame is 4000 bytes: full ~400 kbit/s of samples, lite half.
	for _, r := range []struct {
		name       string
		full, lite int
	}{{"peak", full, lite}, {"average", fullAvg, liteAvg}} {
		if ratio := float64(r.lite) / float64(r.full); ratio < 0.45 || ratio > 0.6 {
			t.Errorf("%s: lite %d is %.2f of full %d, want about half", r.name, r.lite, ratio, r.full)
		}
	}

	// With only the warmup segment listed, its measure is all there is.
	s2 := testSegmenter(false, false)
	for _, f := range noBFrameGOPs(0, 2, true) {
		s2.push(f)
	}
	if l, _ := s2.bandwidth(Lite); l == 0 {
		t.Fatal("lite has no bandwidth with only its warmup segment")
	}
}

// TestBandwidthOverListedSegments: the measure covers the listed segments
// (SegmentCount), not the older ones kept for late readers.
func TestBandwidthOverListedSegments(t *testing.T) {
	s := testSegmenter(false, false) // lists 7, keeps 10
	for _, f := range noBFrameGOPs(0, 11, true) {
		s.push(f)
	}
	// Make the oldest kept (unlisted) full segment look huge.
	if len(s.segs) != 11 || len(s.complete()) != 7 {
		t.Fatalf("%d kept, %d listed", len(s.segs), len(s.complete()))
	}
	before, _ := s.bandwidth(Full)
	old := s.segs[0].tracks[0]
	old.data = append(old.data, make([]byte, 1<<20)...)
	if after, _ := s.bandwidth(Full); after != before {
		t.Fatalf("an unlisted segment changed the peak: %d -> %d", before, after)
	}
}
