package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// lockedBuffer collects logs written from many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// No log line of a primary and a relay carries a publish key or a viewer's
// token: a publish with a good key, one refused for a bad key, an RTMP
// viewer and an HTTP viewer with tokens, all logged at debug level.
func TestSecretsNotLogged(t *testing.T) {
	logs := &lockedBuffer{}
	logOutput = logs
	t.Cleanup(func() { logOutput = os.Stderr })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const good, bad, rtmpTok, httpTok, connKey, ffKey = "goodsecret1", "badsecret2", "viewertoken3", "httptoken4", "connsecret5", "ffmpegsecret6"
	p := startNode(t, runPrimary, "", "--publish-key", "cam="+good, "--log-level", "debug")
	r := startNode(t, runRelay, "", "--id", "r1", "--upstream", "rtmp://"+p.rtmp, "--log-level", "debug")

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
	r.stop(t)
	p.stop(t)
	out := logs.String()
	for _, secret := range []string{good, bad, rtmpTok, httpTok, connKey, ffKey} {
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
}
