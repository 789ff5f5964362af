package main

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// watcher plays a stream on one connection and records what it sees.
type watcher struct {
	mu        sync.Mutex
	video     int
	unpublish int
	publish   int
	err       error
}

func watch(t *testing.T, addr, app, name string) *watcher {
	t.Helper()
	cc, err := rtmp.Dial(context.Background(), rtmp.URL{Host: addr, App: app}, rtmp.ConnConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close(nil) })
	if _, err := cc.Play(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	cc.SetReadTimeout(0)
	w := &watcher{}
	go func() {
		for {
			m, err := cc.ReadMessage()
			w.mu.Lock()
			if err != nil {
				w.err = err
				w.mu.Unlock()
				return
			}
			switch m.Type {
			case rtmp.TypeVideo:
				w.video++
			case rtmp.TypeCommandAMF0:
				if c, err := rtmp.ParseCommand(m); err == nil && c.Name == "onStatus" {
					switch rtmp.StatusOf(c).Code {
					case rtmp.CodePlayUnpublishNotify:
						w.unpublish++
					case rtmp.CodePlayPublishNotify:
						w.publish++
					}
				}
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *watcher) snapshot() (video, unpublish, publish int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.video, w.unpublish, w.publish, w.err
}

// waitFor polls cond until it holds or the timeout passes.
// waitOK waits until a GET of url answers 200 OK (what names it on failure).
func waitOK(t *testing.T, what, url string, d time.Duration) {
	t.Helper()
	waitFor(t, what, d, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestBroadcasterAndPrimaryRestart: viewers on a relay keep their
// connections through a publisher restart and through a primary restart,
// and receive frames again each time the broadcaster is back.
func TestBroadcasterAndPrimaryRestart(t *testing.T) {
	t.Parallel()
	requireTool(t, "ffmpeg")
	m := startMesh(t, 1)
	pub := startPublisher(t, m.publishURL(), 60*time.Second, 800)
	waitLive(t, m.primary, "live", "cam")
	w := watch(t, m.r1.rtmp, "live", "cam")
	waitFor(t, "first frames", 10*time.Second, func() bool { v, _, _, _ := w.snapshot(); return v > 25 })

	// The broadcaster dies and comes back within the grace period.
	pub.kill()
	waitFor(t, "unpublish notification", 10*time.Second, func() bool { _, u, _, _ := w.snapshot(); return u >= 1 })
	before, _, _, _ := w.snapshot()
	startPublisher(t, m.publishURL(), 60*time.Second, 800)
	waitFor(t, "frames after the broadcaster returned", 15*time.Second, func() bool {
		v, _, _, err := w.snapshot()
		if err != nil {
			t.Fatalf("viewer connection lost: %v", err)
		}
		return v > before+25
	})
	if _, _, p, _ := w.snapshot(); p < 1 {
		t.Errorf("no PublishNotify after the broadcaster returned")
	}

	// The primary restarts on the same address; the relay reconnects and
	// its viewer resumes once the broadcaster republishes.
	addr := m.primary.rtmp
	m.primary.stop(t)
	waitFor(t, "unpublish after the primary went away", 15*time.Second, func() bool { _, u, _, _ := w.snapshot(); return u >= 2 })
	m.primary = startNode(t, runPrimary, addr, "--publish-key", "cam=s3cret")
	before, _, _, _ = w.snapshot()
	startPublisher(t, m.publishURL(), 60*time.Second, 800)
	waitFor(t, "frames after the primary restarted", 30*time.Second, func() bool {
		v, _, _, err := w.snapshot()
		if err != nil {
			t.Fatalf("viewer connection lost: %v", err)
		}
		return v > before+25
	})
}
