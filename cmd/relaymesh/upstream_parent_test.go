package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/hub"
	"github.com/relaymesh/relaymesh/relay/pull"
)

// TestHoldFromParent: a stream the orchestrator places under a parent is
// pulled from that parent, while the configured upstream stays the one for
// everything else; when the parent goes away the pull falls back to the
// configured upstream instead of waiting for the parent.
func TestHoldFromParent(t *testing.T) {
	requireTool(t, "ffmpeg")
	m := startMesh(t, 0)
	// The parent: a relay that stops at once when told (no drain).
	cfg := filepath.Join(t.TempDir(), "r1.yaml")
	if err := os.WriteFile(cfg, []byte("rtmp:\n  drain: 0s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m.r1 = startNode(t, runRelay, "", "--config", cfg, "--id", "r1", "--location", "eu", "--upstream", "rtmp://"+m.primary.rtmp)
	startPublisher(t, m.publishURL(), 60*time.Second, 500)
	waitLive(t, m.primary, "live", "cam")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hubs := hub.NewRegistry(hub.Config{}, quietLog)
	up, err := pull.New(ctx, pull.Config{URL: "rtmp://" + m.primary.rtmp, RelayID: "test",
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

	m.r1.stop(t)
	waitFor(t, "live from the configured upstream", 15*time.Second, func() bool { from, live := pulled(); return from == m.primary.rtmp && live })
	up.Release("live", "cam")
}
