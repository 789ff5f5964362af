package packager

import (
	"testing"

	"github.com/relaymesh/relaymesh/internal/av"
)

// gop builds n GOPs of the given pattern in decode order: 'I' keyframe,
// 'P' reference inter frame, 'B' reference B frame, 'b' disposable frame.
func frames(pattern string, n int) []*av.Frame {
	var out []*av.Frame
	ts := uint32(0)
	for g := 0; g < n; g++ {
		for _, c := range pattern {
			f := &av.Frame{Kind: av.KindVideo, Timestamp: ts, Codec: av.CodecAVC}
			switch c {
			case 'I':
				f.Keyframe = true
			case 'b':
				f.Disposable = true
			}
			out = append(out, f)
			ts += 40
		}
	}
	return out
}

// checkDecodable asserts the safety property under a conservative reference
// model: a non-disposable frame may be referenced by any later frame of its
// GOP, a disposable one by none. So once a non-disposable frame is dropped,
// every later frame of its GOP must be dropped too.
func checkDecodable(t *testing.T, fr []*av.Frame, kept []bool) {
	t.Helper()
	broken := false
	for i, f := range fr {
		if f.Keyframe {
			broken = false
		}
		if kept[i] && broken {
			t.Fatalf("frame %d (%v) kept after a dropped reference frame of its GOP", i, f)
		}
		if !kept[i] && !f.Disposable {
			broken = true
		}
	}
}

func run(r Rendition, fr []*av.Frame) []bool {
	v := videoFilter{r: r}
	kept := make([]bool, len(fr))
	for i, f := range fr {
		kept[i] = v.keep(f)
	}
	return kept
}

func count(kept []bool) (n int) {
	for _, k := range kept {
		if k {
			n++
		}
	}
	return n
}

func TestFullKeepsEverything(t *testing.T) {
	fr := frames("IPBbbPBbb", 3)
	kept := run(Full, fr)
	if count(kept) != len(fr) {
		t.Fatalf("full kept %d of %d", count(kept), len(fr))
	}
}

func TestLiteDropsDisposable(t *testing.T) {
	fr := frames("IPBbbPBbb", 4)
	kept := run(Lite, fr)
	for i, f := range fr {
		if kept[i] == f.Disposable {
			t.Fatalf("frame %d %v: kept=%v", i, f, kept[i])
		}
	}
	checkDecodable(t, fr, kept)
}

func TestLiteWithoutDisposableDropsGOPTail(t *testing.T) {
	fr := frames("IPPPPPPPPP", 3) // 10 frames per GOP, no B-frames
	kept := run(Lite, fr)
	// First GOP whole (length unknown), then the first 5 frames of each GOP.
	want := "1111111111" + "1111100000" + "1111100000"
	for i := range fr {
		if kept[i] != (want[i] == '1') {
			t.Fatalf("frame %d: kept=%v, want pattern %s", i, kept[i], want)
		}
	}
	checkDecodable(t, fr, kept)
}

func TestKeyKeepsKeyframes(t *testing.T) {
	fr := frames("IPBbbPBbb", 3)
	kept := run(Key, fr)
	for i, f := range fr {
		if kept[i] != f.Keyframe {
			t.Fatalf("frame %d %v: kept=%v", i, f, kept[i])
		}
	}
	checkDecodable(t, fr, kept)
}

func TestAudioKeepsNoVideo(t *testing.T) {
	fr := frames("IPBbb", 2)
	if n := count(run(Audio, fr)); n != 0 {
		t.Fatalf("audio rendition kept %d video frames", n)
	}
}

func TestLiteSwitchesModeWithTheStream(t *testing.T) {
	// A stream that has B-frames, then (new encoder settings) none.
	fr := append(frames("IPBbbPBbb", 2), frames("IPPPPPPP", 3)...)
	for i := range fr {
		fr[i].Timestamp = uint32(i * 40)
	}
	kept := run(Lite, fr)
	checkDecodable(t, fr, kept)
	if count(kept) >= len(fr)-4 {
		t.Fatalf("lite dropped too little: %d of %d kept", count(kept), len(fr))
	}
}

func TestRenditionNames(t *testing.T) {
	for r := Full; r < numRenditions; r++ {
		got, ok := parseRendition(r.String())
		if !ok || got != r {
			t.Fatalf("round trip of %v", r)
		}
	}
	if _, ok := parseRendition("nope"); ok {
		t.Fatal("parsed an unknown rendition")
	}
}
