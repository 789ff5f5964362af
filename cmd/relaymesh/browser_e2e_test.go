package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// browserRun is the JSON that packager/browser/run.mjs prints.
type browserRun struct {
	OK         bool     `json:"ok"`
	Error      string   `json:"error"`
	Player     string   `json:"player"`
	Browser    string   `json:"browser"`
	H264       bool     `json:"h264"`
	StartError string   `json:"startError"`
	StartupMs  int      `json:"startupMs"`
	Width      int      `json:"width"`
	Height     int      `json:"height"`
	Fatal      bool     `json:"fatal"`
	Errors     []string `json:"errors"`
	Levels     []struct {
		Index   int     `json:"index"`
		Bitrate float64 `json:"bitrate"`
	} `json:"levels"`
	LevelBeforeThrottle   *browserLevel `json:"levelBeforeThrottle"`
	TopBeforeThrottle     bool          `json:"topBeforeThrottle"`
	LatencyBeforeThrottle float64       `json:"latencyBeforeThrottle"`
	Play                  *struct {
		Advanced   float64 `json:"advanced"`
		MaxStallMs int     `json:"maxStallMs"`
		Latency    struct {
			P50 float64 `json:"p50"`
		} `json:"latency"`
	} `json:"play"`
	Throttle *struct {
		Advanced     float64       `json:"advanced"`
		MaxStallMs   int           `json:"maxStallMs"`
		Seconds      float64       `json:"seconds"`
		SwitchedDown bool          `json:"switchedDown"`
		DownAfterMs  int           `json:"downAfterMs"`
		Level        *browserLevel `json:"level"`
	} `json:"throttle"`
}

type browserLevel struct {
	Index   int     `json:"index"`
	Bitrate float64 `json:"bitrate"`
}

// repoRoot is the directory holding go.mod, found from the test's cwd.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// requireBrowser skips (fails in CI) unless node, Chromium and the npm
// packages of package.json are installed.
func requireBrowser(t *testing.T, root string) {
	t.Helper()
	requireTool(t, "node", "chromium")
	for _, p := range []string{"playwright-core/package.json", "hls.js/dist/hls.min.js", "dashjs/dist/modern/umd/dash.all.min.js", "shaka-player/dist/shaka-player.compiled.js"} {
		if _, err := os.Stat(filepath.Join(root, "node_modules", p)); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("node_modules/%s is required in CI but missing (npm ci)", p)
			}
			t.Skipf("node_modules/%s missing: skipping (run npm ci at the repository root)", p)
		}
	}
}

// TestBrowserPlayers: ffmpeg publishes 640x360 H.264 at 2500 kbit/s to the
// primary; hls.js and dash.js in headless Chromium play the relay's HLS and
// DASH. Each must advance currentTime by at least 5 s and show the published
// width; then, with the page's network throttled to 600 kbit/s, the player
// must move to a lower rendition and keep playing with no stall over 3 s
// (hls.js in its default low-latency mode: over 10 s, see below). dash.js
// and Shaka Player with their defaults must reach the top rendition.
func TestBrowserPlayers(t *testing.T) {
	requireTool(t, "ffmpeg")
	root := repoRoot(t)
	requireBrowser(t, root)
	chromium, _ := exec.LookPath("chromium")

	// By hand: RELAYMESH_BROWSER_LLDASH=1 gives the relay low-latency DASH
	// (opt-in; the throttled dash case then stalls about a GOP's download,
	// docs/hls-dash.md), RELAYMESH_BROWSER_GOP=1 a 1 s GOP (2 s otherwise).
	var relayArgs []string
	if os.Getenv("RELAYMESH_BROWSER_LLDASH") != "" {
		cfg := filepath.Join(t.TempDir(), "relay.yaml")
		if err := os.WriteFile(cfg, []byte("hls:\n  dash_low_latency: [live]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		relayArgs = []string{"--config", cfg}
	}
	gop := 50
	if os.Getenv("RELAYMESH_BROWSER_GOP") == "1" {
		gop = 25
	}
	m := &mesh{}
	m.primary = startNode(t, runPrimary, "", "--publish-key", "cam=s3cret")
	m.r1 = startNode(t, runRelay, "", append(relayArgs, "--id", "r1", "--location", "eu", "--upstream", "rtmp://"+m.primary.rtmp)...)
	startPublisherGOP(t, m.publishURL(), 240*time.Second, 2500, gop)
	waitLive(t, m.primary, "live", "cam")
	base := "http://" + m.r1.http
	waitOK(t, "the multivariant playlist", base+"/hls/live/cam/index.m3u8", 20*time.Second)
	time.Sleep(4 * time.Second) // two segments, so the players' first look has something to play

	// hls.js's default low-latency mode fetches the rest of a segment part
	// by part once it is behind the edge, choosing a rendition again only
	// at the next segment, so after a fivefold drop in throughput it stalls
	// for about four times the media left in that segment, less its
	// second of buffer: 2.8-4.3 s in eight runs of this test, up to ~7 s
	// in the dev mesh (docs/hls-dash.md). Nothing the server sets bounds
	// that below 3 s, so this case checks that it moves down and keeps
	// playing, with loose bounds. The 3 s bound is checked with
	// lowLatencyMode off (the same playlists, parts ignored, three segments
	// of buffer) and with dash.js (told to start high rather than at its
	// 1 Mbit/s guess).
	// dash-default: dash.js with its default settings on the unthrottled
	// link reaches the top rendition (run.mjs waits for it before it
	// throttles; the throttled second after it is not looked at): hls.js's
	// default does in hls-lowlatency-throttled.
	for _, tc := range []struct {
		name, player, url, config string
		throttle                  bool
		maxStallMs                int
		minAdvance                float64 // share of the throttled time currentTime must advance
		topOnly                   bool    // only the top rendition is checked (the link is not throttled)
	}{
		{"hls-lowlatency", "hls", base + "/hls/live/cam/index.m3u8", `{}`, false, 0, 0, false},
		{"hls-lowlatency-throttled", "hls", base + "/hls/live/cam/index.m3u8", `{}`, true, 10000, 0.25, false},
		{"hls", "hls", base + "/hls/live/cam/index.m3u8", `{"lowLatencyMode":false}`, true, 3000, 0.5, false},
		{"dash", "dash", base + "/dash/live/cam/manifest.mpd", `{"streaming":{"abr":{"initialBitrate":{"video":3000}}}}`, true, 3000, 0.5, false},
		{"dash-default", "dash", base + "/dash/live/cam/manifest.mpd", `{}`, true, 0, 0, true},
		// Shaka Player, a third independent player, with its defaults on
		// the LL-HLS: it starts on key by its 1 Mbit/s guess and reaches
		// full in about 5 s (its latency: docs/hls-dash.md, *Players*). On
		// the DASH it is tried by hand only: under the loaded suite it
		// once stayed on key for the 15 s top wait.
		{"shaka-default", "shaka", base + "/hls/live/cam/index.m3u8", `{}`, true, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			throttle, throttleSeconds, topTimeout := "0", "25", "15"
			switch {
			case tc.topOnly:
				// dash.js starts from its 1 Mbit/s guess (the key rung
				// here) and climbs on its throughput samples, which it
				// takes from Resource Timing: without the relay's
				// Timing-Allow-Origin it took every key segment (loaded
				// in under 10 ms) for a cache hit and stayed there for
				// 30 s and more (docs/hls-dash.md).
				throttle, throttleSeconds = "600", "1"
			case tc.throttle:
				throttle = "600"
			}
			if tc.name == "hls-lowlatency-throttled" {
				// hls.js chooses a rendition only between runs of parts,
				// which last to the end of a segment once it is behind the
				// edge, so at a fifth of real time every 10 s of a 2 s GOP;
				// and its estimate, built on parts fetched at loopback speed
				// before the drop, decays with a 3 s half-life of download
				// time. When the first choice after the drop comes before
				// the estimate has fallen under full's bandwidth, it moves
				// at the third (in a third of the runs on its own: 18-28 s
				// after the drop; docs/hls-dash.md).
				throttleSeconds = "40"
			}
			cmd := exec.CommandContext(ctx, "node", filepath.Join(root, "packager", "browser", "run.mjs"),
				"--url", tc.url, "--player", tc.player, "--chromium", chromium, "--config", tc.config,
				"--play", "5", "--throttle-kbps", throttle, "--throttle-seconds", throttleSeconds, "--settle", "4",
				"--top-timeout", topTimeout)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			t.Logf("%s", out)
			var r browserRun
			if jerr := json.Unmarshal(out, &r); jerr != nil {
				t.Fatalf("run.mjs: %v, %v\n%s", err, jerr, stderr.String())
			}
			if !r.OK {
				t.Fatalf("run.mjs failed: %s\n%s", r.Error, stderr.String())
			}
			if !r.H264 {
				t.Fatalf("Chromium %s cannot play H.264 through MediaSource", r.Browser)
			}
			if r.StartError != "" || r.Play == nil {
				t.Fatalf("%s: %s; errors %v", tc.player, r.StartError, r.Errors)
			}
			if r.Fatal {
				t.Errorf("player reported fatal errors: %v", r.Errors)
			}
			if r.Play.Advanced < 5 {
				t.Errorf("currentTime advanced %.2f s, want at least 5", r.Play.Advanced)
			}
			if r.Width != 640 || r.Height != 360 {
				t.Errorf("video is %dx%d, want 640x360", r.Width, r.Height)
			}
			if !tc.throttle {
				return
			}
			th := r.Throttle
			if th == nil {
				t.Fatal("no throttled phase in the result")
			}
			if !r.TopBeforeThrottle {
				t.Errorf("the player did not reach the top rendition before throttling: on %+v of %+v", r.LevelBeforeThrottle, r.Levels)
			}
			if tc.topOnly {
				return
			}
			if !th.SwitchedDown {
				t.Errorf("throttled to 600 kbit/s, the player stayed on %+v (before %+v; renditions %+v)", th.Level, r.LevelBeforeThrottle, r.Levels)
			}
			t.Logf("throttled: moved down after %d ms, longest stall %d ms (latency before %.2f s)", th.DownAfterMs, th.MaxStallMs, r.LatencyBeforeThrottle)
			if th.MaxStallMs > tc.maxStallMs {
				t.Errorf("throttled: playback stalled for %d ms, want at most %d", th.MaxStallMs, tc.maxStallMs)
			}
			if th.Advanced < th.Seconds*tc.minAdvance {
				t.Errorf("throttled: currentTime advanced %.1f s in %.1f s", th.Advanced, th.Seconds)
			}
		})
	}
}
