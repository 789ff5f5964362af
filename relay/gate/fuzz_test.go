package gate

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/playtoken"
)

// FuzzHTTPPath: whatever the path and query, a request the packager would
// serve for the protected app never gets past the gate without a valid
// credential (which the fuzzer cannot forge), and nothing panics.
func FuzzHTTPPath(f *testing.F) {
	tok := playtoken.Sign(secret, "live", "cam", time.Unix(4_000_000_000, 0))
	for _, s := range []string{"/hls/live/cam/index.m3u8", "/hls/live/cam/t/" + tok + "/index.m3u8", "/dash/live/cam/t/x/manifest.mpd",
		"/hls/live/cam/index.m3u8?token=" + tok, "/hls//live/cam/t//a", "/dash/time", "/hls/live/t/t/t/t", "/hls/live/cam/a.m3u8?key="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || !strings.HasPrefix(u.Path, "/") {
			return
		}
		g := testGate(nil)
		var seen string
		h := g.HTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = r.URL.Path }))
		r := httptest.NewRequest("GET", "/", nil)
		r.URL = u
		h.ServeHTTP(httptest.NewRecorder(), r)
		if seen == "" {
			return
		}
		// The packager's own reading of the path.
		rest, ok := strings.CutPrefix(seen, "/hls/")
		if !ok {
			rest, ok = strings.CutPrefix(seen, "/dash/")
		}
		if !ok {
			return
		}
		parts := strings.Split(rest, "/")
		if len(parts) == 3 && parts[0] == "live" && !strings.Contains(target, tok) && parts[1] != "keyed" {
			t.Fatalf("%q reached the packager as %q without a credential", target, seen)
		}
	})
}
