package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/geo"
	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/redirector"
)

// procRelay is a relay run as a process of its own (the test binary as
// relaymesh), so that it can die by SIGKILL: no goodbye, no drain.
type procRelay struct {
	id, rtmp, http string
	cmd            *exec.Cmd
	stderr         *strings.Builder
}

func startProcRelay(t *testing.T, id, location, upstream, natsURL, steer string) *procRelay {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := &procRelay{id: id, rtmp: freeAddr(t), http: freeAddr(t), stderr: &strings.Builder{}}
	r.cmd = exec.Command(exe, "relay", "--id", id, "--location", location, "--upstream", upstream,
		"--rtmp", r.rtmp, "--http", r.http, "--nats", natsURL, "--steering-url", steer, "--log-level", "warn")
	r.cmd.Env = append(os.Environ(), "RELAYMESH_TEST_MAIN=1")
	r.cmd.Stderr = r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.kill)
	waitFor(t, id+" listening", 20*time.Second, func() bool {
		c, err := net.Dial("tcp", r.rtmp)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return r
}

func (r *procRelay) kill() {
	if r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_, _ = r.cmd.Process.Wait()
	}
}

// failoverRun is what topology/redirector/browser/failover.mjs prints.
type failoverRun struct {
	OK         bool     `json:"ok"`
	Error      string   `json:"error"`
	StartError string   `json:"startError"`
	StartupMs  int      `json:"startupMs"`
	Errors     []string `json:"errors"`
	Fatal      bool     `json:"fatal"`
	KillAnswer string   `json:"killAnswer"`
	Play       *struct {
		Advanced float64 `json:"advanced"`
	} `json:"play"`
	After *struct {
		Advanced   float64 `json:"advanced"`
		MaxStallMs int     `json:"maxStallMs"`
		Seconds    float64 `json:"seconds"`
	} `json:"after"`
	Media struct {
		Before map[string]int `json:"before"`
		After  map[string]int `json:"after"`
	} `json:"media"`
	Steering     []string `json:"steering"`
	MovedAfterMs int      `json:"movedAfterMs"`
}

// dashAddresses summarises the segment addresses of a DASH manifest: its
// templates and the times of its SegmentTimeline entries.
func dashAddresses(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out []string
	// How far the wall clock is past availabilityStartTime, to set beside
	// the timeline's end.
	if _, rest, ok := strings.Cut(string(b), `availabilityStartTime="`); ok {
		if v, _, ok := strings.Cut(rest, `"`); ok {
			if ast, err := time.Parse(time.RFC3339Nano, v); err == nil {
				out = append(out, fmt.Sprintf("now-AST %.3f s", time.Since(ast).Seconds()))
			}
		}
	}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "<Period") || strings.HasPrefix(l, "<SegmentTemplate") || strings.HasPrefix(l, "<S ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, " ")
}

// warmSegments: TestSteeringFailover's player starts once relay-na's
// manifest lists this many segments (8 s of 2 s segments: more than the 5 s
// a steered MPD asks dash.js to stay behind).
const warmSegments = 4

// segmentsListed is the number of segments of the first SegmentTimeline of
// the DASH manifest at url (0 when it cannot be read).
func segmentsListed(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var mpd struct {
		Periods []struct {
			Sets []struct {
				Template struct {
					S []struct {
						R int `xml:"r,attr"`
					} `xml:"SegmentTimeline>S"`
				} `xml:"SegmentTemplate"`
			} `xml:"AdaptationSet"`
		} `xml:"Period"`
	}
	if err := xml.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&mpd); err != nil {
		return 0
	}
	n := 0
	for _, p := range mpd.Periods {
		for _, set := range p.Sets {
			m := 0
			for _, s := range set.Template.S {
				m += 1 + max(s.R, 0)
			}
			n = max(n, m)
		}
	}
	return n
}

// dashConfig is the dash.js settings of the failover run: none, unless
// RELAYMESH_FAILOVER_DASH_DEBUG asks for its debug log on the console.
func dashConfig() string {
	if os.Getenv("RELAYMESH_FAILOVER_DASH_DEBUG") != "" {
		return `{"debug":{"logLevel":5}}`
	}
	return `{}`
}

// TestSteeringFailover: a primary, two relays as processes of their own
// (relay-na, relay-as) carrying the stream, and a redirector whose address
// every server's playlists name for content steering. hls.js and dash.js in
// Chromium play through /play from another origin and land on relay-na;
// relay-na is killed with SIGKILL: the player fetches from another server
// of the steering answer (hls.js goes on with no stall over 3 s), the
// redirector stops naming relay-na within 1 s (3 s is the bound;
// its NATS disconnect makes it milliseconds) and the steering answer
// drops it.
func TestSteeringFailover(t *testing.T) {
	requireTool(t, "ffmpeg")
	root := repoRoot(t)
	requireBrowser(t, root)
	chromium, _ := exec.LookPath("chromium")
	// Every server names and times a stream's DASH segments alike (the
	// publish id the primary puts in the metadata, media times as
	// published), so dash.js finds the segments it was asking for on the
	// next service location. dash.js with its default settings: it takes
	// the server of each segment from the steering answer (TTL 2 s for
	// DASH) or, after a segment's retries, the next one not blacklisted;
	// its manifest refreshes go through the redirector's
	// /steer/dash/…/manifest.mpd, so they land on a live server (dash.js
	// stops refreshing for good after one failed refresh), and the MPD
	// reload events restart them if they stopped
	// (docs/hls-dash.md#content-steering). Both players are held to a
	// stall of at most 3 s.
	// A drain instead of the kill: the relay keeps serving, the steering
	// answer drops it at once, and the player moves at its next steering
	// reload (TTL 5 s for HLS, 2 s for DASH) or, dash.js, its next
	// manifest refresh, without a stall.
	for _, tc := range []struct {
		name, player, proto, config string
		drain                       bool
	}{
		{"hls", "hls", "hls", `{}`, false},
		{"dash", "dash", "dash", dashConfig(), false},
		{"hls-drain", "hls", "hls", `{}`, true},
		{"dash-drain", "dash", "dash", dashConfig(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
			defer cancel()
			g, err := graph.DevWorld()
			if err != nil {
				t.Fatal(err)
			}
			db, err := geo.OpenDefault()
			if err != nil {
				t.Fatal(err)
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			nats, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nats.Shutdown)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			web := "http://" + ln.Addr().String()
			primary := startNode(t, runPrimary, "", "--open", "--nats", nats.ClientURL(), "--id", "primary", "--location", "eu", "--steering-url", web)
			conn, err := bus.Connect(bus.Options{URLs: nats.ClientURL(), Name: "orch"}, log)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(conn.Close)
			cpCtx, stopCP := context.WithCancel(context.Background())
			var cpWG sync.WaitGroup
			cpWG.Add(1)
			go func() {
				defer cpWG.Done()
				_ = runControlPlane(cpCtx, controlPlane{graph: g, geo: db, conn: conn, ln: ln, id: "orch", threshold: 1, devIP: true, log: log})
			}()
			t.Cleanup(func() { stopCP(); cpWG.Wait() })
			upstream := "rtmp://" + primary.rtmp
			na := startProcRelay(t, "relay-na", "na", upstream, nats.ClientURL(), web)
			as := startProcRelay(t, "relay-as", "as", upstream, nats.ClientURL(), web)
			c := rdClient{t: t, ctx: ctx, web: web}
			c.waitRelaysUp(2)
			stream := "live/steer" + strings.ReplaceAll(tc.name, "-", "")
			startPublisher(t, "rtmp://"+primary.rtmp+"/"+stream, 140*time.Second, 1000)
			waitLive(t, primary, "live", strings.TrimPrefix(stream, "live/"))
			c.buildDemand(stream, []string{ipUS, ipJP}, "relay-na", "relay-as")

			// Every server has viewers of its own (their packagers are
			// warm, as on a relay that serves anybody), relay-na too, and
			// the player starts once relay-na lists warmSegments: a
			// packager that starts with the player has a segment or two,
			// and dash.js then starts at the live edge instead of
			// suggestedPresentationDelay behind it and stalls for the next
			// segment every segment (1.8–2.3 s at worst in the first 6 s
			// of play in every run so, docs/hls-dash.md): that stall is the
			// cold start's, not the failover's, and it ran into the window
			// measured after the kill.
			actx, stopAudience := context.WithCancel(ctx)
			defer stopAudience()
			file := "/hls/" + stream + "/index.m3u8"
			if tc.proto == "dash" {
				file = "/dash/" + stream + "/manifest.mpd"
			}
			go httpAudience(actx, "http://"+as.http+file)
			go httpAudience(actx, "http://"+primary.http+file)
			go httpAudience(actx, "http://"+na.http+file)
			waitFor(t, "relay-na's packager warm", 30*time.Second, func() bool {
				return segmentsListed("http://"+na.http+"/dash/"+stream+"/manifest.mpd") >= warmSegments
			})

			// The kill: SIGKILL relay-na, then time the redirector.
			var killedAt time.Time
			outOfRotation := make(chan time.Duration, 1)
			killSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if tc.proto == "dash" {
					// Every server names the segments alike (the point of
					// the failover): the same templates and timeline.
					for _, h := range []string{na.http, as.http, primary.http} {
						t.Logf("%s: %s", h, dashAddresses("http://"+h+file))
					}
				}
				if tc.drain {
					if _, err := conn.Request(ctx, "relay-na", bus.Command{Op: bus.OpDrain, Reason: "test"}); err != nil {
						t.Errorf("drain: %v", err)
					}
				} else {
					na.kill()
				}
				killedAt = time.Now()
				go func() {
					for time.Since(killedAt) < 10*time.Second {
						var ch redirector.Choice
						if c.getJSON("/play/"+stream+"?proto="+tc.proto+"&ip="+ipUS, &ch) == nil && ch.Relay != "relay-na" {
							outOfRotation <- time.Since(killedAt)
							return
						}
						time.Sleep(10 * time.Millisecond) // the resolution of the figure
					}
					outOfRotation <- -1
				}()
				fmt.Fprintln(w, "killed")
			})}
			kln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go killSrv.Serve(kln)
			defer killSrv.Close()

			url := web + "/play/" + stream + "?proto=" + tc.proto + "&ip=" + ipUS
			cmd := exec.CommandContext(ctx, "node", filepath.Join(root, "topology", "redirector", "browser", "failover.mjs"),
				"--url", url, "--kill-url", "http://"+kln.Addr().String()+"/kill", "--player", tc.player,
				"--chromium", chromium, "--config", tc.config, "--play", "6", "--after", "15")
			if dir := os.Getenv("RELAYMESH_FAILOVER_CONSOLE"); dir != "" {
				// The page's console, for a look at what the player did.
				cmd.Args = append(cmd.Args, "--console", filepath.Join(dir, tc.name+".log"))
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			t.Logf("%s", out)
			r := failoverRun{MovedAfterMs: -1} // absent: never moved
			if jerr := json.Unmarshal(out, &r); jerr != nil {
				t.Fatalf("failover.mjs: %v, %v\n%s", err, jerr, stderr.String())
			}
			if !r.OK || r.StartError != "" || r.Play == nil || r.After == nil {
				t.Fatalf("failover.mjs: %s %s; errors %v\n%s", r.Error, r.StartError, r.Errors, stderr.String())
			}
			if r.Media.Before[na.http] == 0 {
				t.Fatalf("the player did not play from relay-na first: %v", r.Media.Before)
			}
			moved := false
			for host, n := range r.Media.After {
				if host != na.http && n > 0 {
					moved = true
				}
			}
			if !moved {
				t.Errorf("after the kill the player fetched from %v only", r.Media.After)
			}
			t.Logf("after the kill: longest stall %d ms, advanced %.1f s in %.0f s; requests %v", r.After.MaxStallMs, r.After.Advanced, r.After.Seconds, r.Media.After)
			if tc.drain {
				t.Logf("moved %d ms after the drain", r.MovedAfterMs)
				if r.MovedAfterMs < 0 || r.MovedAfterMs > 7000 {
					t.Errorf("the player moved off the draining relay %d ms after the drain, want within the steering TTL (5 s) and 2 s", r.MovedAfterMs)
				}
			}
			if r.After.MaxStallMs > 3000 {
				t.Errorf("playback stalled %d ms after the relay died, want ≤ 3000 (errors %v)", r.After.MaxStallMs, r.Errors)
			}
			if r.After.Advanced < r.After.Seconds/2 {
				t.Errorf("after the kill currentTime advanced %.1f s in %.0f s", r.After.Advanced, r.After.Seconds)
			}
			// Killed, its NATS connection closes with it: the
			// redirector hears so from the NATS server and finds
			// nothing listening at relay-na's address
			// (topology/redirector/disconnect.go); it does not wait for
			// the heartbeat timeout (1.5 s).
			d := <-outOfRotation
			if tc.drain && d > time.Second {
				t.Errorf("the redirector named the draining relay-na for %v", d)
			}
			switch {
			case d < 0:
				t.Errorf("the redirector still names relay-na 10 s after its death")
			case d > time.Second:
				t.Errorf("the redirector named relay-na for %v after its death, want ≤ 1 s (its NATS disconnect)", d)
			default:
				t.Logf("the redirector stopped naming relay-na %v after its death", d.Round(time.Millisecond))
			}
			var sm redirector.SteeringManifest
			if err := c.getJSON("/steer/"+tc.proto+"/"+stream+"?base=relay-na", &sm); err != nil {
				t.Fatal(err)
			}
			if slices.Contains(append(sm.PathwayPriority, sm.ServicePriority...), "relay-na") {
				t.Errorf("the steering answer still names relay-na: %+v", sm)
			}
		})
	}
}
