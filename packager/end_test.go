package packager

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	m "github.com/Eyevinn/dash-mpd/mpd"
	"github.com/bluenviron/gohlslib/v2/pkg/playlist"
	"github.com/relaymesh/relaymesh/internal/av"
)

// checkEnded checks that every media playlist of the stream has
// EXT-X-ENDLIST and no preload hint, that a blocking reload for a segment
// that will never come is answered at once with the ended playlist, that
// the next part and segment are 404, and that the manifest is static.
func checkEnded(t *testing.T, c *http.Client, base, sid string) {
	t.Helper()
	for _, r := range []string{"full", "lite", "key", "audio"} {
		resp, body := get(t, c, base+"/hls/live/test/"+r+".m3u8")
		var pl playlist.Media
		if err := pl.Unmarshal(body); resp.StatusCode != 200 || err != nil {
			t.Fatalf("%s.m3u8: %d %v\n%s", r, resp.StatusCode, err, body)
		}
		if !pl.Endlist || pl.PreloadHint != nil || len(pl.Parts) != 0 {
			t.Fatalf("%s.m3u8 of an ended stream:\n%s", r, body)
		}
		next := pl.MediaSequence + len(pl.Segments)
		start := time.Now()
		resp, body = get(t, c, base+"/hls/live/test/"+r+".m3u8?_HLS_msn="+strconv.Itoa(next)+"&_HLS_part=0")
		if resp.StatusCode != 200 || !strings.Contains(string(body), "#EXT-X-ENDLIST") {
			t.Fatalf("blocking reload of %s.m3u8: %d\n%s", r, resp.StatusCode, body)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("blocking reload of an ended playlist held %v", d)
		}
		for _, f := range []string{sid + "_" + r + "_" + strconv.Itoa(next) + ".m4s", sid + "_" + r + "_" + strconv.Itoa(next) + ".0.m4s"} {
			if resp, _ := get(t, c, base+"/hls/live/test/"+f); resp.StatusCode != http.StatusNotFound {
				t.Fatalf("%s after the end: %d", f, resp.StatusCode)
			}
		}
	}
	resp, body := get(t, c, base+"/dash/live/test/manifest.mpd")
	mpd, err := m.MPDFromBytes(body)
	if resp.StatusCode != 200 || err != nil {
		t.Fatalf("manifest: %d %v\n%s", resp.StatusCode, err, body)
	}
	if mpd.GetType() != m.STATIC_TYPE || mpd.MediaPresentationDuration == nil || mpd.MinimumUpdatePeriod != nil {
		t.Fatalf("manifest of an ended stream:\n%s", body)
	}
}

// TestStreamEndsVisibly: when the source's publisher leaves (and does not
// return within EndGrace), when the frames just stop, and when the process
// calls End, the media playlists get EXT-X-ENDLIST and the manifest becomes
// static, for EndedLinger; after that the stream's URLs answer 404 (the
// source no longer has it).
func TestStreamEndsVisibly(t *testing.T) {
	for _, how := range []string{"unpublish", "frames stop", "End"} {
		t.Run(how, func(t *testing.T) {
			cfg := Config{EndGrace: 300 * time.Millisecond, EndedLinger: time.Second}
			if how == "End" {
				cfg.EndGrace = time.Minute
			}
			p, src, srv := testServer(t, cfg)
			sid, sub := startStream(t, src, srv.URL)
			c := srv.Client()
			sub.push(synthGOPs(2000, 2, false)[1:]...)
			sub.push(video(6000, keyframe(5000)))
			waitUntil(t, "segment 2", func() bool {
				r, _ := get(t, c, srv.URL+"/hls/live/test/"+sid+"_full_2.m4s")
				return r.StatusCode == 200
			})
			// A blocking reload waiting for a segment that will not come
			// returns as soon as the stream ends.
			waiting := make(chan string, 1)
			go func() {
				resp, err := c.Get(srv.URL + "/hls/live/test/full.m3u8?_HLS_msn=4")
				if err != nil {
					waiting <- err.Error()
					return
				}
				defer resp.Body.Close()
				var b strings.Builder
				buf := make([]byte, 4096)
				for {
					n, err := resp.Body.Read(buf)
					b.Write(buf[:n])
					if err != nil {
						break
					}
				}
				waiting <- b.String()
			}()
			time.Sleep(50 * time.Millisecond)
			ended := time.Now()
			switch how {
			case "unpublish":
				sub.push(av.NewEvent(av.EventUnpublish, 6040))
			case "End":
				p.End("live", "test")
			}
			src.mu.Lock()
			src.gone = true
			src.mu.Unlock()
			select {
			case body := <-waiting:
				if !strings.Contains(body, "#EXT-X-ENDLIST") {
					t.Fatalf("the waiting blocking reload got:\n%s", body)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the waiting blocking reload was not answered")
			}
			checkEnded(t, c, srv.URL, sid)
			// Segment 3, complete at the end, is listed and served.
			resp, body := get(t, c, srv.URL+"/hls/live/test/"+sid+"_full_3.m4s")
			if resp.StatusCode != 200 || len(body) == 0 {
				t.Fatalf("the last segment: %d", resp.StatusCode)
			}
			waitUntil(t, "the ended stream to be forgotten", func() bool { return len(p.Streams()) == 0 })
			if d := time.Since(ended); d < cfg.EndedLinger {
				t.Fatalf("the ended playlists lasted %v, want EndedLinger %v", d, cfg.EndedLinger)
			}
			for _, u := range []string{"/hls/live/test/full.m3u8", "/dash/live/test/manifest.mpd"} {
				if resp, _ := get(t, c, srv.URL+u); resp.StatusCode != http.StatusNotFound {
					t.Fatalf("%s after the ended linger: %d", u, resp.StatusCode)
				}
			}
		})
	}
}

// TestPublisherBackWithinGraceDoesNotEnd: a publisher that leaves and
// comes back within EndGrace goes on in the same playlists.
func TestPublisherBackWithinGraceDoesNotEnd(t *testing.T) {
	p, src, srv := testServer(t, Config{EndGrace: 2 * time.Second})
	sid, sub := startStream(t, src, srv.URL)
	sub.push(synthGOPs(2000, 1, false)[1:]...)
	sub.push(av.NewEvent(av.EventUnpublish, 4000), av.NewEvent(av.EventPublish, 4000))
	sub.push(video(4000, testAVCSeq), audio(4000, testAACSeq))
	sub.push(synthGOPs(4000, 2, false)...)
	sub.push(video(8000, keyframe(5000)))
	c := srv.Client()
	waitUntil(t, "segment 3", func() bool {
		r, _ := get(t, c, srv.URL+"/hls/live/test/"+sid+"_full_3.m4s")
		return r.StatusCode == 200
	})
	_, body := get(t, c, srv.URL+"/hls/live/test/full.m3u8")
	if strings.Contains(string(body), "ENDLIST") {
		t.Fatalf("ended:\n%s", body)
	}
	st, err := p.stream(context.Background(), "live", "test")
	if err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	ended := st.ended
	st.mu.Unlock()
	if ended {
		t.Fatal("stream ended")
	}
}
