package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// drainSeen is what a viewer of a draining relay received.
type drainSeen struct {
	unpublish, closed, reconnect rtmp.Status
	closedInfo, reconnectInfo    map[string]any
	streamEOF                    bool
	videoAfter                   int // video frames after the unpublish notification
	connEnd                      time.Duration
}

// watchDrain plays live/cam on addr, waits for video, calls drain, then
// records what the relay says until it closes the connection.
func watchDrain(t *testing.T, addr string, props map[string]any, drain func()) drainSeen {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cc, err := rtmp.Dial(ctx, rtmp.URL{Host: addr, App: "live"}, rtmp.ConnConfig{ConnectProps: props}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close(nil)
	if _, err := cc.Play(ctx, "cam"); err != nil {
		t.Fatal(err)
	}
	cc.SetReadTimeout(20 * time.Second)
	for got := 0; got < 3; {
		m, err := cc.ReadMessage()
		if err != nil {
			t.Fatalf("before any video: %v", err)
		}
		if m.Type == rtmp.TypeVideo {
			got++
		}
	}
	var seen drainSeen
	start := time.Now()
	drain()
	for {
		m, err := cc.ReadMessage()
		if err != nil {
			seen.connEnd = time.Since(start)
			return seen
		}
		switch m.Type {
		case rtmp.TypeVideo:
			if seen.unpublish.Code != "" {
				seen.videoAfter++
			}
		case rtmp.TypeUserControl:
			if len(m.Payload) >= 2 && m.Payload[1] == rtmp.EventStreamEOF {
				seen.streamEOF = true
			}
		case rtmp.TypeCommandAMF0:
			c, err := rtmp.ParseCommand(m)
			if err != nil || c.Name != "onStatus" {
				continue
			}
			st := rtmp.StatusOf(c)
			info, _ := c.Args[len(c.Args)-1].(map[string]any)
			switch st.Code {
			case rtmp.CodePlayUnpublishNotify:
				seen.unpublish = st
			case rtmp.CodeConnectClosed:
				seen.closed, seen.closedInfo = st, info
			case rtmp.CodeReconnectRequest:
				seen.reconnect, seen.reconnectInfo = st, info
			}
		}
	}
}

// TestDrainTellsViewersWhereToGo (issue 12, item 3): a draining relay tells
// its RTMP viewers to leave and where to play again (its redirect), stops
// their media, and closes the connection only after the drain.
func TestDrainTellsViewersWhereToGo(t *testing.T) {
	t.Parallel()
	m := &mesh{}
	m.primary = startNode(t, runPrimary, "", "--publish-key", "cam=s3cret")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	publishSynthetic(t, ctx, m.primary.rtmp, "cam?key=s3cret")
	waitLive(t, m.primary, "live", "cam")
	cfg := filepath.Join(t.TempDir(), "relay.yaml")
	if err := os.WriteFile(cfg, []byte("rtmp:\n  drain: 2s\nrelay:\n  redirect: http://redirector.example:8090\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r1 := startNode(t, runRelay, "", "--config", cfg, "--id", "r1", "--upstream", "rtmp://"+m.primary.rtmp)
	seen := watchDrain(t, r1.rtmp, nil, r1.cancel)
	want := "http://redirector.example:8090/play/live/cam"
	t.Logf("unpublish %q; closed %q %v; connection closed after %v", seen.unpublish.Description, seen.closed.Description, seen.closedInfo, seen.connEnd.Round(time.Millisecond))
	if !strings.Contains(seen.unpublish.Description, want) || !seen.streamEOF {
		t.Errorf("unpublish notification %+v (stream EOF %v), want one naming %s", seen.unpublish, seen.streamEOF, want)
	}
	if !strings.Contains(seen.closed.Description, want) || seen.closedInfo["redirect"] != want {
		t.Errorf("close status %+v %v, want one naming %s", seen.closed, seen.closedInfo, want)
	}
	if ex, _ := seen.closedInfo["ex"].(map[string]any); ex["code"] != 302.0 || ex["redirect"] != want {
		t.Errorf("close status ex %v, want code 302 and redirect %s", seen.closedInfo["ex"], want)
	}
	if seen.videoAfter > 0 {
		t.Errorf("%d video frames after the unpublish notification", seen.videoAfter)
	}
	if seen.connEnd < time.Second {
		t.Errorf("connection closed %v after the drain began: the viewer did not get the drain (2s) to leave", seen.connEnd)
	}
	if seen.reconnect.Code != "" {
		t.Errorf("reconnect request sent to a client that did not announce it")
	}

	// A client announcing Enhanced RTMP's reconnect capability is asked to
	// reconnect, to the rtmp redirect's tcUrl.
	r2 := startNode(t, runRelay, "", "--id", "r2", "--upstream", "rtmp://"+m.primary.rtmp, "--redirect", "rtmp://edge.example:1935")
	var reconnectErr error
	seen = watchDrain(t, r2.rtmp, map[string]any{"capsEx": 1.0}, func() {
		r2.cancel()
		time.Sleep(200 * time.Millisecond)
		// A client connecting during the drain is redirected at connect.
		var cc *rtmp.ClientConn
		cc, reconnectErr = rtmp.Dial(context.Background(), rtmp.URL{Host: r2.rtmp, App: "live"}, rtmp.ConnConfig{}, nil)
		if cc != nil {
			cc.Close(nil)
		}
	})
	if reconnectErr == nil || !strings.Contains(reconnectErr.Error(), rtmp.CodeConnectRejected) || !strings.Contains(reconnectErr.Error(), "rtmp://edge.example:1935/live") {
		t.Errorf("connect during the drain: %v, want %s naming rtmp://edge.example:1935/live", reconnectErr, rtmp.CodeConnectRejected)
	}
	if seen.reconnect.Code != rtmp.CodeReconnectRequest || seen.reconnectInfo["tcUrl"] != "rtmp://edge.example:1935/live" {
		t.Errorf("reconnect request %+v %v, want tcUrl rtmp://edge.example:1935/live", seen.reconnect, seen.reconnectInfo)
	}
	if ex, _ := seen.closedInfo["ex"].(map[string]any); ex["redirect"] != "rtmp://edge.example:1935/live/cam" {
		t.Errorf("close status ex %v", seen.closedInfo["ex"])
	}
}

// TestDrainRealClients: what ffmpeg's and rtmpdump's players do when their
// relay drains (docs/operations.md): both take NetStream.Play.UnpublishNotify
// as the end of the stream and leave before the drain ends; rtmpdump logs
// the description, which names where to play again.
func TestDrainRealClients(t *testing.T) {
	requireTool(t, "ffmpeg", "rtmpdump")
	m := &mesh{}
	m.primary = startNode(t, runPrimary, "", "--publish-key", "cam=s3cret")
	r1 := startNode(t, runRelay, "", "--id", "r1", "--upstream", "rtmp://"+m.primary.rtmp, "--redirect", "http://redirector.example:8090")
	startPublisher(t, m.publishURL(), 60*time.Second, 800)
	waitLive(t, m.primary, "live", "cam")
	url := "rtmp://" + r1.rtmp + "/live/cam"
	type player struct {
		name string
		cmd  *exec.Cmd
		out  *bytes.Buffer
		done chan time.Time
	}
	players := []*player{
		{name: "ffmpeg", cmd: exec.Command("ffmpeg", "-hide_banner", "-loglevel", "info", "-i", url, "-f", "null", "-")},
		{name: "rtmpdump", cmd: exec.Command("rtmpdump", "-z", "-r", url, "-o", os.DevNull)},
	}
	for _, p := range players {
		p.out, p.done = &bytes.Buffer{}, make(chan time.Time, 1)
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.cmd.Process.Kill() })
		go func() { _ = p.cmd.Wait(); p.done <- time.Now() }()
	}
	waitFor(t, "both players playing", 15*time.Second, func() bool { return relayViewers(t, "http://"+r1.http, "live/cam") == 2 })
	time.Sleep(2 * time.Second)
	start := time.Now()
	r1.cancel() // SIGTERM: drain (5 s by default)
	for _, p := range players {
		select {
		case end := <-p.done:
			t.Logf("%s left %v after the drain began", p.name, end.Sub(start).Round(time.Millisecond))
			if end.Sub(start) > 4*time.Second {
				t.Errorf("%s stayed until it was closed", p.name)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("%s still running", p.name)
		}
	}
	if out := players[1].out.String(); !strings.Contains(out, "http://redirector.example:8090/play/live/cam") {
		t.Errorf("rtmpdump's log does not show where to play again:\n%s", tail(out, 2000))
	}
}

// TestDrainConnectRedirectRealClients: what ffmpeg and rtmpdump do with the
// FMS connect redirect of a draining relay (NetConnection.Connect.Rejected,
// ex.code 302, ex.redirect naming a live relay): logged for
// docs/operations.md; neither follows it.
func TestDrainConnectRedirectRealClients(t *testing.T) {
	requireTool(t, "ffmpeg", "rtmpdump")
	m := &mesh{}
	m.primary = startNode(t, runPrimary, "", "--publish-key", "cam=s3cret")
	r2 := startNode(t, runRelay, "", "--id", "r2", "--upstream", "rtmp://"+m.primary.rtmp)
	r1 := startNode(t, runRelay, "", "--id", "r1", "--upstream", "rtmp://"+m.primary.rtmp, "--redirect", "rtmp://"+r2.rtmp)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	publishSynthetic(t, ctx, m.primary.rtmp, "cam?key=s3cret")
	waitLive(t, m.primary, "live", "cam")
	// A connection that stays: the draining relay keeps accepting while
	// connections remain.
	hold, err := rtmp.Dial(ctx, rtmp.URL{Host: r1.rtmp, App: "live"}, rtmp.ConnConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close(nil)
	r1.cancel()
	time.Sleep(200 * time.Millisecond)
	url := "rtmp://" + r1.rtmp + "/live/cam"
	for _, c := range []struct {
		name string
		args []string
	}{
		{"ffmpeg", []string{"-hide_banner", "-loglevel", "info", "-i", url, "-t", "1", "-f", "null", "-"}},
		{"rtmpdump", []string{"-z", "-r", url, "-o", os.DevNull, "--stop", "1"}},
	} {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		out, err := exec.CommandContext(cctx, c.name, c.args...).CombinedOutput()
		ccancel()
		var said []string
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "Rejected") || strings.Contains(line, "draining") || strings.Contains(line, "redirect") {
				said = append(said, strings.TrimSpace(line))
			}
		}
		t.Logf("%s connecting to the draining relay: %v; it logged %q", c.name, err, said)
		if len(said) == 0 {
			t.Errorf("%s's output does not show the rejection:\n%s", c.name, tail(string(out), 2000))
		}
	}
}
