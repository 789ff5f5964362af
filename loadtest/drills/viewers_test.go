package drills

import (
	"net/url"
	"reflect"
	"testing"
	"time"
)

func TestPlayerFigures(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	p := &Player{frames: []time.Time{at(0), at(40), at(80), at(2080), at(2120)}, ends: []time.Time{at(100)}}
	if d := p.FirstFrameAfter(at(80)); d != 2*time.Second {
		t.Errorf("first frame after 80 ms: %v, want 2s", d)
	}
	if d := p.FirstFrameAfter(at(3000)); d != -1 {
		t.Errorf("first frame after the last: %v, want -1", d)
	}
	if d := p.LongestStall(at(0), at(2120)); d != 2*time.Second {
		t.Errorf("longest stall: %v, want 2s", d)
	}
	// The time from the last frame to the end of the window counts.
	if d := p.LongestStall(at(2000), at(5120)); d != 3*time.Second {
		t.Errorf("stall to the window's end: %v, want 3s", d)
	}
	if n := p.EndsAfter(at(50)); n != 1 {
		t.Errorf("ends after 50 ms: %d, want 1", n)
	}
}

func TestWorstAndMedian(t *testing.T) {
	ds := []time.Duration{3 * time.Second, -1, time.Second, 2 * time.Second}
	if w, never := worst(ds); w != 3*time.Second || never != 1 {
		t.Errorf("worst %v never %d", w, never)
	}
	if m := median(ds); m != 2*time.Second {
		t.Errorf("median %v", m)
	}
	if m := median([]time.Duration{-1}); m != -1 {
		t.Errorf("median of nothing: %v", m)
	}
}

func TestHLSURIs(t *testing.T) {
	base, _ := url.Parse("http://198.18.1.11:8080/hls/live/drill/index.m3u8")
	body := []byte("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nkey.m3u8\n\n#EXT-X-PART:URI=\"p.mp4\"\n#EXTINF:2.0,\nseg/1.m4s\nhttp://other/x.m4s\n")
	got := uris(base, body)
	want := []string{"http://198.18.1.11:8080/hls/live/drill/key.m3u8", "http://198.18.1.11:8080/hls/live/drill/seg/1.m4s", "http://other/x.m4s"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("uris = %q, want %q", got, want)
	}
}

func TestHLSViewerStats(t *testing.T) {
	t0 := time.Unix(1000, 0)
	v := &HLSViewer{segments: 3, news: []time.Time{t0, t0.Add(2 * time.Second), t0.Add(6 * time.Second)},
		fails: []time.Time{t0.Add(3 * time.Second)}}
	fails, segs, stall := v.Stats(t0.Add(time.Second), t0, t0.Add(7*time.Second))
	if fails != 1 || segs != 3 || stall != 4*time.Second {
		t.Fatalf("Stats = %d fails, %d segments, %v stall; want 1, 3, 4s", fails, segs, stall)
	}
}
