// Package peer measures a relaymesh relay against an nginx-rtmp pull edge
// of the same primary, side by side on one machine: the same swarm of
// viewers plays from each in turn, and the servers' own CPU time and memory
// are read from /proc. The figures that matter are ratios between the two
// servers measured in the same run, not absolute numbers.
package peer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/relaymesh/relaymesh/internal/rtmp"
	"github.com/relaymesh/relaymesh/loadtest/proc"
	"github.com/relaymesh/relaymesh/loadtest/swarm"
)

// Config of a comparison run.
type Config struct {
	Bin         string        // the relaymesh binary (default: this executable)
	Nginx       string        // the nginx binary (default "nginx")
	Module      string        // path of ngx_rtmp_module.so (default: Debian's)
	Viewers     []int         // swarm sizes (default 500 and 1000)
	Duration    time.Duration // per swarm and server (default 20s)
	BitrateKbps int           // video bitrate of the test stream (default 2500)
	WorkDir     string        // for logs and the nginx prefix (default: a temp dir)
	RelayConfig string        // configuration file for the relaymesh relay (optional)
	// RelayGOMAXPROCS, when above 0, runs the relay under test with that
	// GOMAXPROCS (default: the Go runtime's, every core), e.g. 1 to match
	// nginx-rtmp's one worker process.
	RelayGOMAXPROCS int
	// FloorDir is the source directory of the bare fan-out program; when
	// it exists the floor is measured at every size in the same run
	// (optional: the column is skipped without it).
	FloorDir string
	// PrimaryAdaptive leaves the primary's rounds adaptive instead of
	// writing every link in whole rounds (builds before rtmp.whole_rounds
	// do that anyway and refuse the key).
	PrimaryAdaptive bool
	// ProfileDir, when set, receives a CPU profile of the relay over each
	// steady window (relay-cpu-N.pprof) and a heap profile at its end
	// (relay-heap-N.pprof), from the relay's /debug/pprof.
	ProfileDir string
	// Pin runs the servers under test (relay, nginx-rtmp, floor) on the
	// last CPU and the swarm, the publisher and the primary on the others
	// (Linux, two CPUs or more): the relay's latency is then its own, not
	// its wait for a core it shares with the players. A diagnostic: on two
	// CPUs the swarm alone on one falls behind nginx-rtmp at 1,000 viewers,
	// so the CPU ratios of such a run are not the comparison.
	Pin      bool
	Progress io.Writer

	// HLS runs (RunHLS): nginx-rtmp's hls_fragment (default 2s, the GOP),
	// and the playlist reload interval of the clients (default 500ms).
	Fragment time.Duration
	Reload   time.Duration
	// HLSEntries are the relaymesh entries measured, each in its own
	// windows beside nginx-rtmp (EntryIndex, EntryMuxed; default both).
	HLSEntries []string
	// Warmup is how long one client plays from each server before the
	// first window (default 15s): nginx's first fragments, relaymesh's
	// pull and packager.
	Warmup time.Duration
}

// Result is one server at one swarm size.
type Result struct {
	Server           string  `json:"server"`
	Viewers          int     `json:"viewers"`
	Connected        int     `json:"connected"`
	CPUSeconds       float64 `json:"cpu_seconds"`
	CPUPerViewerMin  float64 `json:"cpu_s_per_viewer_minute"`
	RSSMiB           float64 `json:"rss_mib"`
	DeliveredMbps    float64 `json:"delivered_mbps"`
	MbpsPerCore      float64 `json:"delivered_mbps_per_core"`
	FirstFrameP50    float64 `json:"first_frame_p50_ms"`
	FirstFrameP99    float64 `json:"first_frame_p99_ms"`
	AllFirstVideoOK  bool    `json:"all_first_video_ok"`
	ViewersWithGaps  int     `json:"viewers_with_gaps"`
	MeanFramesPerSec float64 `json:"mean_frames_per_viewer_per_s"`
	// HopLatency is what the server adds per hop: when a sampled viewer
	// read a frame minus when a player reading the primary directly read it.
	HopLatency LatencyStats `json:"hop_latency"`
	// ServerLatency is the same hop measured by the relay itself (not for
	// nginx-rtmp): per media frame of its sampled viewers, from its arrival
	// in the hub to the return of the writev that handed it to the kernel,
	// over the steady window.
	ServerLatency *LatencyStats `json:"server_latency,omitempty"`
	// ServerLatencyKeepingUp is ServerLatency of the frames of viewers
	// whose socket took everything and whose media was not held back
	// within the last second: the wait that is the server's alone.
	ServerLatencyKeepingUp *LatencyStats `json:"server_latency_keeping_up,omitempty"`
	// WritesPerViewerSec is the server's write system calls (writev and
	// the like, /proc/PID/io) per viewer and second over the window.
	WritesPerViewerSec float64 `json:"writes_per_viewer_s"`
	// RunQueueMSPerSec is how long the server's threads waited for a CPU
	// while runnable, ms per second of the window (summed over threads):
	// the machine's other load, which shows in every latency figure.
	RunQueueMSPerSec float64 `json:"run_queue_ms_per_s"`
	// WakeupsPerSec is how many times a second the server's threads were
	// put on a CPU over the window (summed over threads): at low load,
	// its wake-ups, which make most of a Go server's fixed cost.
	WakeupsPerSec float64 `json:"wakeups_per_s"`
}

// Report holds every result and the relaymesh/nginx ratios.
type Report struct {
	Duration    string    `json:"duration"`
	BitrateKbps int       `json:"bitrate_kbps"`
	Results     []Result  `json:"results"`
	Ratios      []Ratio   `json:"ratios"`
	Started     time.Time `json:"started"`
	// Floor is the bare fan-out program at each size, or why it was skipped.
	Floor        []FloorResult `json:"floor,omitempty"`
	FloorSkipped string        `json:"floor_skipped,omitempty"`
	// Load is the load average (1, 5, 15 min) at the start and at the end.
	LoadStart string `json:"load_start"`
	LoadEnd   string `json:"load_end"`
}

// Ratio compares relaymesh to nginx at one swarm size (below 1: relaymesh is cheaper).
type Ratio struct {
	Viewers         int     `json:"viewers"`
	CPUPerViewerMin float64 `json:"cpu_per_viewer_minute"`
	RSS             float64 `json:"rss"`
	// Floor is relaymesh's CPU per viewer-minute over the bare fan-out's (0: not measured).
	Floor float64 `json:"floor,omitempty"`
}

func (c *Config) defaults() error {
	if c.ProfileDir != "" {
		// Made here, before the run: the profiles are written at the end
		// of each window, too late to learn that the directory is missing.
		if err := os.MkdirAll(c.ProfileDir, 0o755); err != nil {
			return fmt.Errorf("profile directory: %w", err)
		}
	}
	if c.Bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		c.Bin = exe
	}
	if c.Nginx == "" {
		c.Nginx = "nginx"
	}
	if c.Module == "" {
		c.Module = "/usr/lib/nginx/modules/ngx_rtmp_module.so"
	}
	if len(c.Viewers) == 0 {
		c.Viewers = []int{100, 400, 1000}
	}
	if c.Duration <= 0 {
		c.Duration = 20 * time.Second
	}
	if c.BitrateKbps <= 0 {
		c.BitrateKbps = 2500
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if _, err := exec.LookPath(c.Nginx); err != nil {
		return fmt.Errorf("nginx not found (apt-get install nginx libnginx-mod-rtmp): %w", err)
	}
	if _, err := os.Stat(c.Module); err != nil {
		return fmt.Errorf("nginx rtmp module: %w (apt-get install libnginx-mod-rtmp)", err)
	}
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		return errors.New("ffmpeg not found (apt-get install ffmpeg)")
	}
	return nil
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// env is a primary fed by ffmpeg, a relaymesh relay and an nginx-rtmp edge
// of it, running side by side.
type env struct {
	primary, relayRTMP, relayHTTP, nginxRTMP, nginxHTTP string
	relay, nginx                                        *exec.Cmd
	procs                                               []*exec.Cmd
	pin                                                 *pinning // nil: not pinned
}

// relayPIDs and nginxPIDs are the processes whose CPU time counts.
func (e *env) relayPIDs() []int { return []int{e.relay.Process.Pid} }
func (e *env) nginxPIDs() []int {
	return append([]int{e.nginx.Process.Pid}, proc.Children(e.nginx.Process.Pid)...)
}

// stop ends every process the environment started.
func (e *env) stop() {
	for _, p := range e.procs {
		_ = p.Process.Signal(os.Interrupt)
	}
	for _, p := range e.procs {
		done := make(chan struct{})
		go func() { _, _ = p.Process.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(8 * time.Second):
			_ = p.Process.Kill()
		}
	}
}

// startEnv starts the servers and the publisher; hls turns on nginx-rtmp's
// HLS (a static pull, so it packages without RTMP viewers) and its HTTP
// server. The caller stops the environment, also on error.
func startEnv(ctx context.Context, cfg Config, hls bool) (*env, error) {
	ports := make([]string, 6)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	e := &env{primary: ports[0], relayRTMP: ports[1], relayHTTP: ports[2], nginxRTMP: ports[4], nginxHTTP: ports[5]}
	if cfg.Pin {
		p, err := newPinning()
		if err != nil {
			return e, err
		}
		if err := p.pinSelf(); err != nil {
			return e, err
		}
		e.pin = p
		fmt.Fprintf(cfg.Progress, "pinned: %s\n", p.describe())
	}
	primaryHTTP := ports[3]
	var env []string // of the next process started (nil: this one's)
	server := false  // the next process started is a server under test
	start := func(name string, args ...string) (*exec.Cmd, error) {
		logf, err := os.Create(filepath.Join(cfg.WorkDir, filepath.Base(name)+strconv.Itoa(len(e.procs))+".log"))
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(name, args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.Env, env = env, nil
		onServers := server
		server = false
		if err := e.pin.start(cmd, onServers); err != nil {
			return nil, err
		}
		e.procs = append(e.procs, cmd)
		return cmd, nil
	}
	// The primary writes every link in whole rounds on one grid, so that
	// both edges get the same input: the 100 ms bursts a relay's link gets
	// (with adaptive rounds a plain player like nginx-rtmp's pull would get
	// each frame as it comes, which costs nginx-rtmp ~40 % more CPU).
	primaryConf := filepath.Join(cfg.WorkDir, "primary.yaml")
	pconf := "rtmp:\n  whole_rounds: true\n"
	if cfg.PrimaryAdaptive {
		pconf = "{}\n"
	}
	if err := os.WriteFile(primaryConf, []byte(pconf), 0o644); err != nil {
		return e, err
	}
	if _, err := start(cfg.Bin, "primary", "--config", primaryConf, "--rtmp", e.primary, "--http", primaryHTTP, "--open", "--log-level", "warn"); err != nil {
		return e, err
	}
	relayArgs := []string{"relay", "--id", "bench", "--upstream", "rtmp://" + e.primary, "--rtmp", e.relayRTMP, "--http", e.relayHTTP, "--log-level", "warn", "--linger", "10m"}
	if cfg.RelayConfig != "" {
		relayArgs = append(relayArgs, "--config", cfg.RelayConfig)
	}
	if cfg.RelayGOMAXPROCS > 0 {
		env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(cfg.RelayGOMAXPROCS))
	}
	if cfg.ProfileDir != "" {
		relayArgs = append(relayArgs, "--pprof")
	}
	var err error
	server = true
	if e.relay, err = start(cfg.Bin, relayArgs...); err != nil {
		return e, err
	}
	conf := filepath.Join(cfg.WorkDir, "nginx.conf")
	text := nginxConf(cfg.Module, cfg.WorkDir, e.nginxRTMP, e.primary)
	if hls {
		// nginx's workers (not root) write the fragments and read them.
		if err := os.Chmod(cfg.WorkDir, 0o755); err != nil {
			return e, err
		}
		dir := filepath.Join(cfg.WorkDir, "hls")
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return e, err
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			return e, err
		}
		text = nginxHLSConf(cfg.Module, cfg.WorkDir, e.nginxRTMP, e.nginxHTTP, e.primary, cfg.Fragment)
	}
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return e, err
	}
	server = true
	if e.nginx, err = start(cfg.Nginx, "-p", cfg.WorkDir, "-c", conf); err != nil {
		return e, err
	}
	for _, a := range []string{e.primary, e.relayRTMP, e.relayHTTP, e.nginxRTMP} {
		if err := waitListening(ctx, a); err != nil {
			return e, err
		}
	}
	k := strconv.Itoa(cfg.BitrateKbps) + "k"
	if _, err := start("ffmpeg", "-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-f", "lavfi", "-i", "sine=frequency=440",
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-pix_fmt", "yuv420p", "-g", "60",
		"-b:v", k, "-maxrate", k, "-bufsize", k, "-c:a", "aac", "-b:a", "96k",
		"-f", "flv", "rtmp://"+e.primary+"/live/bench"); err != nil {
		return e, err
	}
	if e.pin != nil {
		// A thread the runtime started while one had the servers' CPU for
		// a fork would have kept it.
		if err := e.pin.pinSelf(); err != nil {
			return e, err
		}
	}
	time.Sleep(3 * time.Second)
	return e, nil
}

func (c *Config) workDir() (func(), error) {
	if c.WorkDir != "" {
		return func() {}, nil
	}
	d, err := os.MkdirTemp("", "relaymesh-peer-")
	if err != nil {
		return nil, err
	}
	c.WorkDir = d
	return func() { os.RemoveAll(d) }, nil
}

// Run starts a primary, a relaymesh relay, an nginx-rtmp edge and an ffmpeg
// publisher, then plays each swarm size from each edge in turn.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	cleanup, err := cfg.workDir()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	e, err := startEnv(ctx, cfg, false)
	if e != nil {
		defer e.stop()
	}
	if err != nil {
		return nil, err
	}
	rep := &Report{Duration: cfg.Duration.String(), BitrateKbps: cfg.BitrateKbps, Started: time.Now(), LoadStart: loadAverage()}
	defer func() { rep.LoadEnd = loadAverage() }()
	floorBin := ""
	if cfg.FloorDir == "" {
		rep.FloorSkipped = "no floor program given"
	} else if b, err := buildFloor(ctx, cfg.FloorDir, cfg.WorkDir); err != nil {
		rep.FloorSkipped = err.Error()
	} else {
		floorBin = b
	}
	primaryURL := "rtmp://" + e.primary + "/live/bench"
	servers := []struct {
		name string
		addr string
		pids func() []int
		http string // the server's status endpoint ("": none)
	}{
		{"relaymesh", e.relayRTMP, e.relayPIDs, "http://" + e.relayHTTP},
		{"nginx-rtmp", e.nginxRTMP, e.nginxPIDs, ""},
	}
	for _, n := range cfg.Viewers {
		byServer := map[string]Result{}
		for _, s := range servers {
			fmt.Fprintf(cfg.Progress, "%s, %d viewers, %s\n", s.name, n, cfg.Duration)
			r, err := measure(ctx, cfg, s.name, "rtmp://"+s.addr+"/live/bench", primaryURL, n, s.pids, s.http)
			if err != nil {
				return rep, err
			}
			rep.Results = append(rep.Results, r)
			byServer[s.name] = r
		}
		a, b := byServer["relaymesh"], byServer["nginx-rtmp"]
		ratio := Ratio{Viewers: n}
		if b.CPUPerViewerMin > 0 {
			ratio.CPUPerViewerMin = a.CPUPerViewerMin / b.CPUPerViewerMin
		}
		if b.RSSMiB > 0 {
			ratio.RSS = a.RSSMiB / b.RSSMiB
		}
		if floorBin != "" {
			fmt.Fprintf(cfg.Progress, "floor (bare fan-out), %d viewers, %s\n", n, cfg.Duration)
			fl, err := runFloor(ctx, e.pin, floorBin, cfg.WorkDir, n, cfg.Duration)
			if err != nil {
				rep.FloorSkipped = err.Error()
				floorBin = ""
			} else {
				rep.Floor = append(rep.Floor, fl)
				if fl.CPUPerViewerMin > 0 {
					ratio.Floor = a.CPUPerViewerMin / fl.CPUPerViewerMin
				}
			}
		}
		rep.Ratios = append(rep.Ratios, ratio)
	}
	return rep, nil
}

func nginxConf(module, prefix, listen, primary string) string {
	return fmt.Sprintf(`load_module %s;
daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile 16384;
error_log %s/nginx-error.log warn;
pid %s/nginx.pid;
events { worker_connections 8192; }
rtmp {
    server {
        listen %s;
        chunk_size 4096;
        application live {
            live on;
            pull rtmp://%s/live;
        }
    }
}
`, module, prefix, prefix, listen, primary)
}

func waitListening(ctx context.Context, addr string) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s is not listening", addr)
}

// measure runs one swarm against one server and reads the server's CPU
// time and memory around it.
func measure(ctx context.Context, cfg Config, name, url, primaryURL string, n int, pids func() []int, status string) (Result, error) {
	// Warm the edge up (its upstream pull) before measuring.
	if _, err := swarm.Run(ctx, swarm.Config{URL: url, Viewers: 1, Duration: 3 * time.Second}); err != nil {
		return Result{}, err
	}
	// A player on the primary itself, for the time each frame left it
	// towards the edge: marked as a relay when the edge is relaymesh's
	// relay (the primary writes relays' links in whole rounds), a plain
	// player like nginx-rtmp's pull otherwise.
	const ramp = 5 * time.Second
	lat := newHopLatency(n)
	refDone := make(chan error, 1)
	var props map[string]any
	if name == "relaymesh" {
		props = map[string]any{rtmp.RelayMarker: "latency-reference"}
	}
	go func() {
		_, err := swarm.Run(ctx, swarm.Config{URL: primaryURL, Viewers: 1, Duration: 2*ramp + cfg.Duration + 5*time.Second, OnMedia: lat.reference, ConnectProps: props})
		refDone <- err
	}()
	time.Sleep(time.Second)
	// Every player plays Duration past the end of the ramp: the server's
	// CPU is read over those Duration seconds with every viewer playing
	// (steady: no handshakes, no join bursts, the same way the floor is
	// measured), and its RSS is the largest of once a second then.
	type steady struct {
		cpu, rss, writes, rq, slices float64
		lat, latUp                   *LatencyStats
	}
	window := make(chan steady, 1)
	go func() {
		select {
		case <-ctx.Done():
			window <- steady{}
			return
		case <-time.After(ramp + time.Second):
		}
		var lat0 histograms
		if status != "" {
			lat0, _ = scrapeHistogram(ctx, status+"/metrics", writeLatencyMetric, "viewer")
			if cfg.ProfileDir != "" {
				go profile(ctx, status, cfg.ProfileDir, n, cfg.Duration)
			}
		}
		latency := func() (all, up *LatencyStats) {
			if lat0 == nil {
				return nil, nil
			}
			lat1, err := scrapeHistogram(ctx, status+"/metrics", writeLatencyMetric, "viewer")
			if err != nil {
				return nil, nil
			}
			a, u := serverLatency(lat0[""], lat1[""]), serverLatency(lat0["keeping_up"], lat1["keeping_up"])
			return &a, &u
		}
		cpu0, writes0 := proc.CPUSeconds(pids()), writeCalls(pids())
		rq0, slices0 := schedStat(pids())
		var m float64
		t := time.NewTicker(time.Second)
		defer t.Stop()
		end := time.After(cfg.Duration)
		for {
			select {
			case <-ctx.Done():
				window <- steady{}
				return
			case <-end:
				all, up := latency()
				rq1, slices1 := schedStat(pids())
				window <- steady{proc.CPUSeconds(pids()) - cpu0, max(m, proc.RSSMiB(pids())), writeCalls(pids()) - writes0, rq1 - rq0, slices1 - slices0, all, up}
				return
			case <-t.C:
				m = max(m, proc.RSSMiB(pids()))
			}
		}
	}()
	play := ramp + cfg.Duration + 2*time.Second
	sr, err := swarm.Run(ctx, swarm.Config{URL: url, Viewers: n, Ramp: ramp, Duration: play, Progress: cfg.Progress, OnMedia: lat.swarm})
	w := <-window
	if err != nil {
		return Result{}, err
	}
	cpu, rss := w.cpu, w.rss
	wall := cfg.Duration.Seconds()
	r := Result{
		Server: name, Viewers: n, Connected: sr.Connected, CPUSeconds: cpu, RSSMiB: rss,
		DeliveredMbps: sr.Mbps, FirstFrameP50: sr.FirstFrameP50, FirstFrameP99: sr.FirstFrameP99,
		AllFirstVideoOK: sr.AllFirstOK,
	}
	if minutes := float64(sr.Connected) * cfg.Duration.Minutes(); minutes > 0 {
		r.CPUPerViewerMin = cpu / minutes
	}
	if cpu > 0 {
		r.MbpsPerCore = sr.Mbps / (cpu / wall)
	}
	if sr.Connected > 0 {
		r.WritesPerViewerSec = w.writes / float64(sr.Connected) / wall
	}
	r.RunQueueMSPerSec = w.rq * 1000 / wall
	r.WakeupsPerSec = w.slices / wall
	var frames float64
	for _, v := range sr.PerViewer {
		if v.Gaps > 0 {
			r.ViewersWithGaps++
		}
		frames += float64(v.Frames)
	}
	if sr.Connected > 0 {
		r.MeanFramesPerSec = frames / float64(sr.Connected) / play.Seconds()
	}
	if err := <-refDone; err != nil {
		return r, fmt.Errorf("reference player on the primary: %w", err)
	}
	r.HopLatency = lat.stats()
	r.ServerLatency, r.ServerLatencyKeepingUp = w.lat, w.latUp
	return r, nil
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
