package rtmp

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// Leave stops a session's players, tells them where to go, counts them as
// drained, keeps the connection open, and refuses later plays on it.
func TestLeave(t *testing.T) {
	sessions := NewSessions()
	ts := startTestServer(t, ConnConfig{Sessions: sessions}, &testHandler{src: func(*Session) MediaSource { return &memSource{} }})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cc, err := Dial(ctx, URL{Host: ts.addr, App: "live"}, ConnConfig{ConnectProps: map[string]any{"capsEx": 1.0}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close(nil)
	id, err := cc.Play(ctx, "cam")
	if err != nil {
		t.Fatal(err)
	}
	told := 0
	sessions.Each(func(s *Session) {
		told += s.Leave(LeaveNotice{Description: "going away", Redirect: func(app, name string) string {
			return "rtmp://edge.example:1935/" + app + "/" + name
		}})
	})
	if told != 1 {
		t.Fatalf("Leave told %d streams, want 1", told)
	}
	var codes []string
	var tcURL any
	cc.SetReadTimeout(5 * time.Second)
	for len(codes) < 3 {
		m, err := cc.ReadMessage()
		if err != nil {
			t.Fatalf("after %q: %v", codes, err)
		}
		if c, err := ParseCommand(m); err == nil && c.Name == "onStatus" {
			st := statusOf(c)
			codes = append(codes, st.Code)
			if st.Code == CodeReconnectRequest {
				tcURL = c.Args[len(c.Args)-1].(map[string]any)["tcUrl"]
			}
			if st.Code == CodePlayUnpublishNotify && (m.StreamID != id || !strings.Contains(st.Description, "rtmp://edge.example:1935/live/cam")) {
				t.Errorf("unpublish on stream %d: %q", m.StreamID, st.Description)
			}
		}
	}
	if want := []string{CodeReconnectRequest, CodePlayUnpublishNotify, CodeConnectClosed}; strings.Join(codes, " ") != strings.Join(want, " ") {
		t.Errorf("statuses %q, want %q", codes, want)
	}
	if tcURL != "rtmp://edge.example:1935/live" {
		t.Errorf("reconnect tcUrl %v", tcURL)
	}
	if n := ts.closed(ReasonDrain)(); n != 1 {
		t.Errorf("drained viewers counted %v, want 1", n)
	}
	// Still connected, but no new play.
	_, err = cc.Play(ctx, "cam")
	var st Status
	if !errors.As(err, &st) || st.Code != CodePlayFailed {
		t.Fatalf("play after Leave: %v", err)
	}
	if got := ts.log.get(); len(got) != 1 || got[0] != ReasonDrain {
		t.Fatalf("logged %q", got)
	}
}

// After Sessions.Leave, a client that connects is refused with the FMS
// connect redirect: NetConnection.Connect.Rejected, ex.code 302, ex.redirect.
func TestConnectRedirectWhileLeaving(t *testing.T) {
	sessions := NewSessions()
	ts := startTestServer(t, ConnConfig{Sessions: sessions}, &testHandler{src: func(*Session) MediaSource { return &memSource{} }})
	sessions.Leave(LeaveNotice{Description: "going away", ConnectRedirect: func(app string) string { return "rtmp://edge.example/" + app }}, nil)
	r := dialTestRaw(t, ts.addr)
	if err := r.SendCommand(0, "connect", 1.0, map[string]any{"app": "live", "tcUrl": "rtmp://x/live"}); err != nil {
		t.Fatal(err)
	}
	r.SetReadTimeout(5 * time.Second)
	for {
		m, err := r.ReadMessage()
		if err != nil {
			t.Fatalf("no answer to connect: %v", err)
		}
		c, err := ParseCommand(m)
		if err != nil || c.Name != "_error" {
			continue
		}
		info := c.Args[len(c.Args)-1].(map[string]any)
		ex, _ := info["ex"].(map[string]any)
		if info["code"] != CodeConnectRejected || ex["code"] != 302.0 || ex["redirect"] != "rtmp://edge.example/live" {
			t.Fatalf("connect answered %v", info)
		}
		break
	}
	waitCount(t, "refused connects", func() float64 { return counterValue(ts.m.requests.WithLabelValues("connect", CodeConnectRejected)) }, 1)
}

// dialTestRaw connects and hands shakes, without the connect command.
func dialTestRaw(t *testing.T, addr string) *Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Client(nc, ConnConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(nil) })
	return c
}
