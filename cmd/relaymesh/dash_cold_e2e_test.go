package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestDASHColdStart measures dash.js (default settings, headless Chromium)
// starting on a relay whose packager starts with it: the relay pulls the
// stream and packages it on that first request. Opt-in (a minute per run):
//
//	RELAYMESH_COLD_DASH=1 go test -run TestDASHColdStart -v ./cmd/relaymesh/
//
// RELAYMESH_COLD_DASH_RUNS (default 2) runs one after the other, each on a
// packager gone cold again (its linger, 30 s, passed). It logs each run's
// start-up, longest stall and latency behind the live edge; it fails only
// if a player does not play.
func TestDASHColdStart(t *testing.T) {
	if os.Getenv("RELAYMESH_COLD_DASH") == "" {
		t.Skip("set RELAYMESH_COLD_DASH=1 to measure dash.js on a cold relay (about a minute per run)")
	}
	requireTool(t, "ffmpeg")
	root := repoRoot(t)
	requireBrowser(t, root)
	runs := 2
	if s := os.Getenv("RELAYMESH_COLD_DASH_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 20 {
			t.Fatalf("RELAYMESH_COLD_DASH_RUNS=%q: want 1 to 20", s)
		}
		runs = n
	}
	// By hand: RELAYMESH_COLD_PLAYER=hls for hls.js on index.m3u8, and
	// RELAYMESH_COLD_CONFIG a player configuration (JSON).
	player, config := "dash", "{}"
	if os.Getenv("RELAYMESH_COLD_PLAYER") == "hls" {
		player = "hls"
	}
	if c := os.Getenv("RELAYMESH_COLD_CONFIG"); c != "" {
		config = c
	}
	m := startMesh(t, 1)
	url := "http://" + m.r1.http + "/dash/live/cam/manifest.mpd"
	if player == "hls" {
		url = "http://" + m.r1.http + "/hls/live/cam/index.m3u8"
	}
	startPublisherGOP(t, m.publishURL(), time.Duration(runs)*75*time.Second, 2500, 50)
	waitLive(t, m.primary, "live", "cam")
	time.Sleep(5 * time.Second)
	for i := range runs {
		if i > 0 {
			time.Sleep(40 * time.Second) // the packager's linger, 30 s
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		out, err := exec.CommandContext(ctx, "node", filepath.Join(root, "packager", "browser", "run.mjs"),
			"--url", url, "--player", player, "--config", config,
			"--play", "12", "--start-timeout", "30").Output()
		cancel()
		var r browserRun
		if jerr := json.Unmarshal(out, &r); jerr != nil || !r.OK || r.Play == nil {
			t.Fatalf("run %d: %v %v\n%s", i+1, err, jerr, out)
		}
		t.Logf("run %d: start-up %d ms, longest stall %d ms in the first 12 s played, %.2f s behind the live edge (p50)",
			i+1, r.StartupMs, r.Play.MaxStallMs, r.Play.Latency.P50)
	}
}
