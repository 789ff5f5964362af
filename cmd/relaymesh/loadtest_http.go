package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/relaymesh/relaymesh/loadtest/httpswarm"
	"github.com/relaymesh/relaymesh/loadtest/proc"
)

// runLoadtestHTTP is `relaymesh loadtest hls|dash`.
func runLoadtestHTTP(ctx context.Context, proto string, args []string) error {
	fs := flag.NewFlagSet("loadtest "+proto, flag.ContinueOnError)
	url := fs.String("url", "", "the multivariant playlist (or a media playlist) or the MPD, http(s)://… (required)")
	clients := fs.Int("clients", 10, fmt.Sprintf("number of players (at most %d)", httpswarm.MaxClients))
	ramp := fs.Duration("ramp", 5*time.Second, "spread the starts over this long")
	duration := fs.Duration("duration", 30*time.Second, fmt.Sprintf("how long each player plays (at most %v)", httpswarm.MaxDuration))
	throttled := fs.String("throttled", "0", "players limited to --throttle-kbps: a count (5) or a share (10%)")
	throttleKbps := fs.Int("throttle-kbps", 800, "read rate of throttled players, kbit/s")
	ll := fs.String("ll", httpswarm.LLAuto, "low-latency HLS: auto (blocking reloads and parts where offered) or off (poll, whole segments)")
	reload := fs.Duration("reload", 0, "playlist/MPD reload interval of polling players (0: the protocol's rule)")
	rendition := fs.String("rendition", "", "fix every player on one rendition (a name like full, or top, bottom); ABR off")
	start := fs.String("start", "first", "first rendition of ABR players: first (as listed), top or bottom")
	startSegs := fs.Int("start-segments", 3, "segments back from the live edge a player without parts starts")
	abrUp := fs.Float64("abr-up", 0.7, "move up to a rendition whose bandwidth is at most this × the throughput estimate")
	abrDown := fs.Float64("abr-down", 0.9, "move down when the rendition's bandwidth exceeds this × the estimate")
	abrHold := fs.Duration("abr-hold", 4*time.Second, "least time between moves up")
	abrTiming := fs.String("abr-timing", "first-byte", "how downloads are timed for the estimate: first-byte (first body byte to last) or request (request to last byte)")
	timeout := fs.Duration("timeout", 10*time.Second, "bound on one request (blocking reloads included)")
	session := fs.Bool("session", false, "add session=ID (one per player) to every request: a server that counts viewers by it counts every player, though all come from one address")
	pids := fs.String("pids", "", "comma-separated server process ids whose CPU time to report")
	asJSON := fs.Bool("json", false, "print one JSON object on stdout instead of a readable report")
	perClient := fs.Bool("per-client", false, "include every player in the JSON report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" {
		return fmt.Errorf("--url is required")
	}
	nThrottled, err := parseShare(*throttled, *clients)
	if err != nil {
		return err
	}
	pidList, err := proc.ParsePIDs(*pids)
	if err != nil {
		return err
	}
	r, err := httpswarm.Run(ctx, httpswarm.Config{
		URL: *url, Proto: proto, Clients: *clients, Ramp: *ramp, Duration: *duration,
		Throttled: nThrottled, ThrottleKbps: *throttleKbps, LowLatency: *ll, Reload: *reload,
		StartSegments: *startSegs, Rendition: *rendition, Start: *start,
		ABRUp: *abrUp, ABRDown: *abrDown, ABRHold: *abrHold, ABRTiming: *abrTiming, RequestTimeout: *timeout, Session: *session,
		PIDs: pidList, Progress: os.Stderr,
	})
	if err != nil {
		return err
	}
	if !*perClient {
		r.PerClient = nil
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	fmt.Printf("%s %s: %d/%d playing, start-up p50 %.0f ms p95 %.0f ms max %.0f ms, live lag p50 %.1f s max %.1f s, %.1f Mbit/s\n",
		r.Proto, r.URL, r.All.Started, r.Clients, r.All.StartupMs.P50, r.All.StartupMs.P95, r.All.StartupMs.Max,
		r.All.LiveLagS.P50, r.All.LiveLagS.Max, r.Mbps)
	for _, c := range []struct {
		name string
		c    httpswarm.Class
	}{{"normal", r.Normal}, {"throttled", r.ThrottledClass}} {
		if c.c.Clients == 0 {
			continue
		}
		fmt.Printf("  %-9s %d players: %d stalls (%d players, %.1f s, longest %.1f s, %.1f %% of play), switches %d up %d down, %.2f Mbit/s each, ended on %v\n",
			c.name, c.c.Clients, c.c.Stalls, c.c.ClientsStalled, c.c.StallS, c.c.MaxStallS, 100*c.c.StallRatio,
			c.c.SwitchesUp, c.c.SwitchesDown, c.c.MeanMbps, c.c.FinalRendition)
	}
	fmt.Printf("  requests %v\n", r.Requests)
	if len(r.Errors) > 0 {
		fmt.Printf("  errors %v\n", r.Errors)
		for _, e := range r.ErrorSamples {
			fmt.Println("   ", e)
		}
	}
	if s := r.Server; s != nil {
		fmt.Printf("  server pids %v: %.2f CPU-s (%.2f per minute, %.4f per viewer-minute), RSS %.1f MiB\n",
			s.PIDs, s.CPUSeconds, s.CPUPerMin, s.CPUPerViewerMin, s.RSSMiB)
	}
	return nil
}

// parseShare reads "5" or "10%" of n.
func parseShare(s string, n int) (int, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v < 0 || v > 100 {
			return 0, fmt.Errorf("--throttled %q: want a count or a share like 10%%", s)
		}
		return int(v*float64(n)/100 + 0.5), nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 || v > n {
		return 0, fmt.Errorf("--throttled %q: want a count up to the number of players or a share like 10%%", s)
	}
	return v, nil
}
