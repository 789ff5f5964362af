package packager

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
)

// benchFrames is a minute of a synthetic 25 fps stream with AAC audio
// (about 1.9 Mbit/s: 5 kB keyframes… see synthGOPs).
var benchFrames = synthGOPs(0, 30, true)

// BenchmarkPackage measures the packaging cost per incoming frame (video
// and audio) for each HLS format; every format also makes the fMP4 that
// DASH serves. One op is one frame through all four renditions.
func BenchmarkPackage(b *testing.B) {
	for _, v := range []struct {
		name      string
		parts, ts bool
	}{{"llhls", true, false}, {"fmp4", false, false}, {"mpegts", false, true}} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			var s *segmenter
			i := len(benchFrames)
			for n := 0; n < b.N; n++ {
				if i == len(benchFrames) {
					b.StopTimer()
					s = testSegmenter(v.parts, v.ts)
					i = 0
					b.StartTimer()
				}
				s.push(benchFrames[i])
				i++
			}
		})
	}
}

// BenchmarkServePart measures serving a part that every viewer shares: the
// cost is per request, nothing is copied or encoded per viewer.
func BenchmarkServePart(b *testing.B) {
	src := newPushSource()
	// The test stream sends its frames once: without a long end grace it
	// ends, and is stopped, in a run longer than the default grace.
	p, err := New(src, Config{Logger: discardLogger(), EndGrace: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	h := p.Handler()
	go func() {
		sub := src.current(b)
		sub.push(synthGOPs(0, 2, true)...)
	}()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/hls/live/test/full.m3u8", nil))
	m := sidRE.FindStringSubmatch(rec.Body.String())
	if m == nil {
		b.Fatalf("playlist: %d %s", rec.Code, rec.Body)
	}
	req := httptest.NewRequest("GET", "/hls/live/test/"+m[1]+"_full_0.1.m4s", nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		clear(w.h)
		h.ServeHTTP(w, req)
		if w.code != 200 {
			b.Fatalf("status %d", w.code)
		}
	}
}

type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(c int)           { w.code = c }

// BenchmarkServeSegment measures serving a complete segment (~60 kB of
// synthetic full rendition) and a playlist that every viewer shares: per
// request, the headers and one write of the shared buffer; nothing copied.
// "tcp" serves over loopback to a client that reads and discards, through
// the real net/http response writer.
func BenchmarkServeSegment(b *testing.B) {
	src := newPushSource()
	// The test stream sends its frames once: without a long end grace it
	// ends, and is stopped, in a run longer than the default grace.
	p, err := New(src, Config{Logger: discardLogger(), EndGrace: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	h := p.Handler()
	go func() {
		sub := src.current(b)
		sub.push(synthGOPs(0, 3, true)...)
	}()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/hls/live/test/full.m3u8", nil))
	m := sidRE.FindStringSubmatch(rec.Body.String())
	if m == nil {
		b.Fatalf("playlist: %d %s", rec.Code, rec.Body)
	}
	for _, f := range []string{m[1] + "_full_1.m4s", "full.m3u8"} {
		req := httptest.NewRequest("GET", "/hls/live/test/"+f, nil)
		b.Run(strings.TrimPrefix(f, m[1]+"_"), func(b *testing.B) {
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for n := 0; n < b.N; n++ {
				clear(w.h)
				h.ServeHTTP(w, req)
				if w.code != 200 {
					b.Fatalf("status %d", w.code)
				}
			}
		})
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := srv.Client()
	b.Run("tcp", func(b *testing.B) {
		b.ReportAllocs()
		var bytes int64
		for n := 0; n < b.N; n++ {
			resp, err := c.Get(srv.URL + "/hls/live/test/" + m[1] + "_full_1.m4s")
			if err != nil {
				b.Fatal(err)
			}
			k, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			bytes += k
		}
		b.SetBytes(bytes / int64(b.N))
	})
}

// BenchmarkTSPlayRemux measures making one file of ts.m3u8 (tsplay.go)
// from a complete segment's fMP4 fragments: one op is one 2 s segment of
// full with the audio, made once for all its viewers; synthetic is
// benchFrames, x264 a real encoder's 640x360 stream (about 1.7 Mbit/s
// with its AAC; needs ffmpeg). ts/fmp4 is the size of the MPEG-TS file
// over full's and audio's fMP4 bytes.
func BenchmarkTSPlayRemux(b *testing.B) {
	for _, c := range []struct {
		name   string
		frames func() []*av.Frame
	}{
		{"synthetic", func() []*av.Frame { return benchFrames }},
		{"x264", func() []*av.Frame { return encode(b, 8, "-bf", "3") }},
	} {
		b.Run(c.name, func(b *testing.B) {
			p, err := New(newPushSource(), Config{Logger: discardLogger()})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			st := p.newStream("live", "bench")
			for _, f := range c.frames() {
				st.seg.push(f)
			}
			segs := st.seg.complete()
			m, err := newTSWriter(st.seg.current(), Full)
			if err != nil {
				b.Fatal(err)
			}
			rx := &tsRemux{r: Full, mux: m}
			var ts, fmp4 int
			b.ReportAllocs()
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				seg := segs[n%len(segs)]
				out, err := rx.remux(seg)
				if err != nil {
					b.Fatal(err)
				}
				ts += len(out.data)
				fmp4 += len(seg.track(Full).data) + len(seg.track(Audio).data)
			}
			b.ReportMetric(float64(ts)/float64(fmp4), "ts/fmp4")
		})
	}
}
