package redirector

import (
	"net/http"
	"strings"
	"testing"
)

func TestDASHSubresourcesFollowTheToken(t *testing.T) {
	r := steerMesh(t)
	h := r.Handler()
	// A viewer in Tokyo asks for the MPD: relay-as, and a token cookie for /play/live/.
	w := get(t, h, "/play/live/a?proto=dash&ip=203.0.113.5", nil)
	if w.Code != http.StatusFound || !strings.HasPrefix(w.Header().Get("Location"), "http://127.0.0.1:40001/dash/live/a/") {
		t.Fatalf("play: %d %q", w.Code, w.Header().Get("Location"))
	}
	cookie := w.Header().Get("Set-Cookie")
	if !strings.Contains(cookie, "Path=/play/live/;") && !strings.HasSuffix(cookie, "Path=/play/live/") {
		t.Fatalf("cookie %q", cookie)
	}
	// Its client resolves the MPD's relative URLs against /play/live/a.
	value := strings.SplitN(strings.SplitN(cookie, ";", 2)[0], "=", 2)[1]
	for _, file := range []string{"0a1b2c3d_full_init.mp4", "0a1b2c3d_audio_t123456.m4s"} {
		w = get(t, h, "/play/live/"+file, map[string]string{"Cookie": TokenCookie + "=" + value})
		if w.Code != http.StatusFound || w.Header().Get("Location") != "http://127.0.0.1:40001/dash/live/a/"+file {
			t.Errorf("%s: %d %q", file, w.Code, w.Header().Get("Location"))
		}
	}
	// Without the token, or with a bad one: nothing to go by.
	for _, hdr := range []map[string]string{nil, {"Cookie": TokenCookie + "=garbage"}} {
		if w := get(t, h, "/play/live/0a1b2c3d_full_init.mp4", hdr); w.Code != http.StatusNotFound {
			t.Errorf("%v: %d", hdr, w.Code)
		}
	}
	// A stream whose name merely ends in .mp4 is still a stream.
	if w := get(t, h, "/play/live/movie.mp4?ip=203.0.113.5", map[string]string{"Accept": "application/json"}); w.Code != http.StatusOK {
		t.Errorf("stream movie.mp4: %d", w.Code)
	}
}
