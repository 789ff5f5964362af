package peer

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/relaymesh/relaymesh/loadtest/httpswarm"
)

// nginxHLSConf is the edge with nginx-rtmp's HLS on: a static pull of the
// bench stream (nginx packages it from start, as relaymesh packages from
// the first request on), fragments of one GOP, a 14 s playlist (relaymesh
// lists 7 segments of 2 s), served by nginx's HTTP server.
func nginxHLSConf(module, prefix, rtmpListen, httpListen, primary string, fragment time.Duration) string {
	dir := filepath.Join(prefix, "hls")
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
            pull rtmp://%s/live/bench name=bench static;
            hls on;
            hls_path %s;
            hls_fragment %dms;
            hls_playlist_length 14s;
        }
    }
}
http {
    access_log off;
    client_body_temp_path %s/client_body;
    proxy_temp_path %s/proxy;
    fastcgi_temp_path %s/fastcgi;
    uwsgi_temp_path %s/uwsgi;
    scgi_temp_path %s/scgi;
    server {
        listen %s;
        location /hls/ {
            alias %s/;
            types { application/vnd.apple.mpegurl m3u8; video/mp2t ts; }
            add_header Cache-Control no-cache;
        }
    }
}
`, module, prefix, prefix, rtmpListen, primary, dir, fragment.Milliseconds(), prefix, prefix, prefix, prefix, prefix, httpListen, dir)
}

// HLSResult is one server at one audience size.
type HLSResult struct {
	// Server is "nginx-rtmp", or the relaymesh entry played: "relaymesh"
	// (index.m3u8, the default ladder: video and the separate audio
	// rendition) or "relaymesh-muxed" (muxed.m3u8: audio inside the video
	// segments, as nginx-rtmp's one TS rendition).
	Server string `json:"server"`
	// Beside names the relaymesh entry measured in the same window (nginx
	// rows only).
	Beside  string `json:"beside,omitempty"`
	Viewers int    `json:"viewers"`
	Playing int    `json:"playing"`
	// CPUSeconds over the window; CPUPerMin per minute of it (packaging
	// included: it is what the server costs with this audience).
	CPUSeconds float64 `json:"cpu_seconds"`
	CPUPerMin  float64 `json:"cpu_s_per_min"`
	RSSMiB     float64 `json:"rss_mib"`
	// Requests per viewer-minute and by kind.
	Requests          map[string]int `json:"requests"`
	RequestsPerViewer float64        `json:"requests_per_viewer_minute"`
	Mbps              float64        `json:"mbps"`
	StartupP50        float64        `json:"startup_p50_ms"`
	Stalls            int            `json:"stalls"`
	Errors            map[string]int `json:"errors,omitempty"`
}

// HLSServer sums up one server over the audience sizes.
type HLSServer struct {
	Server string `json:"server"`
	Beside string `json:"beside,omitempty"`
	// CPUPerAddedViewer is the slope of CPU-s per minute between the
	// smallest and the largest audience: what one more viewer costs.
	CPUPerAddedViewer float64 `json:"cpu_s_per_min_per_added_viewer"`
}

// HLSRatio compares a relaymesh entry to nginx-rtmp measured in the same
// window (below 1: relaymesh is cheaper).
type HLSRatio struct {
	Relaymesh string  `json:"relaymesh"`
	Viewers   int     `json:"viewers"`
	CPUPerMin float64 `json:"cpu_per_min"`
}

// HLSPerAdded is the per-added-viewer ratio of a relaymesh entry to the
// nginx-rtmp windows beside it.
type HLSPerAdded struct {
	Relaymesh string  `json:"relaymesh"`
	Ratio     float64 `json:"ratio"`
}

// HLSReport is a RunHLS comparison.
type HLSReport struct {
	Duration    string      `json:"window"`
	BitrateKbps int         `json:"bitrate_kbps"`
	Reload      string      `json:"reload"`
	Started     time.Time   `json:"started"`
	Results     []HLSResult `json:"results"`
	Servers     []HLSServer `json:"servers"`
	Ratios      []HLSRatio  `json:"ratios"`
	// PerAddedRatio is the first entry's (the default ladder's) ratio per
	// added viewer; PerAdded has every entry's.
	PerAddedRatio float64       `json:"cpu_per_added_viewer_ratio"`
	PerAdded      []HLSPerAdded `json:"per_added"`
}

// The relaymesh entries RunHLS can measure (Config.HLSEntries).
const (
	EntryIndex = "index" // index.m3u8: the ladder, top rung, separate audio
	EntryMuxed = "muxed" // muxed.m3u8: the audio inside full's segments
	// EntryFloor is not relaymesh's serving but its floor: muxed.m3u8 and
	// its segments mirrored by `relaymesh loadtest httpfloor`
	// (loadtest/httpfloor) and served from memory by Go's net/http alone,
	// the same requests and bytes as the muxed entry's. Its process runs
	// for its own windows only.
	EntryFloor = "floor"
)

// RunHLS compares the HLS serving of a relaymesh relay and an nginx-rtmp
// edge with hls on, pulling the same primary: for each audience size and
// each relaymesh entry (Config.HLSEntries, default index then muxed), both
// servers get the same swarm of plain HLS clients at the same time
// (playlists every Reload, each whole segment once) for one window, and
// their CPU time is read from /proc around it. nginx-rtmp is measured again
// beside every entry, so each ratio compares one window.
func RunHLS(ctx context.Context, cfg Config) (*HLSReport, error) {
	if len(cfg.Viewers) == 0 {
		cfg.Viewers = []int{1, 20}
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 60 * time.Second
	}
	if cfg.Fragment <= 0 {
		cfg.Fragment = 2 * time.Second
	}
	if cfg.Reload <= 0 {
		cfg.Reload = 500 * time.Millisecond
	}
	if cfg.Warmup <= 0 {
		cfg.Warmup = 15 * time.Second
	}
	if len(cfg.HLSEntries) == 0 {
		cfg.HLSEntries = []string{EntryIndex, EntryMuxed, EntryFloor}
	}
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	type server struct {
		name string
		url  string
		pids func() []int
		// start, when set, starts the server before each of its windows;
		// the function it returns stops it.
		start func() (func(), error)
	}
	var relays []server
	cleanup, err := cfg.workDir()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	e, err := startEnv(ctx, cfg, true)
	if e != nil {
		defer e.stop()
	}
	if err != nil {
		return nil, err
	}
	for _, en := range cfg.HLSEntries {
		switch en {
		case EntryIndex:
			relays = append(relays, server{name: "relaymesh", url: "http://" + e.relayHTTP + "/hls/live/bench/index.m3u8", pids: e.relayPIDs})
		case EntryMuxed:
			relays = append(relays, server{name: "relaymesh-muxed", url: "http://" + e.relayHTTP + "/hls/live/bench/muxed.m3u8", pids: e.relayPIDs})
		case EntryFloor:
			port, err := freePort()
			if err != nil {
				return nil, err
			}
			f := &floorProc{bin: cfg.Bin, dir: cfg.WorkDir, pin: e.pin, listen: port, upstream: "http://" + e.relayHTTP + "/hls/live/bench/muxed.m3u8"}
			relays = append(relays, server{name: "go-http-floor", url: "http://" + port + "/muxed.m3u8", pids: f.pids,
				start: func() (func(), error) { return f.start(ctx) }})
		default:
			return nil, fmt.Errorf("HLS entry %q: want %s, %s or %s", en, EntryIndex, EntryMuxed, EntryFloor)
		}
	}
	nginx := server{name: "nginx-rtmp", url: "http://" + e.nginxHTTP + "/hls/bench.m3u8", pids: e.nginxPIDs}
	swarm := func(url string, n int, d time.Duration, pids []int) (*httpswarm.Report, error) {
		return httpswarm.Run(ctx, httpswarm.Config{URL: url, Proto: httpswarm.HLS, Clients: n, Duration: d,
			LowLatency: httpswarm.LLOff, Reload: cfg.Reload, Rendition: "top", PIDs: pids})
	}
	// Both servers must have a playlist before anyone is measured: nginx
	// writes its first one after a pull and a whole fragment, later on a
	// busy machine than any fixed warm-up allows.
	var all []server
	for _, s := range append(append([]server{}, relays...), nginx) {
		if s.start == nil { // the floor is started for its windows
			all = append(all, s)
		}
	}
	for _, s := range all {
		if err := waitPlaylist(ctx, s.url, time.Minute); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	// Warm up: nginx's first fragments, relaymesh's pull and packager.
	fmt.Fprintf(cfg.Progress, "warming up both servers (%s)\n", cfg.Warmup)
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = swarm(s.url, 1, cfg.Warmup, nil)
		}()
	}
	wg.Wait()
	rep := &HLSReport{Duration: cfg.Duration.String(), BitrateKbps: cfg.BitrateKbps, Reload: cfg.Reload.String(), Started: time.Now()}
	// byPair[relay name][server name][viewers]
	byPair := map[string]map[string]map[int]HLSResult{}
	for _, n := range cfg.Viewers {
		for _, relay := range relays {
			fmt.Fprintf(cfg.Progress, "%s and nginx-rtmp, %d viewers each, %s\n", relay.name, n, cfg.Duration)
			stop := func() {}
			if relay.start != nil {
				var err error
				if stop, err = relay.start(); err != nil {
					return rep, fmt.Errorf("%s: %w", relay.name, err)
				}
				if err := waitPlaylist(ctx, relay.url, time.Minute); err != nil {
					stop()
					return rep, fmt.Errorf("%s: %w", relay.name, err)
				}
			}
			pair := []server{relay, nginx}
			results := make([]HLSResult, len(pair))
			errs := make([]error, len(pair))
			for i, s := range pair {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := swarm(s.url, n, cfg.Duration, s.pids())
					if err != nil {
						errs[i] = err
						return
					}
					res := HLSResult{Server: s.name, Viewers: n, Playing: r.All.Started, Requests: r.Requests,
						Mbps: r.Mbps, StartupP50: r.All.StartupMs.P50, Stalls: r.All.Stalls}
					if s.name == nginx.name {
						res.Beside = relay.name
					}
					if len(r.Errors) > 0 {
						res.Errors = r.Errors
					}
					if sv := r.Server; sv != nil {
						res.CPUSeconds, res.CPUPerMin, res.RSSMiB = sv.CPUSeconds, sv.CPUPerMin, sv.RSSMiB
					}
					total := 0
					for _, v := range r.Requests {
						total += v
					}
					if r.ViewerMinutes > 0 {
						res.RequestsPerViewer = float64(total) / r.ViewerMinutes
					}
					results[i] = res
				}()
			}
			wg.Wait()
			stop()
			for _, err := range errs {
				if err != nil {
					return rep, err
				}
			}
			if byPair[relay.name] == nil {
				byPair[relay.name] = map[string]map[int]HLSResult{}
			}
			for _, r := range results {
				rep.Results = append(rep.Results, r)
				if byPair[relay.name][r.Server] == nil {
					byPair[relay.name][r.Server] = map[int]HLSResult{}
				}
				byPair[relay.name][r.Server][n] = r
			}
			if b := byPair[relay.name][nginx.name][n].CPUPerMin; b > 0 {
				rep.Ratios = append(rep.Ratios, HLSRatio{Relaymesh: relay.name, Viewers: n, CPUPerMin: byPair[relay.name][relay.name][n].CPUPerMin / b})
			}
		}
	}
	lo, hi := cfg.Viewers[0], cfg.Viewers[0]
	for _, n := range cfg.Viewers {
		lo, hi = min(lo, n), max(hi, n)
	}
	for k, relay := range relays {
		slope := map[string]float64{}
		for _, name := range []string{relay.name, nginx.name} {
			var per float64
			if hi > lo {
				per = (byPair[relay.name][name][hi].CPUPerMin - byPair[relay.name][name][lo].CPUPerMin) / float64(hi-lo)
			}
			slope[name] = per
			sv := HLSServer{Server: name, CPUPerAddedViewer: per}
			if name == nginx.name {
				sv.Beside = relay.name
			}
			rep.Servers = append(rep.Servers, sv)
		}
		if slope[nginx.name] > 0 {
			ratio := slope[relay.name] / slope[nginx.name]
			rep.PerAdded = append(rep.PerAdded, HLSPerAdded{Relaymesh: relay.name, Ratio: ratio})
			if k == 0 {
				rep.PerAddedRatio = ratio
			}
		}
	}
	return rep, nil
}

// waitPlaylist polls url until it answers 200, for at most limit.
func waitPlaylist(ctx context.Context, url string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no playlist at %s within %s", url, limit)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// floorProc runs `relaymesh loadtest httpfloor` (EntryFloor) for a window.
type floorProc struct {
	bin, dir, listen, upstream string
	pin                        *pinning // nil: not pinned

	mu  sync.Mutex
	cmd *exec.Cmd
}

func (f *floorProc) pids() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cmd == nil || f.cmd.Process == nil {
		return nil
	}
	return []int{f.cmd.Process.Pid}
}

// start starts the floor; the function it returns stops it.
func (f *floorProc) start(ctx context.Context) (func(), error) {
	logf, err := os.OpenFile(filepath.Join(f.dir, "httpfloor.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, f.bin, "loadtest", "httpfloor", "--upstream", f.upstream, "--listen", f.listen)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := f.pin.start(cmd, true); err != nil {
		logf.Close()
		return nil, err
	}
	f.mu.Lock()
	f.cmd = cmd
	f.mu.Unlock()
	return func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
		f.mu.Lock()
		f.cmd = nil
		f.mu.Unlock()
	}, nil
}
