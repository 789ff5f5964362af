package main

import (
	"context"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/relay"
	"github.com/relaymesh/relaymesh/relay/hub"
)

// TestHoldFromParent: a stream the orchestrator places under a parent is
// pulled from that parent, while the configured upstream stays the one for
// everything else; when the parent goes away the pull falls back to the
// configured upstream instead of waiting for the parent.
func TestHoldFromParent(t *testing.T) {
	requireTool(t, "ffmpeg")
	m := startMesh(t, 1) // primary, and r1 pulling from it
	startPublisher(t, m.publishURL(), 60*time.Second, 500)
	waitLive(t, m.primary, "live", "cam")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hubs := hub.NewRegistry(hub.Config{}, quietLog)
	up, err := relay.NewUpstream(ctx, relay.UpstreamConfig{URL: "rtmp://" + m.primary.rtmp, RelayID: "test",
		BackoffMin: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond}, hubs, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	pulled := func() (from string, live bool) {
		for _, p := range up.Pulls() {
			if p.App == "live" && p.Name == "cam" {
				return p.Upstream, p.Live
			}
		}
		return "", false
	}
	hctx, hcancel := context.WithTimeout(ctx, 10*time.Second)
	defer hcancel()
	if err := up.Hold(hctx, "live", "cam", "rtmp://"+m.r1.rtmp); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "live from the parent", 10*time.Second, func() bool { from, live := pulled(); return from == m.r1.rtmp && live })

	t0 := time.Now()
	m.r1.stop(t)
	t.Logf("r1 stopped in %v", time.Since(t0))
	waitFor(t, "live from the configured upstream", 15*time.Second, func() bool { from, live := pulled(); return from == m.primary.rtmp && live })
	t.Logf("fell back after %v", time.Since(t0))
	up.Release("live", "cam")
}
