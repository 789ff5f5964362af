package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/playtoken"
	"github.com/relaymesh/relaymesh/internal/rtmp"
	"github.com/relaymesh/relaymesh/internal/testlog"
)

// leftCredential is the value of a key or token parameter, or of a /t/
// path segment, that is not REDACTED.
var leftCredential = regexp.MustCompile(`(?i)(?:[?&\s"](?:key|token)=|/t/)(?:[^R&\s"/]|R[^E])[^&\s"/]*`)

// No log line of a primary and a relay carries a key, a token or a secret:
// a publish with a good key, one refused for a bad key, an RTMP viewer and
// an HTTP viewer with tokens; and with play authorization (app secure): the
// play token secret, play tokens good, expired, for another stream and
// garbage, over RTMP (play name and connect URL) and HLS/DASH (query and
// /t/ path), play keys right and wrong, the relay's own upstream token,
// the admin token (bearer and basic auth, right and wrong) and a hook URL
// with a secret that does not answer; all logged at debug level.
func TestSecretsNotLogged(t *testing.T) {
	logs := &testlog.Buffer{}
	logOutput = logs
	t.Cleanup(func() { logOutput = os.Stderr })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const good, bad, rtmpTok, httpTok, connKey, ffKey = "goodsecret1", "badsecret2", "viewertoken3", "httptoken4", "connsecret5", "ffmpegsecret6"
	const playSecret, playKey, wrongPlayKey, adminTok, wrongAdmin, hookSecret = "playsecret7", "playkey8", "wrongplaykey9", "admintoken10", "wrongadmin11", "hooksecret12"
	hk := newHookServer(t)
	hk.set("/slow", http.StatusNoContent, 3*time.Second)
	secure := func(hook string) []string {
		return []string{"--play-protect", "secure", "--play-token-secret", playSecret, "--play-key", "secure/keyed=" + playKey,
			"--admin-token", adminTok, "--hook-on-play", hk.url + hook + "?secret=" + hookSecret, "--hook-timeout", "200ms", "--hook-fail-open"}
	}
	p := startNode(t, runPrimary, "", append([]string{"--publish-key", "cam=" + good, "--log-level", "debug"}, secure("/on_play")...)...)
	r := startNode(t, runRelay, "", append([]string{"--id", "r1", "--upstream", "rtmp://" + p.rtmp, "--log-level", "debug"}, secure("/slow")...)...)

	dial := func(host, query string) *rtmp.ClientConn {
		c, err := rtmp.Dial(ctx, rtmp.URL{Host: host, App: "live", Query: query}, rtmp.ConnConfig{}, quietLog)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(nil) })
		return c
	}
	if _, err := dial(p.rtmp, "").Publish(ctx, "cam2?key="+bad); err == nil {
		t.Fatal("publish with a bad key accepted")
	}
	// A key in the connect URL (tcUrl) too.
	if _, err := dial(p.rtmp, "key="+connKey).Publish(ctx, "cam3"); err == nil {
		t.Fatal("publish with a bad key in the connect URL accepted")
	}
	// A real encoder with a wrong key, when ffmpeg is installed (in CI it is).
	if _, err := exec.LookPath("ffmpeg"); err == nil || os.Getenv("CI") == "true" {
		out, err := exec.CommandContext(ctx, "ffmpeg", "-hide_banner", "-loglevel", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10",
			"-t", "2", "-c:v", "libx264", "-f", "flv", "rtmp://"+p.rtmp+"/live/cam4?key="+ffKey).CombinedOutput()
		if err == nil {
			t.Fatalf("ffmpeg published with a wrong key: %s", out)
		}
	}
	pub := dial(p.rtmp, "")
	id, err := pub.Publish(ctx, "cam?key="+good)
	if err != nil {
		t.Fatalf("publish with the key: %v", err)
	}
	go func() {
		pub.Send(rtmp.Message{Type: rtmp.TypeAudio, StreamID: id, Payload: []byte{0xaf, 0, 0x12, 0x10}})
		for i := 0; ctx.Err() == nil && i < 200; i++ {
			pub.Send(rtmp.Message{Type: rtmp.TypeVideo, StreamID: id, Timestamp: uint32(i * 40), Payload: append([]byte{0x17, 1, 0, 0, 0}, make([]byte, 100)...)})
			time.Sleep(40 * time.Millisecond)
		}
	}()
	viewer, err := rtmp.Dial(ctx, rtmp.URL{Host: r.rtmp, App: "live", Query: "token=" + rtmpTok}, rtmp.ConnConfig{}, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := viewer.Play(ctx, "cam"); err != nil {
		t.Fatalf("play through the relay: %v", err)
	}
	for i := 0; i < 3; i++ {
		if _, err := viewer.ReadMessage(); err != nil {
			t.Fatal(err)
		}
	}
	viewer.Close(nil)
	if resp, err := http.Get("http://" + r.http + "/hls/live/cam/index.m3u8?token=" + httpTok); err == nil {
		resp.Body.Close()
	}

	// Play authorization on app secure.
	spub, err := rtmp.Dial(ctx, rtmp.URL{Host: p.rtmp, App: "secure"}, rtmp.ConnConfig{}, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { spub.Close(nil) })
	sid, err := spub.Publish(ctx, "cam?key="+good)
	if err != nil {
		t.Fatalf("publish secure/cam: %v", err)
	}
	go func() {
		spub.Send(rtmp.Message{Type: rtmp.TypeAudio, StreamID: sid, Payload: []byte{0xaf, 0, 0x12, 0x10}})
		for i := 0; ctx.Err() == nil && i < 200; i++ {
			spub.Send(rtmp.Message{Type: rtmp.TypeVideo, StreamID: sid, Timestamp: uint32(i * 40), Payload: append([]byte{0x17, 1, 0, 0, 0}, make([]byte, 100)...)})
			time.Sleep(40 * time.Millisecond)
		}
	}()
	tok := playtoken.Sign([]byte(playSecret), "secure", "cam", time.Now().Add(time.Hour))
	expired := playtoken.Sign([]byte(playSecret), "secure", "cam", time.Now().Add(-time.Minute))
	other := playtoken.Sign([]byte(playSecret), "secure", "other", time.Now().Add(time.Hour))
	const garbage = "1234.garbagetoken13"
	play := func(host, connQuery, name string) {
		c, err := rtmp.Dial(ctx, rtmp.URL{Host: host, App: "secure", Query: connQuery}, rtmp.ConnConfig{}, quietLog)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(nil)
		if _, err := c.Play(ctx, name); err == nil {
			c.ReadMessage()
		}
	}
	// Through the relay with a good token: it pulls with a token of its own.
	play(r.rtmp, "", "cam?token="+tok)
	play(r.rtmp, "token="+tok, "cam")
	for _, bad := range []string{expired, other, garbage} {
		play(r.rtmp, "", "cam?token="+bad)
		play(p.rtmp, "token="+bad, "cam")
	}
	play(p.rtmp, "", "keyed?key="+playKey)
	play(p.rtmp, "", "keyed?key="+wrongPlayKey)
	play(r.rtmp, "key="+wrongPlayKey, "keyed")
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, base := range []string{"http://" + r.http, "http://" + p.http} {
		for _, path := range []string{
			"/hls/secure/cam/index.m3u8?token=" + tok, "/hls/secure/cam/t/" + tok + "/index.m3u8",
			"/dash/secure/cam/manifest.mpd?token=" + expired, "/dash/secure/cam/t/" + other + "/manifest.mpd",
			"/hls/secure/cam/t/" + garbage + "/index.m3u8", "/hls/secure/keyed/index.m3u8?key=" + playKey,
			"/dash/secure/keyed/t/" + wrongPlayKey + "/manifest.mpd",
		} {
			if resp, err := hc.Get(base + path); err == nil {
				resp.Body.Close()
			}
		}
	}
	// The admin API with the token, a wrong one, and basic auth.
	for _, auth := range []func(*http.Request){
		func(q *http.Request) { q.Header.Set("Authorization", "Bearer "+adminTok) },
		func(q *http.Request) { q.Header.Set("Authorization", "Bearer "+wrongAdmin) },
		func(q *http.Request) { q.SetBasicAuth("admin", adminTok) },
		func(q *http.Request) { q.SetBasicAuth("admin", wrongAdmin) },
	} {
		q, _ := http.NewRequest(http.MethodPost, "http://"+p.http+"/api/v1/apps/secure/scopes/cam/call?token="+wrongAdmin, strings.NewReader(`{"method":"x"}`))
		auth(q)
		if resp, err := hc.Do(q); err == nil {
			resp.Body.Close()
		}
	}

	r.stop(t)
	p.stop(t)
	out := logs.String()
	for _, secret := range []string{good, bad, rtmpTok, httpTok, connKey, ffKey,
		playSecret, playKey, wrongPlayKey, adminTok, wrongAdmin, hookSecret, tok, expired, other, garbage} {
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, secret) {
				t.Errorf("a log line carries %s: %s", secret, line)
			}
		}
	}
	// The refused publish is logged, its name without the query (the
	// server cuts it off; the redacting logger is the second line).
	if !regexp.MustCompile(`msg="publish refused".* stream=cam2 `).MatchString(out) {
		t.Errorf("the refused publish is not logged:\n%s", out)
	}
	// Tokens nobody passed in (the relay's own upstream pull) are signed
	// with the secret: no value of a credential parameter or of a /t/
	// path segment is left in the logs.
	if m := leftCredential.FindString(out); m != "" {
		t.Errorf("a credential is logged: %s", m)
	}
	// The paths above were taken: refusals and the hook that did not
	// answer (its URL has a secret) are logged.
	for _, want := range []string{"wrong play key", "hook call failed", "play refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("no log line has %q", want)
		}
	}
}
