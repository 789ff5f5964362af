package packager

import (
	"context"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
)

func TestHTTPHeaders(t *testing.T) {
	_, src, srv := testServer(t, Config{})
	sid, sub := startStream(t, src, srv.URL)
	sub.push(synthGOPs(2000, 1, false)[1:]...)
	sub.push(video(4000, keyframe(5000)))
	c := srv.Client()
	base := srv.URL + "/hls/live/test/"

	waitUntil(t, "segment 1", func() bool {
		r, _ := get(t, c, base+sid+"_full_1.m4s")
		return r.StatusCode == 200 && r.ContentLength > 0
	})
	cases := []struct {
		url, ctype, cache string
	}{
		{base + "index.m3u8", ctypeM3U8, cachePlaylist},
		{base + "full.m3u8", ctypeM3U8, cachePlaylist},
		{base + "audio.m3u8", ctypeM3U8, cachePlaylist},
		{srv.URL + "/dash/live/test/manifest.mpd", ctypeMPD, cachePlaylist},
		{base + sid + "_full_init.mp4", ctypeMP4V, cacheMedia},
		{base + sid + "_audio_init.mp4", ctypeMP4A, cacheMedia},
		{base + sid + "_lite_0.m4s", ctypeMP4V, cacheMedia},
		{base + sid + "_full_0.3.m4s", ctypeMP4V, cacheMedia},
		{srv.URL + "/dash/live/test/" + sid + "_key_t0.m4s", ctypeMP4V, cacheMedia},
	}
	for _, tc := range cases {
		resp, body := get(t, c, tc.url)
		h := resp.Header
		if resp.StatusCode != 200 || h.Get("Content-Type") != tc.ctype || h.Get("Cache-Control") != tc.cache || len(body) == 0 {
			t.Fatalf("%s: %d %q %q, %d bytes", tc.url, resp.StatusCode, h.Get("Content-Type"), h.Get("Cache-Control"), len(body))
		}
		if h.Get("Access-Control-Allow-Origin") != "*" || h.Get("ETag") == "" {
			t.Fatalf("%s: CORS %q ETag %q", tc.url, h.Get("Access-Control-Allow-Origin"), h.Get("ETag"))
		}
		// Without it a player's page on another origin cannot time its
		// downloads with Resource Timing (dash.js then skips fast ones).
		if h.Get("Timing-Allow-Origin") != "*" {
			t.Fatalf("%s: Timing-Allow-Origin %q", tc.url, h.Get("Timing-Allow-Origin"))
		}
		// A revalidation with the ETag gets 304.
		req, _ := http.NewRequest("GET", tc.url, nil)
		req.Header.Set("If-None-Match", h.Get("ETag"))
		r2, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r2.Body.Close()
		if r2.StatusCode != http.StatusNotModified && !strings.HasSuffix(tc.url, ".m3u8") && !strings.HasSuffix(tc.url, ".mpd") {
			t.Fatalf("%s: revalidation gave %d", tc.url, r2.StatusCode)
		}
		// HEAD: headers with the length, no body.
		hr, err := c.Head(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		hr.Body.Close()
		if hr.StatusCode != 200 || hr.ContentLength != int64(len(body)) && !strings.Contains(tc.url, "m3u8") && !strings.Contains(tc.url, "mpd") {
			t.Fatalf("HEAD %s: %d length %d", tc.url, hr.StatusCode, hr.ContentLength)
		}
	}
	// Segments carry Last-Modified; a byte range works.
	req, _ := http.NewRequest("GET", base+sid+"_full_0.m4s", nil)
	req.Header.Set("Range", "bytes=0-7")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent || resp.Header.Get("Last-Modified") == "" {
		t.Fatalf("range: %d, Last-Modified %q", resp.StatusCode, resp.Header.Get("Last-Modified"))
	}
	// The time endpoint of the DASH manifest's UTCTiming.
	resp, body := get(t, c, srv.URL+"/dash/time")
	if _, err := time.Parse(time.RFC3339, string(body)); err != nil || resp.Header.Get("Cache-Control") != cacheNone {
		t.Fatalf("time: %q %v", body, err)
	}
}

func TestHTTPErrors(t *testing.T) {
	_, src, srv := testServer(t, Config{MaxWait: 300 * time.Millisecond})
	c := srv.Client()
	for _, path := range []string{
		"/hls/live/absent/index.m3u8", // unknown stream
		"/hls/live/test/nope.m3u8",    // unknown file
		"/hls/live/test/deadbeef_full_x.m4s",
		"/hls/live/../test/index.m3u8",
		"/hls/live/test/sub/index.m3u8",
		"/other/live/test/index.m3u8",
		"/dash/live/test/index.m3u8",
	} {
		if resp, _ := get(t, c, srv.URL+path); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s: %d, want 404", path, resp.StatusCode)
		}
	}
	resp, err := c.Post(srv.URL+"/hls/live/test/index.m3u8", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("OPTIONS", srv.URL+"/hls/live/test/index.m3u8", nil)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Methods") == "" {
		t.Fatalf("OPTIONS: %d", resp.StatusCode)
	}

	// A stream without a keyframe yet: 503 with Retry-After.
	go func() { src.current(t).push(video(0, testAVCSeq), audio(0, testAACSeq), video(0, interframe(100))) }()
	resp, _ = get(t, c, srv.URL+"/hls/live/test/index.m3u8")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || resp.Header.Get("Cache-Control") != cacheNone {
		t.Fatalf("no keyframe: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp, _ = get(t, c, srv.URL+"/dash/live/test/manifest.mpd")
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("no keyframe, DASH: %d", resp.StatusCode)
	}
	// A blocking request too far ahead is a client error.
	src.current(t).push(synthGOPs(40, 2, false)...)
	waitUntil(t, "a playlist", func() bool {
		r, _ := get(t, c, srv.URL+"/hls/live/test/full.m3u8")
		return r.StatusCode == 200
	})
	if resp, _ := get(t, c, srv.URL+"/hls/live/test/full.m3u8?_HLS_msn=99"); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("msn too far ahead: %d", resp.StatusCode)
	}
}

// TestSlowClient: a client that stops reading a segment in progress never
// stalls the packager or other clients, and its response is abandoned after
// the write timeout.
func TestSlowClient(t *testing.T) {
	var closed atomic.Int32
	_, src, srv := testServer(t, Config{WriteTimeout: 300 * time.Millisecond, MaxWait: 5 * time.Second}, func(s *http.Server) {
		s.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed {
				closed.Add(1)
			}
		}
	})
	sid, sub := startStream(t, src, srv.URL)
	// The slow client asks for segment 1 (in progress) and reads nothing.
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	_, _ = conn.Write([]byte("GET /dash/live/test/" + sid + "_full_t180000.m4s HTTP/1.1\r\nHost: x\r\n\r\n"))
	// Big frames: megabytes the socket buffers cannot hold.
	before := closed.Load()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i < 40; i++ {
			sub.push(video(uint32(2000+i*40), interframe(500_000)))
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the packager stalled behind a slow client")
	}
	// Other clients are served meanwhile.
	if resp, _ := get(t, srv.Client(), srv.URL+"/hls/live/test/full.m3u8"); resp.StatusCode != 200 {
		t.Fatalf("playlist: %d", resp.StatusCode)
	}
	waitUntil(t, "the slow client's connection to be dropped", func() bool { return closed.Load() > before })
}

func TestLingerStopsIdleStreams(t *testing.T) {
	// Linger long enough that a loaded machine still sees the stream
	// running right after its start (100 ms failed at load average 12).
	p, src, srv := testServer(t, Config{Linger: time.Second})
	_, sub := startStream(t, src, srv.URL)
	if len(p.Streams()) != 1 {
		t.Fatal("stream not running")
	}
	waitUntil(t, "the idle stream to stop", func() bool { return len(p.Streams()) == 0 })
	select {
	case <-sub.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("subscription not closed")
	}
	// The next request starts it again.
	go func() {
		s := src.current(t)
		for s == sub {
			time.Sleep(time.Millisecond)
			s = src.current(t)
		}
		s.push(synthGOPs(0, 2, true)...)
	}()
	if resp, _ := get(t, srv.Client(), srv.URL+"/hls/live/test/index.m3u8"); resp.StatusCode != 200 {
		t.Fatalf("restart: %d", resp.StatusCode)
	}
	if src.subs != 2 {
		t.Fatalf("%d subscriptions", src.subs)
	}
}

func TestAlwaysOnKeepsStreams(t *testing.T) {
	p, src, _ := testServer(t, Config{Linger: 50 * time.Millisecond, Default: AppConfig{AlwaysOn: true}})
	if err := p.Start(context.Background(), "live", "test"); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background(), "live", "absent"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("absent stream: %v", err)
	}
	src.current(t).push(synthGOPs(0, 1, true)...)
	time.Sleep(300 * time.Millisecond) // several lingers
	if len(p.Streams()) != 1 {
		t.Fatal("an always-on stream stopped")
	}
}

func TestViewersCounted(t *testing.T) {
	p, src, srv := testServer(t, Config{})
	startStream(t, src, srv.URL)
	c := srv.Client()
	for _, q := range []string{"?session=a", "?session=b", "?token=a", "?session=a", ""} {
		get(t, c, srv.URL+"/hls/live/test/index.m3u8"+q)
	}
	// session a, session b, token a, and the address of the plain requests.
	if got := value(t, p.m.viewers.WithLabelValues("live", "test")); got != 4 {
		t.Fatalf("%v viewers, want 4", got)
	}
	if value(t, p.m.bytes.WithLabelValues("playlist")) == 0 {
		t.Fatal("bytes served not counted")
	}
}

func TestConfigRejectsUnknownFormat(t *testing.T) {
	if _, err := New(newPushSource(), Config{Apps: map[string]AppConfig{"x": {HLS: "dash"}}}); err == nil {
		t.Fatal("accepted an unknown HLS format")
	}
}

func FuzzParseFile(f *testing.F) {
	for _, s := range []string{"index.m3u8", "full.m3u8", "manifest.mpd", "0123abcd_full_init.mp4", "0123abcd_lite_12.m4s",
		"0123abcd_audio_3.4.m4s", "0123abcd_key_t90000.m4s", "0123abcd_full_7.ts",
		"muxed.m3u8", "0123abcd_muxed_init.mp4", "0123abcd_muxed_9.m4s"} {
		f.Add("hls", s)
	}
	f.Fuzz(func(t *testing.T, proto, file string) {
		req, ok := parseFile(proto, file)
		if ok && req.kind == 0 {
			t.Fatalf("%q parsed to no kind", file)
		}
		if ok && req.rend >= numRenditions {
			t.Fatalf("%q: rendition %d", file, req.rend)
		}
		if ok && req.muxed && (proto != "hls" || req.rend != Full || req.kind == filePart || req.kind == fileTS) {
			t.Fatalf("%q: muxed %+v", file, req)
		}
	})
}

// TestOldSessionServedAfterCodecChange: after a codec change, the files of
// the earlier session that playlists still list (init, segments, parts, DASH
// segments by time) stay available, and the new session's too.
func TestOldSessionServedAfterCodecChange(t *testing.T) {
	_, src, srv := testServer(t, Config{})
	old, sub := startStream(t, src, srv.URL)
	sub.push(synthGOPs(2000, 1, false)[1:]...)
	sub.push(av.NewEvent(av.EventUnpublish, 4000), av.NewEvent(av.EventPublish, 4000))
	sub.push(video(4000, testAVCSeqSmall), audio(4000, testAACSeq))
	sub.push(synthGOPs(4000, 1, false)...)
	sub.push(video(6000, keyframe(5000)))
	c := srv.Client()
	base := srv.URL + "/hls/live/test/"
	var sid string
	waitUntil(t, "the new session's first segment", func() bool {
		_, pl := get(t, c, base+"full.m3u8")
		m := regexp.MustCompile(`DISCONTINUITY\n#EXT-X-MAP:URI="([0-9a-f]{8})_full_init.mp4"`).FindSubmatch(pl)
		if m == nil {
			return false
		}
		sid = string(m[1])
		return strings.Contains(string(pl), sid+"_full_2.m4s")
	})
	for _, u := range []string{
		base + old + "_full_init.mp4", base + old + "_audio_init.mp4", base + old + "_key_1.m4s", base + old + "_full_1.3.m4s",
		srv.URL + "/dash/live/test/" + old + "_full_t180000.m4s",
		base + sid + "_full_init.mp4", base + sid + "_lite_2.m4s", srv.URL + "/dash/live/test/" + sid + "_full_t360000.m4s",
	} {
		if resp, body := get(t, c, u); resp.StatusCode != 200 || len(body) == 0 {
			t.Errorf("%s: %d", u, resp.StatusCode)
		}
	}
	if resp, _ := get(t, c, base+"00000000_full_init.mp4"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown session: %d", resp.StatusCode)
	}
}
