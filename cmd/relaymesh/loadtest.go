package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/relaymesh/relaymesh/loadtest/peer"
	"github.com/relaymesh/relaymesh/loadtest/proc"
	"github.com/relaymesh/relaymesh/loadtest/swarm"
)

func init() {
	register(command{name: "loadtest", summary: "drive a server with swarms of real protocol clients (loadtest rtmp …)", run: runLoadtest})
}

func runLoadtest(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "peer" {
		return runLoadtestPeer(ctx, args[1:])
	}
	if len(args) > 0 && (args[0] == "hls" || args[0] == "dash") {
		return runLoadtestHTTP(ctx, args[0], args[1:])
	}
	if len(args) > 0 && args[0] == "httpfloor" {
		return runLoadtestFloor(ctx, args[1:])
	}
	if len(args) == 0 || args[0] != "rtmp" {
		fmt.Fprintln(os.Stderr, "usage: relaymesh loadtest rtmp --url rtmp://HOST:PORT/APP/NAME --viewers N [--ramp 5s] [--duration 30s] [--slow K --slow-rate 300kbit] [--json]")
		fmt.Fprintln(os.Stderr, "       relaymesh loadtest hls|dash --url http://HOST/…/index.m3u8|manifest.mpd --clients N [--duration 30s] [--throttled 10% --throttle-kbps 800] [--ll auto|off] [--pids PID,…] [--json]")
		fmt.Fprintln(os.Stderr, "       relaymesh loadtest peer [--proto rtmp|hls] [--viewers 500,1000] [--duration 20s] [--json]   (relaymesh relay vs nginx-rtmp edge)")
		fmt.Fprintln(os.Stderr, "       relaymesh loadtest httpfloor --upstream http://HOST/hls/APP/NAME/muxed.m3u8 [--listen ADDR]   (the HTTP floor of loadtest peer --proto hls)")
		return flag.ErrHelp
	}
	fs := flag.NewFlagSet("loadtest rtmp", flag.ContinueOnError)
	url := fs.String("url", "", "stream to play, rtmp://HOST:PORT/APP/NAME (required)")
	viewers := fs.Int("viewers", 10, "number of players")
	ramp := fs.Duration("ramp", 5*time.Second, "spread the connects over this long")
	duration := fs.Duration("duration", 30*time.Second, "how long each player plays")
	slow := fs.Int("slow", 0, "how many players read at --slow-rate")
	slowRate := fs.String("slow-rate", "300kbit", "read rate of slow players (e.g. 300kbit, 1.5mbit)")
	asJSON := fs.Bool("json", false, "print one JSON object on stdout instead of a readable report")
	perViewer := fs.Bool("per-viewer", false, "include every player in the JSON report")
	reconnectVia := fs.String("reconnect-via", "", "redirector URL (http://HOST/play/APP/NAME): a player whose connection ends reconnects through it (302 Location: rtmp://…); without --url the first connection asks it too")
	maxReconnects := fs.Int("max-reconnects", 100, "bound on the reconnect attempts of one player")
	pids := fs.String("pids", "", "comma-separated server process ids whose CPU time to report")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *url == "" && *reconnectVia == "" {
		return errors.New("--url (or --reconnect-via) is required")
	}
	pidList, err := proc.ParsePIDs(*pids)
	if err != nil {
		return err
	}
	bps, err := parseRate(*slowRate)
	if err != nil {
		return err
	}
	r, err := swarm.Run(ctx, swarm.Config{
		URL: *url, Viewers: *viewers, Ramp: *ramp, Duration: *duration,
		Slow: *slow, SlowRate: bps, Progress: os.Stderr,
		ReconnectVia: *reconnectVia, MaxReconnects: *maxReconnects, PIDs: pidList,
	})
	if err != nil {
		return err
	}
	if !*perViewer {
		r.PerViewer = nil
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	fmt.Printf("%s: %d/%d connected, first frame p50 %.0f ms p99 %.0f ms, %.1f Mbit/s delivered\n",
		r.URL, r.Connected, r.Viewers, r.FirstFrameP50, r.FirstFrameP99, r.Mbps)
	fmt.Printf("  every first video frame a keyframe after its sequence header: %v\n", r.AllFirstOK)
	for _, c := range []struct {
		name string
		c    swarm.Class
	}{{"normal", r.Normal}, {"slow", r.SlowClass}} {
		if c.c.Viewers > 0 {
			fmt.Printf("  %-6s %d players: %.0f frames each (min %d), %.2f Mbit/s, %d gaps (%d not at a keyframe), max lag %.0f ms\n",
				c.name, c.c.Viewers, c.c.MeanFrames, c.c.MinFrames, c.c.MeanMbps, c.c.Gaps, c.c.GapsNotAtKey, c.c.MaxLag)
		}
	}
	if *reconnectVia != "" {
		fmt.Printf("  reconnects %d (%d failed attempts), time to picture after a loss p50 %.0f ms p95 %.0f ms max %.0f ms\n",
			r.Reconnects, r.ReconnectFailures, r.ReconnectP50, r.ReconnectP95, r.ReconnectMax)
	}
	if s := r.Server; s != nil {
		fmt.Printf("  server pids %v: %.2f CPU-s (%.2f per minute, %.4f per viewer-minute), RSS %.1f MiB\n",
			s.PIDs, s.CPUSeconds, s.CPUPerMin, s.CPUPerViewerMin, s.RSSMiB)
	}
	for _, e := range r.Errors {
		fmt.Println("  error:", e)
	}
	return nil
}

// parseRate reads "300kbit", "2.5mbit", "500000" (bits per second).
func parseRate(s string) (int64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range []struct {
		suffix string
		m      float64
	}{{"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"bit", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("rate %q: want e.g. 300kbit", s)
	}
	return int64(v * mult), nil
}

func runLoadtestPeer(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("loadtest peer", flag.ContinueOnError)
	proto := fs.String("proto", "rtmp", "what the viewers play: rtmp, or hls (nginx-rtmp with hls on, plain HLS clients)")
	viewers := fs.String("viewers", "100,400,1000", "comma-separated swarm sizes (hls: default 1,20)")
	duration := fs.Duration("duration", 20*time.Second, "how long each swarm plays from each server (hls: the window, default 60s)")
	kbps := fs.Int("kbps", 2500, "video bitrate of the test stream")
	reload := fs.Duration("reload", 500*time.Millisecond, "hls: playlist reload interval of the clients")
	fragment := fs.Duration("fragment", 2*time.Second, "hls: nginx-rtmp's hls_fragment")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	relayConfig := fs.String("relay-config", "", "configuration file for the relaymesh relay under test")
	bin := fs.String("bin", "", "relaymesh binary run as the primary and the relay under test (default: this one), to compare builds")
	primaryAdaptive := fs.Bool("primary-adaptive", false, "leave the primary's write rounds adaptive (default: every link in whole rounds, so both edges get the same input; needed for builds without rtmp.whole_rounds)")
	hlsEntries := fs.String("hls-entries", "index,muxed,floor", "hls: what is measured, each beside nginx-rtmp in its own windows: index (the ladder's top rung with the separate audio rendition), muxed (muxed.m3u8, the audio inside the video segments), floor (muxed.m3u8 mirrored and served from memory by Go's net/http alone: loadtest httpfloor)")
	relayProcs := fs.Int("relay-gomaxprocs", 0, "run the relay under test with this GOMAXPROCS (default: every core; 1 matches nginx-rtmp's one worker)")
	pin := fs.Bool("pin", false, "run the servers under test (relay, nginx-rtmp, floor) on the last CPU and the swarm, the publisher and the primary on the others (Linux, two CPUs or more): the relay's latency without its wait for a core; a diagnostic, its CPU ratios are not the comparison (the swarm on fewer CPUs falls behind)")
	floor := fs.String("floor", "", "source directory of the bare fan-out program (measured beside the servers at each size; skipped when absent)")
	profileDir := fs.String("profile", "", "directory for CPU and heap profiles of the relay over each steady window (relay-cpu-N.pprof, relay-heap-N.pprof)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *proto == "hls" {
		if !set["viewers"] {
			*viewers = "1,20"
		}
		if !set["duration"] {
			*duration = 60 * time.Second
		}
	} else if *proto != "rtmp" {
		return fmt.Errorf("--proto %q: want rtmp or hls", *proto)
	}
	var sizes []int
	for _, s := range strings.Split(*viewers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return fmt.Errorf("--viewers %q: want numbers like 500,1000", *viewers)
		}
		sizes = append(sizes, n)
	}
	cfg := peer.Config{Viewers: sizes, Duration: *duration, BitrateKbps: *kbps, Progress: os.Stderr, RelayConfig: *relayConfig,
		Reload: *reload, Fragment: *fragment, FloorDir: *floor, Bin: *bin, PrimaryAdaptive: *primaryAdaptive,
		HLSEntries: strings.Split(*hlsEntries, ","), RelayGOMAXPROCS: *relayProcs, ProfileDir: *profileDir, Pin: *pin}
	if *proto == "hls" {
		r, err := peer.RunHLS(ctx, cfg)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(os.Stdout).Encode(r)
		}
		fmt.Printf("HLS, %s windows, playlists every %s, each whole segment once\n", r.Duration, r.Reload)
		fmt.Printf("%-15s %-15s %7s %7s %12s %8s %9s %8s %7s %6s\n", "server", "beside", "viewers", "playing", "cpu-s/min", "RSS MiB", "req/v-min", "Mbit/s", "stalls", "errors")
		for _, x := range r.Results {
			errs := 0
			for _, v := range x.Errors {
				errs += v
			}
			fmt.Printf("%-15s %-15s %7d %7d %12.3f %8.1f %9.1f %8.1f %7d %6d\n", x.Server, x.Beside, x.Viewers, x.Playing, x.CPUPerMin, x.RSSMiB, x.RequestsPerViewer, x.Mbps, x.Stalls, errs)
		}
		for _, x := range r.Servers {
			beside := ""
			if x.Beside != "" {
				beside = " (beside " + x.Beside + ")"
			}
			fmt.Printf("%s%s: %.4f CPU-s/min per added viewer\n", x.Server, beside, x.CPUPerAddedViewer)
		}
		for _, x := range r.Ratios {
			fmt.Printf("ratio %s/nginx at %d viewers: CPU-s per minute %.2f\n", x.Relaymesh, x.Viewers, x.CPUPerMin)
		}
		for _, x := range r.PerAdded {
			fmt.Printf("ratio %s/nginx per added viewer: %.2f\n", x.Relaymesh, x.Ratio)
		}
		return nil
	}
	r, err := peer.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	fmt.Printf("load average at start %s, at end %s\n", r.LoadStart, r.LoadEnd)
	fmt.Printf("%-11s %7s %9s %12s %8s %10s %10s %9s %9s %5s %9s %9s %9s %9s %7s %7s %7s %7s\n", "server", "viewers", "connected", "cpu-s/v-min", "RSS MiB", "Mbit/s", "Mbit/s/core", "ff p50 ms", "ff p99 ms", "gaps", "hop p50", "hop p99", "srv p50", "srv p99", "up p99", "wr/v/s", "rq ms/s", "wk/s")
	for _, x := range r.Results {
		srv := fmt.Sprintf("%9s %9s %7s", "-", "-", "-")
		if x.ServerLatency != nil && x.ServerLatencyKeepingUp != nil {
			srv = fmt.Sprintf("%9.1f %9.1f %7.1f", x.ServerLatency.P50, x.ServerLatency.P99, x.ServerLatencyKeepingUp.P99)
		}
		wr := fmt.Sprintf("%7s", "-") // the kernel did not say (another user's process)
		if x.WritesPerViewerSec > 0 {
			wr = fmt.Sprintf("%7.1f", x.WritesPerViewerSec)
		}
		fmt.Printf("%-11s %7d %9d %12.4f %8.1f %10.0f %10.0f %9.0f %9.0f %5d %9.1f %9.1f %s %s %7.0f %7.0f\n", x.Server, x.Viewers, x.Connected, x.CPUPerViewerMin, x.RSSMiB, x.DeliveredMbps, x.MbpsPerCore, x.FirstFrameP50, x.FirstFrameP99, x.ViewersWithGaps, x.HopLatency.P50, x.HopLatency.P99, srv, wr, x.RunQueueMSPerSec, x.WakeupsPerSec)
	}
	for _, x := range r.Floor {
		fmt.Printf("%-11s %7d %9s %12.4f %8s %10.0f   (bare fan-out, %s; %.1f writes per viewer-second)\n", "floor", x.Viewers, "", x.CPUPerViewerMin, "", x.DeliveredMbps, x.Mode, x.WritesPerViewerSec)
	}
	if r.FloorSkipped != "" {
		fmt.Printf("floor skipped: %s\n", r.FloorSkipped)
	}
	for _, x := range r.Ratios {
		line := fmt.Sprintf("ratio relaymesh/nginx at %d viewers: CPU per viewer-minute %.2f, RSS %.2f", x.Viewers, x.CPUPerViewerMin, x.RSS)
		if x.Floor > 0 {
			line += fmt.Sprintf("; relaymesh/floor CPU %.2f", x.Floor)
		}
		fmt.Println(line)
	}
	fmt.Println("hop p50/p99: ms a sampled viewer read a frame after a player on the primary read it (what the edge adds per hop, the client's reading included)")
	fmt.Println("wr/v/s: the server's write system calls per viewer and second; rq ms/s: ms per second its threads waited for a CPU (other load); wk/s: times a second its threads were put on a CPU (at low load, its wake-ups)")
	fmt.Println("srv p50/p99: ms from a frame's arrival in the relay's hub to the return of the writev that carried it, sampled viewers (what the relay adds per hop); up p99: the same for viewers that kept up (socket not full, media not held back, within the last second)")
	return nil
}
