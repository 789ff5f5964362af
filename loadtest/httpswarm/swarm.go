// Package httpswarm is a swarm of light HLS and DASH players: no decoding,
// but the requests of a player. Each client loads the playlists or the
// manifest, reloads them (blocking reloads with _HLS_msn/_HLS_part and
// parts for low-latency HLS), fetches one segment or part at a time, picks
// its rendition from the throughput it measures (moving up and down with
// hysteresis), fetches the separate audio rendition when the ladder has
// one, and keeps a playout buffer model that tells its start-up time and
// its stalls. Some clients can be throttled to a byte rate in userspace.
// The run is bounded in clients and time and stops by itself.
package httpswarm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relaymesh/relaymesh/loadtest/internal/throttle"
	"github.com/relaymesh/relaymesh/loadtest/proc"
)

// Protocols.
const (
	HLS  = "hls"
	DASH = "dash"
)

// Low-latency modes.
const (
	// LLAuto plays low-latency HLS where the playlist offers it: blocking
	// reloads and parts.
	LLAuto = "auto"
	// LLOff plays as a player without low-latency support: playlists
	// polled, whole segments.
	LLOff = "off"
)

// Bounds of a run.
const (
	MaxClients  = 20000
	MaxDuration = 2 * time.Hour
)

// Config of a run. Zero values mean the documented defaults.
type Config struct {
	URL      string        // the multivariant (or a media) playlist, or the MPD
	Proto    string        // HLS or DASH (default: from the URL's extension)
	Clients  int           // default 10
	Ramp     time.Duration // spread the starts over this long (default 5s)
	Duration time.Duration // how long each client plays (default 30s)

	// Throttled clients read at most ThrottleKbps kbit/s (default 800).
	Throttled    int
	ThrottleKbps int

	// LowLatency is LLAuto (default) or LLOff.
	LowLatency string
	// Reload, when set, is the interval between playlist (or manifest)
	// loads of a polling client; by default HLS follows the spec (the target
	// duration, half of it after an unchanged reload) and DASH the MPD's
	// minimumUpdatePeriod.
	Reload time.Duration
	// StartSegments is how many segments back from the live edge a client
	// without parts starts (default 3; a DASH suggestedPresentationDelay
	// overrides it).
	StartSegments int
	// Rendition, when set, fixes every client on one rung: its name
	// (e.g. "full"), "top" or "bottom"; ABR is off.
	Rendition string
	// Start is the first rung of an ABR client: "first" (default: the first
	// variant listed, or the first Representation), "top" or "bottom".
	Start string
	// ABR hysteresis: move up to a rung whose bandwidth is at most ABRUp ×
	// the estimate (default 0.7), down when the current one's exceeds
	// ABRDown × the estimate (default 0.9); at least ABRHold between moves
	// up (default 4s).
	ABRUp, ABRDown float64
	ABRHold        time.Duration
	// ABRTiming is how a download is timed for the estimate: "first-byte"
	// (default: from its first body byte to its last) or "request" (from
	// the request to the last byte, as players that time whole requests do:
	// a blocking reload's hold or a part still being written then counts).
	ABRTiming string

	// Session adds session=ID (the run's and the client's number) to every
	// request's query, as a player that names its session does: servers
	// that count viewers by it (relaymesh's packager) count each client,
	// though all come from one address.
	Session bool

	RequestTimeout time.Duration // one request, blocking reloads included (default 10s)
	MaxMediaBytes  int64         // one segment, part or init segment (default 64 MiB)

	// PIDs of the server processes whose CPU time the report gives.
	PIDs []int
	// Progress, when set, receives a progress line every second.
	Progress io.Writer
}

func (c *Config) defaults() error {
	if c.URL == "" {
		return errors.New("httpswarm: no URL")
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("httpswarm: %q is not an http(s) URL", c.URL)
	}
	if c.Proto == "" {
		switch {
		case strings.HasSuffix(u.Path, ".mpd"), u.Query().Get("proto") == "dash":
			c.Proto = DASH
		default:
			c.Proto = HLS
		}
	}
	if c.Proto != HLS && c.Proto != DASH {
		return fmt.Errorf("httpswarm: protocol %q (want hls or dash)", c.Proto)
	}
	if c.Clients == 0 {
		c.Clients = 10
	}
	if c.Clients < 0 || c.Clients > MaxClients {
		return fmt.Errorf("httpswarm: %d clients (1 to %d)", c.Clients, MaxClients)
	}
	if c.Ramp < 0 || c.Ramp > MaxDuration {
		return fmt.Errorf("httpswarm: ramp %v (0 to %v)", c.Ramp, MaxDuration)
	}
	if c.Duration == 0 {
		c.Duration = 30 * time.Second
	}
	if c.Duration < 0 || c.Duration > MaxDuration {
		return fmt.Errorf("httpswarm: duration %v (up to %v)", c.Duration, MaxDuration)
	}
	if c.Throttled < 0 || c.Throttled > c.Clients {
		return fmt.Errorf("httpswarm: %d throttled of %d clients", c.Throttled, c.Clients)
	}
	if c.ThrottleKbps == 0 {
		c.ThrottleKbps = 800
	}
	if c.ThrottleKbps < 8 {
		return fmt.Errorf("httpswarm: throttle of %d kbit/s", c.ThrottleKbps)
	}
	switch c.LowLatency {
	case "":
		c.LowLatency = LLAuto
	case LLAuto, LLOff:
	default:
		return fmt.Errorf("httpswarm: low-latency mode %q (want auto or off)", c.LowLatency)
	}
	if c.Reload < 0 || c.Reload > time.Minute {
		return fmt.Errorf("httpswarm: reload interval %v", c.Reload)
	}
	if c.Reload > 0 && c.Reload < 50*time.Millisecond {
		c.Reload = 50 * time.Millisecond
	}
	if c.StartSegments <= 0 {
		c.StartSegments = 3
	}
	switch c.Start {
	case "":
		c.Start = "first"
	case "first", "top", "bottom":
	default:
		return fmt.Errorf("httpswarm: start rung %q (want first, top or bottom)", c.Start)
	}
	if c.ABRUp <= 0 {
		c.ABRUp = 0.7
	}
	if c.ABRDown <= 0 {
		c.ABRDown = 0.9
	}
	if c.ABRUp > c.ABRDown {
		return fmt.Errorf("httpswarm: ABR up factor %.2f above the down factor %.2f (no hysteresis)", c.ABRUp, c.ABRDown)
	}
	if c.ABRHold <= 0 {
		c.ABRHold = 4 * time.Second
	}
	switch c.ABRTiming {
	case "":
		c.ABRTiming = "first-byte"
	case "first-byte", "request":
	default:
		return fmt.Errorf("httpswarm: ABR timing %q (want first-byte or request)", c.ABRTiming)
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 10 * time.Second
	}
	if c.MaxMediaBytes <= 0 {
		c.MaxMediaBytes = 64 << 20
	}
	return nil
}

// totals are the swarm's live counters, for the progress line.
type totals struct {
	playing, stalls, bytes, requests, errors atomic.Int64
}

// client is one player.
type client struct {
	cfg   *Config
	http  *http.Client
	start time.Time
	tot   *totals
	sess  string // the session query parameter (Config.Session), or ""

	mu       sync.Mutex
	play     *playout
	est      *estimator
	abr      abr
	st       ClientStats
	reported int // stalls already added to tot
}

// startRung is the first rung of a client on ladder vs (ascending; first is
// the index of the default).
func (c *client) startRung(vs []variant, first int) int {
	if r := c.cfg.Rendition; r != "" {
		switch r {
		case "top":
			return len(vs) - 1
		case "bottom":
			return 0
		}
		for i, v := range vs {
			if v.Name == r {
				return i
			}
		}
		return len(vs) - 1
	}
	switch c.cfg.Start {
	case "top":
		return len(vs) - 1
	case "bottom":
		return 0
	}
	return min(max(first, 0), len(vs)-1)
}

func (c *client) setTracks(n int, rung string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.play = newPlayout(n)
	c.st.Rendition = rung
}

// chooseRung is the ABR decision before a new segment.
func (c *client) chooseRung(cur int, vs []variant) int {
	if c.cfg.Rendition != "" {
		return cur
	}
	now := time.Now()
	stalled := c.play.stalled(now)
	bws := make([]int, len(vs))
	for i, v := range vs {
		bws[i] = v.Bandwidth
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.abr.choose(cur, bws, c.est.bps(), stalled, now)
	switch {
	case n > cur:
		c.st.SwitchesUp++
	case n < cur:
		c.st.SwitchesDown++
	}
	c.st.Rendition = vs[n].Name
	return n
}

func (c *client) count(kind string, bytes int64) {
	c.mu.Lock()
	if kind != "" {
		c.st.Requests[kind]++
	}
	c.st.Bytes += bytes
	c.mu.Unlock()
	if kind != "" {
		c.tot.requests.Add(1)
	}
	c.tot.bytes.Add(bytes)
}

func (c *client) fail(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return // the run is ending: not the server's fault
	}
	k := errKind(err)
	if errors.Is(err, errEnded) {
		k = "ended"
	}
	c.mu.Lock()
	c.st.Errors[k]++
	c.st.LastError = err.Error()
	c.mu.Unlock()
	c.tot.errors.Add(1)
}

func (c *client) resync() {
	c.mu.Lock()
	c.st.Resyncs++
	c.mu.Unlock()
}

// timing is the duration of a download as the estimate counts it.
func (c *client) timing(f *fetched) time.Duration {
	if c.cfg.ABRTiming == "request" {
		return f.Total
	}
	return f.Transfer
}

// media records a media download of track: sec of media of rung, n bytes.
func (c *client) media(track int, rung string, sec float64, n int64, transfer time.Duration) {
	now := time.Now()
	started, startAt, stalls := c.play.add(track, sec, now)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st.FirstMediaMs == 0 {
		c.st.FirstMediaMs = ms(now.Sub(c.start))
	}
	if started && !c.st.Started {
		c.st.Started = true
		c.st.StartupMs = ms(startAt.Sub(c.start))
		c.tot.playing.Add(1)
	}
	c.st.MediaS[rung] += sec
	c.est.add(n, transfer)
	if d := stalls - c.reported; d > 0 {
		c.tot.stalls.Add(int64(d))
		c.reported = stalls
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Run plays cfg.Clients clients and returns the report once every one is
// done (Ramp + Duration, or ctx).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	start := time.Now()
	meter := proc.Start(cfg.PIDs)
	tot := &totals{}
	clients := make([]*client, cfg.Clients)
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	if cfg.Progress != nil {
		go func() {
			defer close(progressDone)
			progress(cfg.Progress, start, cfg.Clients, tot, stopProgress)
		}()
	} else {
		close(progressDone)
	}
	var wg sync.WaitGroup
	for i := range cfg.Clients {
		if cfg.Ramp > 0 && cfg.Clients > 1 {
			sleep(ctx, time.Until(start.Add(time.Duration(int64(cfg.Ramp)*int64(i)/int64(cfg.Clients-1)))))
		}
		if ctx.Err() != nil {
			clients = clients[:i]
			break
		}
		// Throttled clients spread evenly over the swarm.
		throttled := i*cfg.Throttled/cfg.Clients != (i+1)*cfg.Throttled/cfg.Clients
		c := &client{cfg: &cfg, start: time.Now(), tot: tot, est: newEstimator(),
			abr: abr{up: cfg.ABRUp, down: cfg.ABRDown, hold: cfg.ABRHold},
			st: ClientStats{ID: i, Throttled: throttled, MediaS: map[string]float64{},
				Requests: map[string]int{}, Errors: map[string]int{}}}
		if cfg.Session {
			c.sess = fmt.Sprintf("%x-%d", start.UnixNano()&0xffffffff, i)
		}
		clients[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(ctx)
		}()
	}
	wg.Wait()
	close(stopProgress)
	<-progressDone
	elapsed := time.Since(start)
	r := summarize(&cfg, clients, elapsed)
	r.Server = meter.Stop(r.ViewerMinutes)
	return r, nil
}

func (c *client) run(parent context.Context) {
	ctx, cancel := context.WithTimeout(parent, c.cfg.Duration)
	defer cancel()
	var link *throttle.Link
	if c.st.Throttled {
		link = throttle.NewLink(float64(c.cfg.ThrottleKbps) * 1000)
	}
	hc := newHTTPClient(ctx, c.cfg, link)
	c.http = hc
	defer hc.CloseIdleConnections()
	switch c.cfg.Proto {
	case DASH:
		c.runDASH(ctx)
	default:
		c.runHLS(ctx)
	}
	end := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.play != nil {
		p := c.play
		p.finish(end)
		p.mu.Lock()
		c.st.Stalls = p.stalls
		c.st.StallS = p.stallTime.Seconds()
		c.st.MaxStallS = p.maxStall.Seconds()
		if p.started {
			c.st.PlayedS = end.Sub(p.startAt).Seconds()
		}
		if l, ok := p.lag(end); ok {
			c.st.LiveLagS = &l
		}
		p.mu.Unlock()
	}
	c.st.EstimateKbps = c.est.bps() / 1000
	if c.st.Started {
		c.tot.playing.Add(-1)
	}
}

func progress(w io.Writer, start time.Time, n int, tot *totals, stop chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var lastBytes, lastReqs int64
	for {
		select {
		case <-stop:
			fmt.Fprintln(w)
			return
		case <-t.C:
			b, rq := tot.bytes.Load(), tot.requests.Load()
			fmt.Fprintf(w, "\r%5.0fs  playing %d/%d  stalls %d  %.1f Mbit/s  %d req/s  errors %d   ",
				time.Since(start).Seconds(), tot.playing.Load(), n, tot.stalls.Load(),
				float64(b-lastBytes)*8/1e6, rq-lastReqs, tot.errors.Load())
			lastBytes, lastReqs = b, rq
		}
	}
}
