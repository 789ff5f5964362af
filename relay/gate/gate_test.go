package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/hooks"
	"github.com/relaymesh/relaymesh/internal/playtoken"
)

var secret = []byte("play-secret")

func testGate(h *hooks.Client) *Gate {
	return New(Config{Protect: []string{"live"}, Keys: map[string]string{"live/keyed": "k1"},
		Tokens: &playtoken.Verifier{Secrets: [][]byte{secret}}, Hooks: h})
}

func TestCheckCredential(t *testing.T) {
	g := testGate(nil)
	good := playtoken.Sign(secret, "live", "cam", time.Now().Add(time.Minute))
	cases := []struct {
		app, name, cred string
		want            error
	}{
		{"open", "cam", "", nil},
		{"live", "cam", good, nil},
		{"live", "cam", "", ErrNoCredentials},
		{"live", "cam2", good, playtoken.ErrSignature},
		{"live", "cam", playtoken.Sign(secret, "live", "cam", time.Now().Add(-time.Second)), playtoken.ErrExpired},
		{"live", "cam", "garbage", playtoken.ErrMalformed},
		{"live", "keyed", "k1", nil},
		{"live", "keyed", "k2", ErrBadKey},
	}
	for _, c := range cases {
		if err := g.CheckCredential(c.app, c.name, c.cred); !errors.Is(err, c.want) {
			t.Errorf("%s/%s %q: %v, want %v", c.app, c.name, c.cred, err, c.want)
		}
	}
	if err := g.Check("live", "cam", url.Values{"token": {good}}); err != nil {
		t.Error(err)
	}
	// A relay's own credentials open the stream upstream.
	q, _ := url.ParseQuery(g.Credentials("live", "cam"))
	if err := g.Check("live", "cam", q); err != nil {
		t.Errorf("relay credentials: %v", err)
	}
	keyOnly := New(Config{Protect: []string{"*"}, Keys: map[string]string{"*": "a&b"}})
	q, _ = url.ParseQuery(keyOnly.Credentials("x", "y"))
	if err := keyOnly.Check("x", "y", q); err != nil {
		t.Errorf("relay key: %v", err)
	}
	if New(Config{}).Active() {
		t.Error("empty gate active")
	}
}

type hookRecorder struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []hooks.Body
	answer int
}

func newHookRecorder(t *testing.T) *hookRecorder {
	h := &hookRecorder{answer: 200}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b hooks.Body
		_ = json.NewDecoder(r.Body).Decode(&b)
		h.mu.Lock()
		h.bodies = append(h.bodies, b)
		code := h.answer
		h.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookRecorder) calls() []hooks.Body {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hooks.Body(nil), h.bodies...)
}

func TestHTTP(t *testing.T) {
	rec := newHookRecorder(t)
	hc := hooks.New(hooks.Config{OnPlay: rec.srv.URL, Timeout: time.Second})
	g := testGate(hc)
	var seen []string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.Path)
		w.WriteHeader(200)
	})
	h := g.HTTP(next)
	do := func(path string, hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		if len(hdr) == 2 {
			r.Header.Set(hdr[0], hdr[1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	good := playtoken.Sign(secret, "live", "cam", time.Now().Add(time.Minute))
	if w := do("/hls/live/cam/index.m3u8"); w.Code != 401 || w.Header().Get("WWW-Authenticate") == "" {
		t.Errorf("no token: %d", w.Code)
	}
	if w := do("/dash/live/cam/manifest.mpd"); w.Code != 401 {
		t.Errorf("dash no token: %d", w.Code)
	}
	if w := do("/hls/live/cam/t/" + playtoken.Sign(secret, "live", "other", time.Now().Add(time.Minute)) + "/index.m3u8"); w.Code != 403 {
		t.Errorf("other-stream token: %d", w.Code)
	}
	if w := do("/hls/live/cam/t/" + playtoken.Sign(secret, "live", "cam", time.Now().Add(-time.Minute)) + "/seg1.m4s"); w.Code != 403 {
		t.Errorf("expired token: %d", w.Code)
	}
	if len(seen) != 0 || len(rec.calls()) != 0 {
		t.Fatalf("refused requests reached %v, hook %v", seen, rec.calls())
	}
	// The query form of a playlist moves into the path.
	w := do("/hls/live/cam/index.m3u8?token=" + good + "&x=1")
	if w.Code != 302 || w.Header().Get("Location") != "/hls/live/cam/t/"+good+"/index.m3u8?x=1" {
		t.Fatalf("query token: %d %q", w.Code, w.Header().Get("Location"))
	}
	if w := do(w.Header().Get("Location")); w.Code != 200 || seen[len(seen)-1] != "/hls/live/cam/index.m3u8" {
		t.Fatalf("path token: %d %v", w.Code, seen)
	}
	if c := rec.calls(); len(c) != 1 || c[0].Action != hooks.OnPlay || c[0].Proto != "hls" || c[0].Stream != "cam" || !strings.Contains(c[0].Param, good) {
		t.Fatalf("hook calls %+v", c)
	}
	// The redirect's answer was remembered. Segments: no hook call; the path form and the header work.
	if w := do("/hls/live/cam/t/" + good + "/seg1.m4s"); w.Code != 200 || seen[len(seen)-1] != "/hls/live/cam/seg1.m4s" {
		t.Errorf("segment: %d %v", w.Code, seen)
	}
	if w := do("/dash/live/cam/v_1.m4s", "Authorization", "Bearer "+good); w.Code != 200 {
		t.Errorf("bearer: %d", w.Code)
	}
	if len(rec.calls()) != 1 {
		t.Errorf("hook called for segments: %d", len(rec.calls()))
	}
	// The hook refusing: 403, even with a good token; unprotected apps too.
	rec.mu.Lock()
	rec.answer = 403
	rec.mu.Unlock()
	if w := do("/dash/live/cam/t/" + good + "/manifest.mpd"); w.Code != 403 {
		t.Errorf("hook refused: %d", w.Code)
	}
	if w := do("/hls/open/cam/index.m3u8"); w.Code != 403 {
		t.Errorf("hook refused, open app: %d", w.Code)
	}
	if w := do("/hls/open/cam/ts.m3u8"); w.Code != 403 {
		t.Errorf("hook refused, the MPEG-TS playlist: %d", w.Code)
	}
	rec.mu.Lock()
	rec.answer = 200
	rec.mu.Unlock()
	if w := do("/hls/open/cam/index.m3u8"); w.Code != 200 {
		t.Errorf("open app: %d", w.Code)
	}
	if w := do("/dash/time"); w.Code != 200 {
		t.Errorf("dash time: %d", w.Code)
	}
}

func TestHTTPSessionsStop(t *testing.T) {
	var s httpSessions
	now := time.Unix(1000, 0)
	k := sessionKey{"hls", "live", "cam", "192.0.2.1"}
	s.touch(k, hooks.Body{IP: "192.0.2.1", Proto: "hls", App: "live", Stream: "cam"}, now)
	s.touch(k, hooks.Body{}, now.Add(40*time.Second))
	if !s.active(k, now.Add(60*time.Second)) || s.active(k, now.Add(71*time.Second)) {
		t.Fatal("active")
	}
	if b := s.expire(now.Add(60*time.Second), HTTPIdle); len(b) != 0 {
		t.Fatalf("stopped while active: %+v", b)
	}
	b := s.expire(now.Add(70*time.Second), HTTPIdle)
	if len(b) != 1 || b[0].Action != hooks.OnStop || b[0].Stream != "cam" || b[0].Duration != "40s" {
		t.Fatalf("on_stop %+v", b)
	}
}

// A token that expires while its viewer plays keeps it playing; it does
// not start a session, nor carry one that went idle.
func TestExpiredTokenCarriesActiveSession(t *testing.T) {
	g := testGate(nil)
	h := g.HTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
	do := func(ip, tok string) int {
		r := httptest.NewRequest("GET", "/hls/live/cam/t/"+tok+"/seg.m4s", nil)
		r.RemoteAddr = ip + ":1234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	soon := playtoken.Sign(secret, "live", "cam", time.Now().Add(1500*time.Millisecond))
	if c := do("192.0.2.1", soon); c != 200 {
		t.Fatalf("fresh: %d", c)
	}
	time.Sleep(2 * time.Second)
	if c := do("192.0.2.1", soon); c != 200 {
		t.Errorf("expired, session active: %d", c)
	}
	if c := do("192.0.2.2", soon); c != 403 {
		t.Errorf("expired, new viewer: %d", c)
	}
	old := playtoken.Sign(secret, "live", "cam", time.Now().Add(-SessionMax-time.Minute))
	if c := do("192.0.2.1", old); c != 403 {
		t.Errorf("expired beyond SessionMax: %d", c)
	}
	g.sessions.expire(time.Now().Add(time.Minute), HTTPIdle)
	if c := do("192.0.2.1", soon); c != 403 {
		t.Errorf("expired, session ended: %d", c)
	}
}

func TestPathSafe(t *testing.T) {
	for s, want := range map[string]bool{"abc-DEF_1.2~": true, playtoken.Sign(secret, "a", "b", time.Now()): true,
		"": false, ".": false, "..": false, "a/b": false, "a%2Fb": false, "a b": false, "a?b": false} {
		if PathSafe(s) != want {
			t.Errorf("PathSafe(%q) = %v", s, !want)
		}
	}
}

func TestRefusalReasons(t *testing.T) {
	for err, want := range map[error]string{
		ErrNoCredentials: "no_credentials", ErrBadKey: "bad_key", playtoken.ErrExpired: "token_expired",
		playtoken.ErrSignature: "bad_token", &hooks.Denied{Event: hooks.OnPlay, Status: 403}: "hook_refused",
		fmt.Errorf("%w: x", hooks.ErrUnavailable): "hook_unavailable",
	} {
		if got := reason(err); got != want {
			t.Errorf("reason(%v) = %s, want %s", err, got, want)
		}
	}
}
