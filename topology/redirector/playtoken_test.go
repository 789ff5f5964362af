package redirector

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/playtoken"
)

// With a play token signer the redirect carries the stream's token: ?token=
// for RTMP, the /t/TOKEN/ directory for HLS and DASH.
func TestRedirectCarriesPlayToken(t *testing.T) {
	secret := []byte("play")
	r := newTest(t, nil, Config{DevIP: true, PlayToken: func(app, name string) string {
		return playtoken.Sign(secret, app, name, time.Now().Add(time.Minute))
	}})
	h := r.Handler()
	v := &playtoken.Verifier{Secrets: [][]byte{secret}}
	for _, proto := range []string{"rtmp", "hls", "dash"} {
		w := get(t, h, "/play/live/cam?proto="+proto+"&ip=198.51.100.7", nil)
		loc := w.Header().Get("Location")
		base, tok, ok := strings.Cut(loc, "?"+PlayParam+"=")
		if proto != "rtmp" {
			var rest string
			base, rest, ok = strings.Cut(loc, "/t/")
			tok, _, _ = strings.Cut(rest, "/")
			ok = ok && (strings.HasSuffix(loc, "/"+tok+"/index.m3u8") || strings.HasSuffix(loc, "/"+tok+"/manifest.mpd"))
		}
		if w.Code != http.StatusFound || !ok || strings.Contains(base, "?") {
			t.Fatalf("%s: %d %q", proto, w.Code, loc)
		}
		if err := v.Verify(tok, "live", "cam"); err != nil {
			t.Fatalf("%s: token %v", proto, err)
		}
	}
	if c := choice(t, h, "/play/live/cam?proto=hls&ip=198.51.100.7"); c.PlayToken == "" || !strings.HasSuffix(c.URL, "/hls/live/cam/t/"+c.PlayToken+"/index.m3u8") {
		t.Fatalf("json: %+v", c)
	}
	// Without a signer: no token.
	r = newTest(t, nil, Config{DevIP: true})
	if loc := get(t, r.Handler(), "/play/live/cam?ip=198.51.100.7", nil).Header().Get("Location"); strings.Contains(loc, "token") {
		t.Fatalf("token without signer: %q", loc)
	}
}

// A server reporting RTMPS/HTTPS listeners gets viewers there when they ask
// with ?tls=1 or come over HTTPS (or via a trusted proxy saying so).
func TestRedirectToTLSListeners(t *testing.T) {
	r := newTest(t, nil, Config{DevIP: true, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	r.onStatus(bus.Status{ID: "primary", RTMP: "127.0.0.1:1935", HTTP: "127.0.0.1:8080", RTMPS: "127.0.0.1:1943", HTTPS: "127.0.0.1:8443", Time: time.Now()})
	h := r.Handler()
	loc := func(q string, hdr map[string]string) string {
		return get(t, h, "/play/live/cam?ip=198.51.100.7&"+q, hdr).Header().Get("Location")
	}
	if l := loc("proto=hls", nil); l != "http://127.0.0.1:8080/hls/live/cam/index.m3u8" {
		t.Errorf("plain: %q", l)
	}
	if l := loc("proto=hls&tls=1", nil); l != "https://127.0.0.1:8443/hls/live/cam/index.m3u8" {
		t.Errorf("tls=1: %q", l)
	}
	if l := loc("proto=rtmp&tls=1", nil); l != "rtmps://127.0.0.1:1943/live/cam" {
		t.Errorf("rtmp tls=1: %q", l)
	}
	if l := loc("proto=dash", map[string]string{"X-Forwarded-Proto": "https"}); l != "https://127.0.0.1:8443/dash/live/cam/manifest.mpd" {
		t.Errorf("forwarded https: %q", l)
	}
	if l := loc("proto=dash&tls=0", map[string]string{"X-Forwarded-Proto": "https"}); !strings.HasPrefix(l, "http://127.0.0.1:8080/") {
		t.Errorf("tls=0: %q", l)
	}
	req := httptest.NewRequest("GET", "https://redirector/play/live/cam?ip=198.51.100.7&proto=hls", nil)
	req.RemoteAddr = "192.0.2.1:5555"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if l := w.Header().Get("Location"); !strings.HasPrefix(l, "https://127.0.0.1:8443/") {
		t.Errorf("request over TLS: %q", l)
	}
}

// ?proto=hls&format=ts sends a player to the relay's MPEG-TS playlist
// (ts.m3u8), with the CORS headers of every answer; format is for HLS only.
func TestRedirectFormatTS(t *testing.T) {
	r := newTest(t, nil, Config{DevIP: true})
	h := r.Handler()
	w := get(t, h, "/play/live/cam?proto=hls&format=ts&ip=198.51.100.7", map[string]string{"Origin": "http://player.example"})
	if loc := w.Header().Get("Location"); w.Code != http.StatusFound || !strings.HasSuffix(loc, "/hls/live/cam/ts.m3u8") || w.Header().Get("Access-Control-Allow-Origin") == "" {
		t.Fatalf("%d %q %v", w.Code, loc, w.Header())
	}
	if c := choice(t, h, "/play/live/cam?proto=hls&format=ts&ip=198.51.100.7"); !strings.HasSuffix(c.URL, "/hls/live/cam/ts.m3u8") {
		t.Fatalf("json: %+v", c)
	}
	for _, q := range []string{"proto=dash&format=ts", "proto=rtmp&format=ts", "proto=dash&format=fmp4", "proto=hls&format=mp4"} {
		if w := get(t, h, "/play/live/cam?"+q+"&ip=198.51.100.7", nil); w.Code != http.StatusBadRequest {
			t.Errorf("%s: %d", q, w.Code)
		}
	}
}

// Without a format, the players whose fMP4 HLS ends or breaks at a new
// init segment (a publisher's reconnection: VLC, libavformat's ffmpeg and
// ffplay, mpv) are sent to ts.m3u8, the others to index.m3u8; format=fmp4
// and format=ts choose for any player; the answer varies with the
// User-Agent.
func TestRedirectFormatByPlayer(t *testing.T) {
	r := newTest(t, nil, Config{DevIP: true})
	h := r.Handler()
	for _, tc := range []struct{ ua, query, want string }{
		{"VLC/3.0.21 LibVLC/3.0.21", "proto=hls", "ts.m3u8"},
		{"Lavf/59.27.100", "proto=hls", "ts.m3u8"},
		{"libmpv", "proto=hls", "ts.m3u8"},
		{"Lavf/59.27.100", "proto=hls&format=fmp4", "index.m3u8"},
		{"VLC/3.0.21 LibVLC/3.0.21", "proto=dash", "manifest.mpd"},
		{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36", "proto=hls", "index.m3u8"},
		{"GStreamer souphttpsrc 1.22.0 libsoup/3.2.2", "proto=hls", "index.m3u8"},
		{"AppleCoreMedia/1.0.0.21A329 (iPhone; U; CPU OS 17_0 like Mac OS X; en_us)", "proto=hls", "index.m3u8"},
		{"", "proto=hls&format=ts", "ts.m3u8"},
	} {
		w := get(t, h, "/play/live/cam?"+tc.query+"&ip=198.51.100.7", map[string]string{"User-Agent": tc.ua})
		if loc := w.Header().Get("Location"); w.Code != http.StatusFound || !strings.HasSuffix(loc, "/live/cam/"+tc.want) {
			t.Errorf("%q %s: %d %q, want …/%s", tc.ua, tc.query, w.Code, loc, tc.want)
		}
		if tc.query == "proto=hls" && !strings.Contains(w.Header().Get("Vary"), "User-Agent") {
			t.Errorf("%q %s: Vary %q", tc.ua, tc.query, w.Header().Get("Vary"))
		}
	}
}
