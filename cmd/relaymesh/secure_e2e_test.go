package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/geo"
	"github.com/relaymesh/relaymesh/internal/certreload"
	"github.com/relaymesh/relaymesh/internal/hooks"
	"github.com/relaymesh/relaymesh/internal/playtoken"
	"github.com/relaymesh/relaymesh/internal/rtmp"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/redirector"
)

// hookServer records the bodies the hooks POST, by path (/on_play, …),
// and answers with the status and after the delay set for that path.
type hookServer struct {
	url    string
	mu     sync.Mutex
	bodies map[string][]hooks.Body
	answer map[string]int
	delay  map[string]time.Duration
}

func newHookServer(t *testing.T) *hookServer {
	t.Helper()
	h := &hookServer{bodies: map[string][]hooks.Body{}, answer: map[string]int{}, delay: map[string]time.Duration{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b hooks.Body
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&b); err != nil {
			t.Errorf("hook %s: body: %v", r.URL.Path, err)
		}
		h.mu.Lock()
		h.bodies[r.URL.Path] = append(h.bodies[r.URL.Path], b)
		code, d := h.answer[r.URL.Path], h.delay[r.URL.Path]
		h.mu.Unlock()
		if d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
			}
		}
		if code == 0 {
			code = http.StatusNoContent
		}
		w.WriteHeader(code)
	})}
	ln := listen(t)
	h.url = "http://" + ln.Addr().String()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return h
}

func (h *hookServer) set(path string, code int, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answer[path], h.delay[path] = code, d
}

// wait returns the first body POSTed to path that matches.
func (h *hookServer) wait(t *testing.T, path string, match func(hooks.Body) bool) hooks.Body {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		for _, b := range h.bodies[path] {
			if match(b) {
				h.mu.Unlock()
				return b
			}
		}
		h.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no %s hook call matched; got %+v", path, h.bodies[path])
	return hooks.Body{}
}

// playOutcome plays app/name (name may carry ?query) over RTMP and returns
// the status answered: Play.Start, or the refusal.
func playOutcome(t *testing.T, addr, app, name string) rtmp.Status {
	t.Helper()
	st, err, _ := playStatus(t, addr, app, name)
	if err == nil {
		return rtmp.Status{Level: "status", Code: rtmp.CodePlayStart}
	}
	if st.Code == "" {
		t.Fatalf("play %s/%s on %s: %v", app, name, addr, err)
	}
	return st
}

// redirectorToken asks a redirector, wired like the orchestrator's with
// --play-token-secret, where to play app/name, and returns the Location.
func redirectorLocation(t *testing.T, secret, app, name, proto string) string {
	t.Helper()
	g, err := graph.DevWorld()
	if err != nil {
		t.Fatal(err)
	}
	db, err := geo.OpenDefault()
	if err != nil {
		t.Fatal(err)
	}
	r, err := redirector.New(redirector.Config{Graph: g, Geo: db, DevIP: true, PlayToken: playTokenSigner(secret, time.Hour, time.Minute)}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	srv := &http.Server{Handler: r.Handler()}
	ln := listen(t)
	go srv.Serve(ln)
	defer srv.Close()
	resp, err := c.Get("http://" + ln.Addr().String() + "/play/" + app + "/" + name + "?proto=" + proto + "&ip=198.51.100.7")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("redirector: %d", resp.StatusCode)
	}
	return resp.Header.Get("Location")
}

// tokenOf returns the play token of a redirect: ?token= (RTMP) or the
// /t/TOKEN/ directory (HLS, DASH).
func tokenOf(t *testing.T, location string) string {
	t.Helper()
	u, err := url.Parse(location)
	if err != nil {
		t.Fatal(err)
	}
	tok := u.Query().Get("token")
	if _, rest, ok := strings.Cut(u.Path, "/t/"); ok {
		tok, _, _ = strings.Cut(rest, "/")
	}
	if tok == "" {
		t.Fatalf("no token in %q", location)
	}
	return tok
}

// pathOf is the path of a redirect's Location (to ask a test's relay).
func pathOf(t *testing.T, location string) string {
	t.Helper()
	u, err := url.Parse(location)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}

func httpStatus(t *testing.T, c *http.Client, u string) int {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// decodes runs ffmpeg on u for a few seconds of media and reports its errors.
func decodes(t *testing.T, u string, extra ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	args := append([]string{"-hide_banner", "-v", "error", "-rw_timeout", "10000000"}, extra...)
	args = append(args, "-i", u, "-t", "3", "-f", "null", "-")
	out, err := exec.CommandContext(ctx, "ffmpeg", args...).CombinedOutput()
	if err != nil {
		return errors.New(err.Error() + ": " + tail(string(out), 600))
	}
	return nil
}

// TestPlayAuthorization: a protected app refuses RTMP, HLS and DASH viewers
// without a token (NetStream.Play.Failed with a reason; 401), with an
// expired or other-stream token (Play.Failed; 403), and plays through a
// relay with the token of the redirector's redirect; the relay pulls with a
// token of its own. The hooks are called with their documented bodies,
// and their answers (refusal, timeout with fail-closed and fail-open) are
// obeyed.
func TestPlayAuthorization(t *testing.T) {
	t.Parallel()
	requireTool(t, "ffmpeg", "ffprobe")
	const secret = "play-s3cret"
	hk := newHookServer(t)
	p := startNode(t, runPrimary, "", "--publish-key", "cam=s3cret", "--play-protect", "live", "--play-token-secret", secret,
		"--hook-on-publish", hk.url+"/on_publish", "--hook-on-unpublish", hk.url+"/on_unpublish")
	r := startNode(t, runRelay, "", "--id", "r1", "--upstream", "rtmp://"+p.rtmp, "--play-protect", "live",
		"--play-token-secret", secret, "--hook-on-play", hk.url+"/on_play", "--hook-on-stop", hk.url+"/on_stop", "--hook-timeout", "500ms")
	// Fail-open relay whose on_play never answers in time.
	hk.set("/slow", http.StatusNoContent, 5*time.Second)
	open := startNode(t, runRelay, "", "--id", "r2", "--upstream", "rtmp://"+p.rtmp, "--play-protect", "live",
		"--play-token-secret", secret, "--hook-on-play", hk.url+"/slow", "--hook-timeout", "300ms", "--hook-fail-open")

	pub := startPublisher(t, "rtmp://"+p.rtmp+"/live/cam?key=s3cret", 90*time.Second, 800)
	waitLive(t, p, "live", "cam")
	b := hk.wait(t, "/on_publish", func(b hooks.Body) bool { return b.Stream == "cam" })
	if b.Action != hooks.OnPublish || b.App != "live" || b.Proto != "rtmp" || b.Server != "primary" || b.IP != "127.0.0.1" ||
		b.ClientID == "" || b.Param != "key=s3cret" || !strings.HasPrefix(b.TCURL, "rtmp://") || b.Time == "" {
		t.Errorf("on_publish body %+v", b)
	}

	// RTMP without a token: refused by the relay and by the primary.
	for _, addr := range []string{r.rtmp, p.rtmp} {
		if st := playOutcome(t, addr, "live", "cam"); st.Code != rtmp.CodePlayFailed || !strings.Contains(st.Description, "token") {
			t.Errorf("%s without token: %+v", addr, st)
		}
	}
	if err := decodes(t, "rtmp://"+r.rtmp+"/live/cam"); err == nil || !strings.Contains(err.Error(), "needs a play token") {
		t.Errorf("ffmpeg without token through the relay: %v", err)
	}
	// The redirector's token plays through the relay, and on the primary.
	tok := tokenOf(t, redirectorLocation(t, secret, "live", "cam", "rtmp"))
	if st := playOutcome(t, r.rtmp, "live", "cam?token="+tok); st.Code != rtmp.CodePlayStart {
		t.Fatalf("relay with the redirector's token: %+v", st)
	}
	if st := playOutcome(t, p.rtmp, "live", "cam?token="+tok); st.Code != rtmp.CodePlayStart {
		t.Fatalf("primary with the redirector's token: %+v", st)
	}
	if err := decodes(t, "rtmp://"+r.rtmp+"/live/cam?token="+tok); err != nil {
		t.Errorf("ffmpeg with token through the relay: %v", err)
	}
	pl := hk.wait(t, "/on_play", func(b hooks.Body) bool { return b.Proto == "rtmp" })
	if pl.App != "live" || pl.Stream != "cam" || pl.Server != "r1" || !strings.Contains(pl.Param, "token=") {
		t.Errorf("on_play body %+v", pl)
	}
	if st := hk.wait(t, "/on_stop", func(b hooks.Body) bool { return b.Stream == "cam" }); st.Duration == "" || st.Proto != "rtmp" || strings.Contains(st.Param, "token") {
		t.Errorf("on_stop body %+v", st)
	}
	// Expired, other-stream and garbage tokens are refused.
	expired := playtoken.Sign([]byte(secret), "live", "cam", time.Now().Add(-time.Minute))
	other := tokenOf(t, redirectorLocation(t, secret, "live", "cam2", "rtmp"))
	for what, bad := range map[string]string{"expired": expired, "other stream": other, "garbage": "x.y"} {
		if st := playOutcome(t, r.rtmp, "live", "cam?token="+bad); st.Code != rtmp.CodePlayFailed {
			t.Errorf("%s token: %+v", what, st)
		}
	}
	// The hook's answers are obeyed: a refusal, and a timeout (fail-closed).
	hk.set("/on_play", http.StatusForbidden, 0)
	if st := playOutcome(t, r.rtmp, "live", "cam?token="+tok); st.Code != rtmp.CodePlayFailed || !strings.Contains(st.Description, "on_play hook") {
		t.Errorf("hook refusing: %+v", st)
	}
	hk.set("/on_play", http.StatusNoContent, 3*time.Second)
	if st := playOutcome(t, r.rtmp, "live", "cam?token="+tok); st.Code != rtmp.CodePlayFailed || !strings.Contains(st.Description, "did not answer") {
		t.Errorf("hook timing out, fail-closed: %+v", st)
	}
	hk.set("/on_play", http.StatusNoContent, 0)
	if st := playOutcome(t, open.rtmp, "live", "cam?token="+tok); st.Code != rtmp.CodePlayStart {
		t.Errorf("hook timing out, fail-open: %+v", st)
	}

	// HLS and DASH on the relay.
	c := &http.Client{Timeout: 20 * time.Second}
	base := "http://" + r.http
	for _, path := range []string{"/hls/live/cam/index.m3u8", "/hls/live/cam/full.m3u8", "/dash/live/cam/manifest.mpd"} {
		if code := httpStatus(t, c, base+path); code != http.StatusUnauthorized {
			t.Errorf("%s without token: %d", path, code)
		}
		for what, bad := range map[string]string{"expired": expired, "other stream": other} {
			if code := httpStatus(t, c, base+path+"?token="+bad); code != http.StatusForbidden {
				t.Errorf("%s with %s token: %d", path, what, code)
			}
		}
	}
	// The redirector's HLS Location has the token in the path; the query
	// form is moved there by the relay (302).
	loc := redirectorLocation(t, secret, "live", "cam", "hls")
	master := base + pathOf(t, loc)
	waitFor(t, "the multivariant playlist", 20*time.Second, func() bool { return httpStatus(t, c, master) == http.StatusOK })
	time.Sleep(2 * time.Second)
	for _, u := range []string{master, base + "/hls/live/cam/index.m3u8?token=" + tokenOf(t, loc)} {
		if err := decodes(t, u, "-live_start_index", "0"); err != nil {
			t.Errorf("ffmpeg HLS %s with the redirector's token: %v", u, err)
		}
	}
	if b := hk.wait(t, "/on_play", func(b hooks.Body) bool { return b.Proto == "hls" }); b.Stream != "cam" || b.ClientID != "" {
		t.Errorf("on_play hls body %+v", b)
	}
	dloc := redirectorLocation(t, secret, "live", "cam", "dash")
	dtok := tokenOf(t, dloc)
	if err := decodes(t, base+pathOf(t, dloc)); err != nil {
		t.Errorf("ffmpeg DASH with the redirector's token: %v", err)
	}
	hk.set("/on_play", http.StatusForbidden, 0)
	if code := httpStatus(t, c, base+"/dash/live/cam/t/"+dtok+"/manifest.mpd?fresh=1"); code != http.StatusForbidden {
		t.Errorf("DASH with the hook refusing: %d", code)
	}

	// The refusals are counted by protocol and reason.
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{`relaymesh_gate_refused_total{proto="rtmp",reason="no_credentials"} 2`,
		`relaymesh_gate_refused_total{proto="hls",reason="token_expired"}`, `relaymesh_gate_refused_total{proto="rtmp",reason="hook_unavailable"} 1`,
		`relaymesh_hook_calls_total{event="on_play",result="deny"}`} {
		if !strings.Contains(string(metrics), m) {
			t.Errorf("metrics lack %s", m)
		}
	}

	// on_unpublish when the broadcaster leaves.
	pub.kill()
	if b := hk.wait(t, "/on_unpublish", func(b hooks.Body) bool { return b.Stream == "cam" }); b.Duration == "" || b.App != "live" {
		t.Errorf("on_unpublish body %+v", b)
	}
}

// listen opens a loopback listener closed with the test.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func post(t *testing.T, u, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"method":"kick","args":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestAdminAPI: the API that changes state answers 401 without the admin
// token and 200 with it; with --admin-http it is served there and not on
// the public listener; read-only status stays public unless told otherwise.
func TestAdminAPI(t *testing.T) {
	const call = "/api/v1/apps/live/scopes/cam/call"
	p := startNode(t, runPrimary, "", "--open", "--admin-token", "adm1n")
	base := "http://" + p.http
	if code := post(t, base+call, ""); code != http.StatusUnauthorized {
		t.Errorf("call without credentials: %d", code)
	}
	if code := post(t, base+call, "wrong"); code != http.StatusUnauthorized {
		t.Errorf("call with a wrong token: %d", code)
	}
	if code := post(t, base+call, "adm1n"); code != http.StatusOK {
		t.Errorf("call with the token: %d", code)
	}
	if code := httpStatus(t, http.DefaultClient, base+"/api/v1/streams"); code != http.StatusOK {
		t.Errorf("public status: %d", code)
	}

	admin := freeAddr(t)
	q := startNode(t, runPrimary, "", "--open", "--admin-http", admin, "--admin-token", "adm1n", "--public-status=false")
	if code := post(t, "http://"+q.http+call, "adm1n"); code != http.StatusNotFound {
		t.Errorf("call on the public listener with --admin-http: %d", code)
	}
	if code := post(t, "http://"+admin+call, ""); code != http.StatusUnauthorized {
		t.Errorf("call on the admin listener without the token: %d", code)
	}
	if code := post(t, "http://"+admin+call, "adm1n"); code != http.StatusOK {
		t.Errorf("call on the admin listener with the token: %d", code)
	}
	if code := httpStatus(t, http.DefaultClient, "http://"+q.http+"/api/v1/streams"); code != http.StatusNotFound {
		t.Errorf("private status on the public listener: %d", code)
	}
	if code := httpStatus(t, http.DefaultClient, "http://"+q.http+"/healthz"); code != http.StatusOK {
		t.Errorf("healthz: %d", code)
	}
	if code := httpStatus(t, http.DefaultClient, "http://"+admin+"/api/v1/streams"); code != http.StatusOK {
		t.Errorf("status on the admin listener: %d", code)
	}
}

// servedCN is the common name of the certificate a TLS listener serves.
func servedCN(t *testing.T, addr string) string {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("tls dial %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// TestTLS: ffmpeg publishes over RTMPS to the primary; a relay pulls over
// RTMPS (checking the primary's self-signed certificate against its CA
// file); ffmpeg plays over RTMPS and HLS over HTTPS from the relay; a
// replaced certificate is served without a restart.
func TestTLS(t *testing.T) {
	t.Parallel()
	requireTool(t, "ffmpeg")
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := certreload.WriteSelfSigned(cert, key, "first"); err != nil {
		t.Fatal(err)
	}
	prtmps, rrtmps, rhttps := freeAddr(t), freeAddr(t), freeAddr(t)
	p := startNode(t, runPrimary, "", "--publish-key", "cam=s3cret", "--rtmps", prtmps, "--tls-cert", cert, "--tls-key", key)
	r := startNode(t, runRelay, "", "--id", "r1", "--upstream", "rtmps://"+prtmps, "--upstream-ca", cert,
		"--rtmps", rrtmps, "--https", rhttps, "--tls-cert", cert, "--tls-key", key)
	startPublisher(t, "rtmps://"+prtmps+"/live/cam?key=s3cret", 90*time.Second, 800)
	waitLive(t, p, "live", "cam")
	if err := decodes(t, "rtmps://"+rrtmps+"/live/cam"); err != nil {
		t.Errorf("ffmpeg over RTMPS from the relay: %v", err)
	}
	pulls := func() string {
		resp, err := http.Get("http://" + r.http + "/api/v1/pulls")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if s := pulls(); !strings.Contains(s, prtmps) {
		t.Errorf("the relay does not pull from the primary's RTMPS listener: %s", s)
	}
	master := "https://" + rhttps + "/hls/live/cam/index.m3u8"
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	waitFor(t, "the multivariant playlist over HTTPS", 20*time.Second, func() bool { return httpStatus(t, c, master) == http.StatusOK })
	time.Sleep(2 * time.Second)
	if err := decodes(t, master, "-tls_verify", "0", "-live_start_index", "0"); err != nil {
		t.Errorf("ffmpeg HLS over HTTPS: %v", err)
	}
	caFile := "-ca_file"
	if err := decodes(t, master, caFile, cert, "-tls_verify", "1", "-live_start_index", "0"); err != nil {
		t.Errorf("ffmpeg HLS over HTTPS checking the CA file: %v", err)
	}

	// Replace the certificate: the listeners serve the new one.
	for _, addr := range []string{prtmps, rrtmps, rhttps} {
		if cn := servedCN(t, addr); cn != "first" {
			t.Fatalf("%s serves %q", addr, cn)
		}
	}
	if err := certreload.WriteSelfSigned(cert, key, "second"); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Second)
	_ = os.Chtimes(cert, later, later)
	for _, addr := range []string{prtmps, rrtmps, rhttps} {
		waitFor(t, addr+" serving the new certificate", 10*time.Second, func() bool { return servedCN(t, addr) == "second" })
	}
}

// TestOrchestratorHTTPS: the redirector, mesh API and dashboard over
// HTTPS, redirects with play tokens, and the certificate reloaded.
func TestOrchestratorHTTPS(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := certreload.WriteSelfSigned(cert, key, "first"); err != nil {
		t.Fatal(err)
	}
	httpsAddr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runOrchestrator(ctx, []string{"--http", freeAddr(t), "--https", httpsAddr, "--tls-cert", cert, "--tls-key", key,
			"--nats-listen", "", "--log-level", "warn", "--dev-ip", "--play-token-secret", "s3cret"})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("orchestrator did not stop")
		}
	})
	ca, err := certreload.ClientConfig(cert)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: ca},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	base := "https://" + httpsAddr
	waitFor(t, "the dashboard over HTTPS", 20*time.Second, func() bool {
		resp, err := c.Get(base + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if code := httpStatus(t, c, base+"/api/v1/mesh"); code != http.StatusOK {
		t.Errorf("mesh API over HTTPS: %d", code)
	}
	resp, err := c.Get(base + "/play/live/cam?proto=hls&ip=198.51.100.7")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	v := &playtoken.Verifier{Secrets: [][]byte{[]byte("s3cret")}}
	if resp.StatusCode != http.StatusFound || v.Verify(tokenOf(t, loc), "live", "cam") != nil || !strings.Contains(loc, "/t/") {
		t.Errorf("redirect over HTTPS: %d %q", resp.StatusCode, loc)
	}
	if err := certreload.WriteSelfSigned(cert, key, "second"); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Second)
	_ = os.Chtimes(cert, later, later)
	waitFor(t, "the new certificate", 10*time.Second, func() bool { return servedCN(t, httpsAddr) == "second" })
}

// TestPlayTokenThroughMesh: a mesh of processes as an operator runs it
// (orchestrator with its NATS, a protected primary, a protected relay):
// the orchestrator opens the relay by demand (its pull from the primary
// carries the relay's own token), and a viewer sent there by the
// redirector plays RTMP and HLS with the token of the redirect; without
// it, it is refused.
func TestPlayTokenThroughMesh(t *testing.T) {
	t.Parallel()
	requireTool(t, "ffmpeg")
	const secret = "mesh-play-s3cret"
	natsAddr, web := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	done := make(chan error, 1)
	go func() {
		done <- runOrchestrator(ctx, []string{"--http", web, "--nats-listen", natsAddr, "--threshold", "1", "--dev-ip",
			"--play-token-secret", secret, "--log-level", "warn"})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("orchestrator did not stop")
		}
	})
	c := rdClient{t: t, ctx: ctx, web: "http://" + web}
	waitFor(t, "the redirector", 20*time.Second, func() bool {
		var mv redirector.MeshView
		return c.getJSON("/api/v1/mesh", &mv) == nil
	})
	prot := []string{"--play-protect", "live", "--play-token-secret", secret, "--nats", "nats://" + natsAddr}
	p := startNode(t, runPrimary, "", append([]string{"--publish-key", "cam=s3cret", "--id", "primary", "--location", "eu"}, prot...)...)
	r := startNode(t, runRelay, "", append([]string{"--id", "relay-as", "--location", "as", "--upstream", "rtmp://" + p.rtmp}, prot...)...)
	startPublisher(t, "rtmp://"+p.rtmp+"/live/cam?key=s3cret", 80*time.Second, 800)
	waitLive(t, p, "live", "cam")
	c.buildDemand("live/cam", []string{ipJP}, "relay-as")

	ch := c.choose("live/cam", ipJP)
	if ch.Relay != "relay-as" || ch.URL != "rtmp://"+r.rtmp+"/live/cam?token="+ch.PlayToken || ch.PlayToken == "" {
		t.Fatalf("redirect: %+v", ch)
	}
	if st := playOutcome(t, r.rtmp, "live", "cam"); st.Code != rtmp.CodePlayFailed {
		t.Errorf("relay without a token: %+v", st)
	}
	if err := decodes(t, ch.URL); err != nil {
		t.Errorf("RTMP through the relay with the redirect's token: %v", err)
	}
	var hls redirector.Choice
	if err := c.getJSON("/play/live/cam?proto=hls&ip="+ipJP, &hls); err != nil {
		t.Fatal(err)
	}
	if hls.Relay != "relay-as" || !strings.HasPrefix(hls.URL, "http://"+r.http+"/hls/live/cam/t/") {
		t.Fatalf("hls redirect: %+v", hls)
	}
	waitFor(t, "the relay's playlist", 20*time.Second, func() bool { return httpStatus(t, http.DefaultClient, hls.URL) == http.StatusOK })
	time.Sleep(2 * time.Second)
	if err := decodes(t, hls.URL, "-live_start_index", "0"); err != nil {
		t.Errorf("HLS through the relay with the redirect's token: %v", err)
	}
	if code := httpStatus(t, http.DefaultClient, "http://"+r.http+"/hls/live/cam/index.m3u8"); code != http.StatusUnauthorized {
		t.Errorf("HLS without a token: %d", code)
	}
}

// publishStatus publishes app/name (name may carry ?query) and returns
// the status answered: Publish.Start, or the refusal.
func publishStatus(t *testing.T, addr, app, name string) rtmp.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cc, err := rtmp.Dial(ctx, rtmp.URL{Host: addr, App: app}, rtmp.ConnConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer cc.Close(nil)
	if _, err := cc.Publish(ctx, name); err != nil {
		var st rtmp.Status
		if errors.As(err, &st) {
			return st
		}
		t.Fatalf("publish %s/%s on %s: %v", app, name, addr, err)
	}
	return rtmp.Status{Level: "status", Code: rtmp.CodePublishStart}
}

// TestPublishHook: on_publish's answer decides, a timeout refuses
// (fail-closed), and the publish key is still checked after it allows.
func TestPublishHook(t *testing.T) {
	hk := newHookServer(t)
	p := startNode(t, runPrimary, "", "--publish-key", "cam=s3cret", "--hook-on-publish", hk.url+"/on_publish", "--hook-timeout", "300ms")
	hk.set("/on_publish", http.StatusForbidden, 0)
	if st := publishStatus(t, p.rtmp, "live", "cam?key=s3cret"); st.Code != rtmp.CodePublishBadName || !strings.Contains(st.Description, "on_publish hook (HTTP 403)") {
		t.Errorf("hook refusing: %+v", st)
	}
	hk.set("/on_publish", http.StatusNoContent, 2*time.Second)
	if st := publishStatus(t, p.rtmp, "live", "cam?key=s3cret"); st.Code != rtmp.CodePublishBadName || !strings.Contains(st.Description, "did not answer") {
		t.Errorf("hook timing out: %+v", st)
	}
	hk.set("/on_publish", http.StatusOK, 0)
	if st := publishStatus(t, p.rtmp, "live", "cam?key=wrong"); st.Code == rtmp.CodePublishStart {
		t.Errorf("hook allowing a wrong key: %+v", st)
	}
	if st := publishStatus(t, p.rtmp, "live", "cam?key=s3cret"); st.Code != rtmp.CodePublishStart {
		t.Errorf("hook allowing: %+v", st)
	}
	if b := hk.wait(t, "/on_publish", func(b hooks.Body) bool { return b.Param == "key=wrong" }); b.Stream != "cam" || b.Action != hooks.OnPublish {
		t.Errorf("body %+v", b)
	}
}
