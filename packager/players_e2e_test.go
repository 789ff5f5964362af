package packager

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	m "github.com/Eyevinn/dash-mpd/mpd"
	"github.com/bluenviron/gohlslib/v2/pkg/playlist"
	"github.com/prometheus/client_golang/prometheus"
)

// playersServer packages a real encoder's stream (live/b, 2 s GOP,
// B-frames) over loopback, a publisher a few seconds ahead and then real
// time.
func playersServer(t *testing.T, app AppConfig) *httptest.Server {
	t.Helper()
	frames := encode(t, 8, "-bf", "3")
	src := &fakeSource{}
	src.add("live", "b", &clip{frames: frames, burst: 4500 * time.Millisecond, speed: 1})
	p, err := New(src, Config{Logger: discardLogger(), Registerer: prometheus.NewRegistry(), Default: app})
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

// TestDASHThroughRedirect: ffmpeg given a redirector's URL (which answers
// 302 to the relay's manifest, as /play does) plays the stream, plain and
// low-latency DASH: the manifest's absolute BaseURL sends every segment
// request to the relay, none to the redirector.
func TestDASHThroughRedirect(t *testing.T) {
	for _, ll := range []bool{false, true} {
		name := "plain"
		if ll {
			name = "low-latency"
		}
		t.Run(name, func(t *testing.T) {
			srv := playersServer(t, AppConfig{LowLatencyDASH: ll})
			var mu sync.Mutex
			var strays []string
			redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/play/live/b" && r.URL.Query().Get("proto") == "dash" {
					http.Redirect(w, r, srv.URL+"/dash/live/b/manifest.mpd", http.StatusFound)
					return
				}
				mu.Lock()
				strays = append(strays, r.URL.Path)
				mu.Unlock()
				http.NotFound(w, r)
			}))
			defer redir.Close()
			get(t, srv.Client(), srv.URL+"/dash/live/b/manifest.mpd") // start packaging
			waitUntil(t, "a segment in the manifest", func() bool {
				_, b := get(t, srv.Client(), srv.URL+"/dash/live/b/manifest.mpd")
				return strings.Contains(string(b), "<S ") && strings.Contains(string(b), "availabilityTimeOffset") == ll
			})
			runTool(t, "ffmpeg", "-hide_banner", "-v", "warning", "-i", redir.URL+"/play/live/b?proto=dash",
				"-map", "0:v:0", "-map", "0:a:0", "-t", "3", "-f", "null", "-")
			mu.Lock()
			defer mu.Unlock()
			if len(strays) > 0 {
				t.Errorf("requests that reached the redirector: %v", strays)
			}
		})
	}
}

// TestWholeSegmentNeverHeld: an HLS request for a whole segment that is
// not complete (in progress, or the next one) is answered at once with an
// uncached 404 instead of being held or streamed for as long as the media
// lasts (a player timing it would take the link for the segment's
// bitrate); every segment a playlist lists is complete and served whole at
// once. The same segment by time (DASH) is still streamed as it grows.
func TestWholeSegmentNeverHeld(t *testing.T) {
	for _, format := range []HLSFormat{HLSLowLatency, HLSFMP4, HLSMPEGTS} {
		t.Run(string(format), func(t *testing.T) {
			_, src, srv := testServer(t, Config{MaxWait: 5 * time.Second, Default: AppConfig{HLS: format}})
			// Segment 0 complete, 1 in progress.
			done := make(chan []byte, 1)
			go func() {
				resp, err := http.Get(srv.URL + "/hls/live/test/full.m3u8")
				if err != nil {
					done <- nil
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				done <- b
			}()
			sub := src.current(t)
			sub.push(synthGOPs(0, 1, true)...)
			sub.push(synthGOPs(2000, 1, false)[:20]...)
			m := regexp.MustCompile(`([0-9a-f]{8})_full_0\.`).FindSubmatch(<-done)
			if m == nil {
				t.Fatal("no segment 0 in the playlist")
			}
			sid := string(m[1])
			c := srv.Client()
			ext := ".m4s"
			if format == HLSMPEGTS {
				ext = ".ts"
			}
			for _, n := range []string{"1", "2"} {
				resp, _ := get(t, c, srv.URL+"/hls/live/test/"+sid+"_full_"+n+ext)
				if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Cache-Control") != cacheNone {
					t.Fatalf("segment %s (not complete): %d %q", n, resp.StatusCode, resp.Header.Get("Cache-Control"))
				}
			}
			_, body := get(t, c, srv.URL+"/hls/live/test/full.m3u8")
			var pl playlist.Media
			if err := pl.Unmarshal(body); err != nil {
				t.Fatal(err)
			}
			for _, s := range pl.Segments {
				resp, b := get(t, c, srv.URL+"/hls/live/test/"+s.URI)
				if resp.StatusCode != 200 || resp.ContentLength != int64(len(b)) || len(b) == 0 {
					t.Fatalf("listed %s: %d, Content-Length %d, %d bytes", s.URI, resp.StatusCode, resp.ContentLength, len(b))
				}
			}
			if format == HLSMPEGTS {
				return
			}
			// By time, the segment in progress is streamed (chunked).
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/dash/live/test/"+sid+"_full_t180000.m4s", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.ContentLength != -1 {
				t.Fatalf("DASH segment in progress: %d, Content-Length %d", resp.StatusCode, resp.ContentLength)
			}
		})
	}
}

// TestDASHTimeNearSegmentStart: in a low-latency manifest the segment in
// progress is listed with an assumed duration, so a player's next $Time$
// for audio can miss the next segment's start by a few AAC frames; such a
// time names the segment starting nearest it (within a quarter of
// SegmentMinDuration). Far from any start it is 404, and without
// low-latency DASH only exact times name segments (a time off the newest
// segment's start waits for a segment there, and gets none).
func TestDASHTimeNearSegmentStart(t *testing.T) {
	for _, ll := range []bool{true, false} {
		_, src, srv := testServer(t, Config{Default: AppConfig{LowLatencyDASH: ll}})
		sid, sub := startStream(t, src, srv.URL)
		sub.push(synthGOPs(2000, 2, false)[1:]...)
		sub.push(video(6000, keyframe(5000)))
		c := srv.Client()
		base := srv.URL + "/dash/live/test/" + sid + "_audio_t"
		var start uint64
		waitUntil(t, "audio segment 2 in the manifest", func() bool {
			_, b := get(t, c, srv.URL+"/dash/live/test/manifest.mpd")
			mpd, err := m.MPDFromBytes(b)
			if err != nil {
				return false
			}
			tl := mpd.Periods[0].AdaptationSets[1].SegmentTemplate.SegmentTimeline
			n := 0
			for _, s := range tl.S {
				for r := 0; r <= s.R; r++ {
					if n == 2 {
						start = *s.T + uint64(r)*s.D
					}
					n++
				}
			}
			return n >= 3 && start > 0
		})
		_, exact := get(t, c, base+strconv.FormatUint(start, 10)+".m4s")
		near, body := get(t, c, base+strconv.FormatUint(start+2048, 10)+".m4s")
		if ll && (near.StatusCode != 200 || !bytes.Equal(body, exact)) {
			t.Fatalf("low-latency: a time 2048 samples after the start: %d, %d bytes (the segment has %d)", near.StatusCode, len(body), len(exact))
		}
		if !ll && near.StatusCode == 200 {
			t.Fatal("plain: a time off the start named a segment")
		}
		if far, _ := get(t, c, base+strconv.FormatUint(start-44100/2, 10)+".m4s"); far.StatusCode != http.StatusNotFound {
			t.Fatalf("a time half a second before the start (inside the segment before): %d", far.StatusCode)
		}
	}
}
