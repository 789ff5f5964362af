package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/topology/redirector"
)

// dashboardLine is one JSON line of topology/dashboard/browser/run.mjs.
type dashboardLine struct {
	Phase  string          `json:"phase"`
	Relays json.RawMessage `json:"relays"`
	// phase "relays"
	NoStreams bool   `json:"noStreams"`
	Listed    bool   `json:"listed"`
	Conn      string `json:"conn"`
	// phase "done"
	OK       bool     `json:"ok"`
	Error    string   `json:"error"`
	Started  bool     `json:"started"`
	Advanced float64  `json:"advanced"`
	Width    int      `json:"width"`
	Height   int      `json:"height"`
	Choice   string   `json:"choice"`
	Errors   []string `json:"errors"`
}

// TestDashboardInBrowser runs relaymesh dev in-process and opens its
// dashboard in headless Chromium: the page lists the four relays and no
// stream; once ffmpeg publishes and viewers in the US ask for the stream,
// its row appears, and its play button plays it (from relay-na, for a
// viewer address in New York) with the video's currentTime advancing.
func TestDashboardInBrowser(t *testing.T) {
	t.Parallel()
	requireTool(t, "ffmpeg")
	root := repoRoot(t)
	requireBrowser(t, root)
	chromium, _ := exec.LookPath("chromium")

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	addr, stop := startDev(t, ctx, cancel)
	defer stop()
	c := rdClient{t: t, ctx: ctx, web: "http://" + addr}
	mv := c.waitRelaysUp(4)

	const stream = "live/dashboard"
	// The page plays once the stream's row names relay-na: on a busy
	// machine the row can show the primary alone before the demand opens
	// the relay.
	cmd := exec.CommandContext(ctx, "node", filepath.Join(root, "topology", "dashboard", "browser", "run.mjs"),
		"--url", c.web+"/", "--stream", stream, "--relays", "4", "--ip", ipUS, "--play", "3",
		"--timeout", "40", "--row-relay", "relay-na", "--chromium", chromium)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var last dashboardLine
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		t.Logf("run.mjs: %s", sc.Text())
		last = dashboardLine{}
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatalf("run.mjs printed %q: %v", sc.Text(), err)
		}
		if last.Phase == "relays" {
			if !last.NoStreams || last.Listed {
				t.Errorf("before publishing the page lists a stream (no-streams note shown: %v)", last.NoStreams)
			}
			if last.Conn != "live" {
				t.Errorf("the page's event stream is %q, want live", last.Conn)
			}
			// Now publish and build demand in the US: relay-na opens.
			startPublisher(t, mv.Primary.RTMPURL+"/"+stream, 60*time.Second, 600)
			waitLiveAt(t, mv.Primary.HTTPURL, stream)
			// Viewers in the US ask for the stream (bounded; the page
			// waits for the row) until a relay carries it. The helpers
			// that fail the test are not for this goroutine.
			go func() {
				var mv redirector.MeshView
				var ch redirector.Choice
				for i := 0; i < 200 && ctx.Err() == nil; i++ {
					if c.getJSON("/api/v1/mesh", &mv) == nil && len(carriers(mv, stream)) > 0 {
						return
					}
					_ = c.getJSON("/play/"+stream+"?proto=hls&ip="+ipUS, &ch)
					time.Sleep(100 * time.Millisecond)
				}
			}()
		}
	}
	werr := cmd.Wait()
	if last.Phase != "done" || !last.OK {
		t.Fatalf("run.mjs: %v, last line %+v\n%s", werr, last, stderr.String())
	}
	if !last.Started || last.Advanced < 3 {
		t.Errorf("the dashboard's player: started %v, currentTime advanced %.2f s (want ≥ 3); errors %v", last.Started, last.Advanced, last.Errors)
	}
	if !strings.Contains(last.Choice, "relay-na") {
		t.Errorf("the dashboard played from %q, want relay-na", last.Choice)
	}
}
