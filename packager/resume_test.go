package packager

import (
	"net/http"
	"strings"
	"testing"
	"time"

	m "github.com/Eyevinn/dash-mpd/mpd"
	"github.com/bluenviron/gohlslib/v2/pkg/playlist"
)

// TestRestartContinuesTimeline: a stream whose packager stopped for want of
// viewers and starts again goes on with its media sequence, one
// discontinuity later, with the same session id (file prefix) when the
// codec parameters are the same and the media times moved on; when they
// went back (a publisher that restarted its clock) the id is new, and the
// sequence still goes on.
func TestRestartContinuesTimeline(t *testing.T) {
	p, src, srv := testServer(t, Config{Linger: 200 * time.Millisecond})
	c := srv.Client()
	media := func() (*playlist.Media, string) {
		t.Helper()
		resp, body := get(t, c, srv.URL+"/hls/live/test/full.m3u8")
		var pl playlist.Media
		if err := pl.Unmarshal(body); resp.StatusCode != 200 || err != nil {
			t.Fatalf("%d %v\n%s", resp.StatusCode, err, body)
		}
		return &pl, string(body)
	}
	period := func() string {
		t.Helper()
		_, body := get(t, c, srv.URL+"/dash/live/test/manifest.mpd")
		mpd, err := m.MPDFromBytes(body)
		if err != nil || len(mpd.Periods) == 0 {
			t.Fatalf("%v\n%s", err, body)
		}
		return mpd.Periods[len(mpd.Periods)-1].Id
	}
	// A run from a request: the stream starts, the source sends frames.
	run := func(from uint32, gops int) {
		t.Helper()
		before := src.subs
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err := http.Get(srv.URL + "/hls/live/test/index.m3u8")
			if err == nil {
				resp.Body.Close()
			}
		}()
		waitUntil(t, "a new subscription", func() bool {
			src.mu.Lock()
			defer src.mu.Unlock()
			return src.subs > before
		})
		src.current(t).push(synthGOPs(from, gops, true)...)
		<-done
		waitUntil(t, "the segments", func() bool {
			pl, _ := media()
			return len(pl.Segments) >= gops-1
		})
	}
	stopped := func() {
		t.Helper()
		waitUntil(t, "the idle stream to stop", func() bool { return len(p.Streams()) == 0 })
	}

	run(0, 4) // segments 0-2 complete, 3 in progress
	first, body := media()
	sid := body[strings.Index(body, `URI="`)+5:][:8]
	if first.MediaSequence != 0 || first.DiscontinuitySequence != nil {
		t.Fatalf("first run:\n%s", body)
	}
	if period() != sid {
		t.Fatalf("first period %q, want %q", period(), sid)
	}
	stopped()

	run(60000, 4) // the publisher went on meanwhile
	second, body := media()
	if second.MediaSequence != 4 || second.DiscontinuitySequence == nil || *second.DiscontinuitySequence != 1 {
		t.Fatalf("second run: want MEDIA-SEQUENCE 4 and DISCONTINUITY-SEQUENCE 1\n%s", body)
	}
	if !strings.Contains(body, `URI="`+sid+`_full_init.mp4"`) || !strings.Contains(body, sid+"_full_4.m4s") {
		t.Fatalf("second run: want session id %s kept\n%s", sid, body)
	}
	if pid := period(); pid == sid || !strings.HasPrefix(pid, sid) {
		t.Fatalf("second period %q: want a new Period id for the new run of %s", pid, sid)
	}
	stopped()

	run(0, 4) // the media clock went back: a new id, the sequence goes on
	third, body := media()
	if third.MediaSequence != 8 || third.DiscontinuitySequence == nil || *third.DiscontinuitySequence != 2 {
		t.Fatalf("third run: want MEDIA-SEQUENCE 8 and DISCONTINUITY-SEQUENCE 2\n%s", body)
	}
	if strings.Contains(body, sid+"_") {
		t.Fatalf("third run kept the id %s with media times that went back\n%s", sid, body)
	}
}
