package redirector

import (
	"net/http"
	"strings"
	"testing"
	"time"

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
