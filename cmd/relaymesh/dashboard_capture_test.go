package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/redirector"
)

// captureLine is the JSON line of topology/dashboard/browser/capture.mjs.
type captureLine struct {
	OK         bool       `json:"ok"`
	Error      string     `json:"error"`
	Settled    bool       `json:"settled"`
	Conn       string     `json:"conn"`
	NoStreams  bool       `json:"noStreams"`
	Streams    [][]string `json:"streams"`
	Relays     [][]string `json:"relays"`
	Cut        []string   `json:"cut"`
	Screenshot string     `json:"screenshot"`
	Errors     []string   `json:"errors"`
}

// TestDashboardShowsPlayingStream is the dashboard's acceptance test:
// relaymesh dev, ffmpeg publishing H.264/AAC to the primary, viewers in the
// US so that relay-na carries the stream, one RTMP viewer (ffmpeg) and one
// HLS viewer (ffmpeg) on relay-na. The dashboard, opened paused in headless
// Chromium, must settle and show the stream with its relay, its codecs and
// bitrate and its viewers by protocol, and relay-na's row must show the
// stream in full. The screenshot goes to $RELAYMESH_DASHBOARD_PNG when set
// (docs/dashboard.png is the picture docs/operations.md shows).
func TestDashboardShowsPlayingStream(t *testing.T) {
	t.Parallel()
	requireTool(t, "ffmpeg")
	root := repoRoot(t)
	requireBrowser(t, root)
	chromium, _ := exec.LookPath("chromium")

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	addr, stop := startDev(t, ctx, cancel)
	defer stop()
	c := rdClient{t: t, ctx: ctx, web: "http://" + addr}
	mv := c.waitRelaysUp(4)

	const stream = "live/capture"
	startPublisher(t, mv.Primary.RTMPURL+"/"+stream, 90*time.Second, 800)
	waitLiveAt(t, mv.Primary.HTTPURL, stream)

	// Live on the primary alone: listed already ("primary only").
	waitFor(t, "the stream in the mesh API", 15*time.Second, func() bool {
		for _, s := range c.mesh().Streams {
			if s.App+"/"+s.Name == stream && s.Live {
				return true
			}
		}
		return false
	})
	early := runCapture(t, ctx, root, chromium, c.web+"/", filepath.Join(t.TempDir(), "primary-only.png"))
	if early.NoStreams || len(early.Streams) != 1 || early.Streams[0][0] != stream || early.Streams[0][1] != "primary only" {
		t.Errorf("a stream live on the primary only: no-streams note %v, rows %q", early.NoStreams, early.Streams)
	}

	mv = c.buildDemand(stream, []string{ipUS}, "relay-na")
	var na redirector.MeshRelay
	for _, r := range mv.Relays {
		if r.ID == "relay-na" {
			na = r
		}
	}
	waitLiveAt(t, na.HTTPURL, stream)

	// One RTMP and one HLS viewer on relay-na, for the rest of the test.
	viewer := func(in string) {
		cmd := exec.CommandContext(ctx, "ffmpeg", "-hide_banner", "-loglevel", "error", "-i", in, "-c", "copy", "-f", "null", "-")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	viewer(na.RTMPURL + "/" + stream)
	playlist := na.HTTPURL + "/hls/" + stream + "/index.m3u8"
	waitFor(t, "relay-na's HLS playlist", 20*time.Second, func() bool {
		resp, err := http.Get(playlist)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	viewer(playlist)

	// The mesh API has it all before the page is opened (statuses come
	// every second or so).
	var ms redirector.MeshStream
	waitFor(t, "the stream's viewers, relays and codecs in the mesh API", 30*time.Second, func() bool {
		for _, s := range c.mesh().Streams {
			if s.App+"/"+s.Name == stream {
				ms = s
			}
		}
		return ms.Live && slices.Contains(ms.Relays, "relay-na") && ms.VideoCodec != "" && ms.BitrateKbps > 0 &&
			protoViewers(ms.Protocols, bus.ProtoRTMP) >= 1 && protoViewers(ms.Protocols, bus.ProtoHLS) >= 1
	})
	t.Logf("mesh API: %+v", ms)

	// The screenshot is made on every run; it replaces the docs' picture
	// only when asked (RELAYMESH_DASHBOARD_PNG=docs/dashboard.png), so a
	// test run leaves the tree as it was.
	png := os.Getenv("RELAYMESH_DASHBOARD_PNG")
	if png == "" {
		png = filepath.Join(t.TempDir(), "dashboard.png")
	} else if !filepath.IsAbs(png) {
		png = filepath.Join(root, png)
	}
	got := runCapture(t, ctx, root, chromium, c.web+"/", png)
	if !got.Settled || got.Conn != "paused" {
		t.Errorf("the page did not settle: network idle %v, connection pill %q", got.Settled, got.Conn)
	}
	if len(got.Errors) > 0 {
		t.Errorf("page errors: %v", got.Errors)
	}
	if got.NoStreams {
		t.Error("the 'no live stream' note is shown while a stream plays")
	}
	// stream | relays | viewers by protocol | codecs | bitrate | play
	var row []string
	for _, r := range got.Streams {
		if len(r) > 0 && r[0] == stream {
			row = r
		}
	}
	if len(row) < 5 {
		t.Fatalf("no row for %s in the live streams table: %q", stream, got.Streams)
	}
	if !strings.Contains(row[1], "relay-na") {
		t.Errorf("relays cell %q, want relay-na", row[1])
	}
	if !strings.Contains(row[2], "rtmp 1") || !strings.Contains(row[2], "hls 1") {
		t.Errorf("viewers cell %q, want rtmp 1 and hls 1", row[2])
	}
	if !strings.Contains(row[3], "h264 640×360") || !strings.Contains(row[3], "aac") {
		t.Errorf("codecs cell %q, want h264 640×360 and aac", row[3])
	}
	if !strings.HasSuffix(row[4], "bit/s") {
		t.Errorf("bitrate cell %q", row[4])
	}
	// relay | location | status | load | viewers by protocol | streams
	var relayRow []string
	for _, r := range got.Relays {
		if len(r) > 0 && r[0] == "relay-na" {
			relayRow = r
		}
	}
	if len(relayRow) < 6 || !strings.Contains(relayRow[5], stream) || !strings.Contains(relayRow[4], "rtmp") || !strings.Contains(relayRow[4], "hls") {
		t.Errorf("relay-na's row %q: want its viewers by protocol and %s", relayRow, stream)
	}
	if len(got.Cut) > 0 {
		t.Errorf("cells cut off at the edge of their section: %q", got.Cut)
	}
	if fi, err := os.Stat(png); err != nil || fi.Size() < 10<<10 {
		t.Errorf("screenshot %s: %v", png, err)
	}
}

// runCapture runs capture.mjs on the dashboard at url, saving its
// screenshot to png.
func runCapture(t *testing.T, ctx context.Context, root, chromium, url, png string) captureLine {
	t.Helper()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(root, "topology", "dashboard", "browser", "capture.mjs"),
		"--url", url, "--out", png, "--width", "1280", "--timeout", "30", "--chromium", chromium)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("capture.mjs: %s", out)
	var got captureLine
	if jerr := json.Unmarshal(out, &got); jerr != nil || !got.OK {
		t.Fatalf("capture.mjs: %v %v %+v\n%s", err, jerr, got, stderr.String())
	}
	return got
}
