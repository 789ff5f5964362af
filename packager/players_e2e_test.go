package packager

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// playersServer packages a real encoder's stream (live/b, 2 s GOP,
// B-frames) over loopback, a publisher a few seconds ahead and then real
// time.
func playersServer(t *testing.T) *httptest.Server {
	t.Helper()
	frames := encode(t, 8, "-bf", "3")
	src := &fakeSource{}
	src.add("live", "b", &clip{frames: frames, burst: 4500 * time.Millisecond, speed: 1})
	p, err := New(src, Config{Logger: discardLogger(), Registerer: prometheus.NewRegistry()})
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
// 302 to the relay's manifest, as /play does) plays the stream: the
// manifest's absolute BaseURL sends every segment request to the relay,
// none to the redirector.
func TestDASHThroughRedirect(t *testing.T) {
	srv := playersServer(t)
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
		return strings.Contains(string(b), "<S ")
	})
	runTool(t, "ffmpeg", "-hide_banner", "-v", "warning", "-i", redir.URL+"/play/live/b?proto=dash",
		"-map", "0:v:0", "-map", "0:a:0", "-t", "3", "-f", "null", "-")
	mu.Lock()
	defer mu.Unlock()
	if len(strays) > 0 {
		t.Errorf("requests that reached the redirector: %v", strays)
	}
}
