package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// playStatus plays addr/app/name and returns the status the server answered
// with (Play.Start gives a nil error) and how long that took.
func playStatus(t *testing.T, addr, app, name string) (rtmp.Status, error, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cc, err := rtmp.Dial(ctx, rtmp.URL{Host: addr, App: app}, rtmp.ConnConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close(nil)
	start := time.Now()
	_, err = cc.Play(ctx, name)
	var st rtmp.Status
	errors.As(err, &st)
	return st, err, time.Since(start)
}

// TestPlayUnpublishedAnswersNotFound (issue 13): playing a stream nobody
// publishes is answered NetStream.Play.StreamNotFound within a few seconds,
// on the primary and through a chain of relays, instead of hanging until the
// grace period ends.
func TestPlayUnpublishedAnswersNotFound(t *testing.T) {
	m := startMesh(t, 2)
	for _, n := range []struct {
		name string
		node *testNode
	}{{"primary", m.primary}, {"r1", m.r1}, {"r2 (via r1)", m.r2}} {
		st, err, took := playStatus(t, n.node.rtmp, "live", "nobody")
		t.Logf("%s: %q %q after %v", n.name, st.Code, st.Description, took.Round(time.Millisecond))
		if st.Code != rtmp.CodePlayStreamNotFound {
			t.Errorf("%s: play of an unpublished stream: %v, want %s", n.name, err, rtmp.CodePlayStreamNotFound)
		}
		if took > 3*time.Second {
			t.Errorf("%s: answered after %v", n.name, took)
		}
	}
}

// A relay whose pull is still connected after the stream ended upstream
// (within its linger) answers StreamNotFound to a new viewer too, while a
// viewer that was there when the broadcaster left keeps the stream found
// (it waits for the broadcaster within the grace period).
func TestRelayAnswersNotFoundAfterUnpublish(t *testing.T) {
	m := startMesh(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pub := publishSynthetic(t, ctx, m.primary.rtmp, "cam?key=s3cret")
	waitLive(t, m.primary, "live", "cam")
	v, err := rtmp.Dial(ctx, rtmp.URL{Host: m.r1.rtmp, App: "live"}, rtmp.ConnConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close(nil)
	if _, err := v.Play(ctx, "cam"); err != nil {
		t.Fatal(err)
	}
	for got := 0; got < 3; {
		m, err := v.ReadMessage()
		if err != nil {
			t.Fatalf("viewer: %v before any video", err)
		}
		if m.Type == rtmp.TypeVideo {
			got++
		}
	}
	pub.Close(nil)
	for {
		m, err := v.ReadMessage()
		if err != nil {
			t.Fatalf("viewer: %v before the unpublish notification", err)
		}
		if c, err := rtmp.ParseCommand(m); err == nil && c.Name == "onStatus" && rtmp.StatusOf(c).Code == rtmp.CodePlayUnpublishNotify {
			break
		}
	}
	if st, err, _ := playStatus(t, m.r1.rtmp, "live", "cam"); err != nil {
		t.Fatalf("with a viewer waiting for the broadcaster: %v (%s)", err, st.Code)
	}
	v.Close(nil)
	waitFor(t, "the viewer to leave", 10*time.Second, func() bool {
		for _, s := range streams(t, m.r1) {
			if s["name"] == "cam" && s["viewers"] == 0.0 {
				return true
			}
		}
		return false
	})
	st, err, took := playStatus(t, m.r1.rtmp, "live", "cam")
	if st.Code != rtmp.CodePlayStreamNotFound || took > 3*time.Second {
		t.Fatalf("new viewer after the stream ended upstream: %v after %v, want %s at once", err, took, rtmp.CodePlayStreamNotFound)
	}
}

// publishSynthetic publishes live/name on addr with the project's client: a
// small keyframe every 40 ms until ctx ends or the connection is closed.
func publishSynthetic(t *testing.T, ctx context.Context, addr, name string) *rtmp.ClientConn {
	t.Helper()
	pub, err := rtmp.Dial(ctx, rtmp.URL{Host: addr, App: "live"}, rtmp.ConnConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close(nil) })
	sid, err := pub.Publish(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ts := uint32(0); ctx.Err() == nil; ts += 40 {
			if pub.Send(rtmp.Message{Type: rtmp.TypeVideo, StreamID: sid, Timestamp: ts,
				Payload: []byte{0x17, 1, 0, 0, 0, 0, 0, 0, 1, 0x65}}) != nil {
				return
			}
			time.Sleep(40 * time.Millisecond)
		}
	}()
	return pub
}
