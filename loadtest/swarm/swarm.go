// Package swarm is a swarm of light RTMP players: one goroutine each, no
// decoding beyond FLV tag headers. It measures what viewers of a relaymesh
// server (or any RTMP server) experience: connection success, time to first
// frame, frames and bytes, timestamp gaps (frames dropped for them), whether
// video always restarts at a keyframe, and lag behind the live edge.
package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relaymesh/relaymesh/internal/rtmp"
	"github.com/relaymesh/relaymesh/loadtest/internal/throttle"
	"github.com/relaymesh/relaymesh/loadtest/proc"
)

// Config of a swarm run.
type Config struct {
	URL      string        // rtmp://host:port/app/name
	Viewers  int           // how many players
	Ramp     time.Duration // spread the connects over this long
	Duration time.Duration // how long each player plays after it connected (run ends by Ramp+Duration)
	Slow     int           // how many of the players read at SlowRate
	SlowRate int64         // bits per second for slow players (default 300 kbit/s)
	// RecvBuffer sets SO_RCVBUF of slow players, bytes (default 16 KiB), so
	// the kernel does not hide their slowness behind megabytes of buffer.
	RecvBuffer int
	// Record, when set, is called for each player; a non-nil writer gets the
	// player's stream as an FLV file.
	Record func(id int, slow bool) io.WriteCloser
	// Warmup is how long after its first frame a player's lag is not
	// measured (default 5s): a joining player first receives the GOP cache,
	// which is behind the live edge by design (that is what makes the first
	// picture instant), and a slow player needs a while to skip past it.
	Warmup time.Duration
	// OnMedia, when set, is called by every player for each audio, video
	// or data message it reads, with the time it read it (latency
	// measurement). It is called from the players' goroutines at once and
	// must be cheap.
	OnMedia func(viewer int, typ uint8, ts uint32, at time.Time)
	// ConnectProps are extra properties of the players' connect command
	// (rtmp.RelayMarker makes a player read like a downstream relay).
	ConnectProps map[string]any
	// Progress, when set, receives a progress line every second.
	Progress io.Writer
	Log      *slog.Logger

	// ReconnectVia, when set, is a redirector URL (http://…/play/APP/NAME):
	// a player whose connection ends (EOF, close, UnpublishNotify) asks it
	// for a server (a 302 with Location: rtmp://…, or a JSON answer with
	// "url") and plays from there. Without URL the first connection asks it
	// too.
	ReconnectVia string
	// MaxReconnects bounds the attempts of one player (default 100).
	MaxReconnects int
	// PIDs of the server processes whose CPU time the report gives.
	PIDs []int
}

// Viewer is what one player saw.
type Viewer struct {
	ID        int  `json:"id"`
	Slow      bool `json:"slow"`
	Connected bool `json:"connected"`
	// Error is why the player stopped before its time was up. With
	// ReconnectVia a connection that ends is not an error when a later one
	// brings a picture again: its reason is in LastLoss.
	Error       string  `json:"error,omitempty"`
	LastLoss    string  `json:"last_loss,omitempty"`
	FirstFrame  float64 `json:"first_frame_ms"` // from dial to the first video frame
	Frames      int64   `json:"frames"`
	VideoFrames int64   `json:"video_frames"`
	AudioFrames int64   `json:"audio_frames"`
	Bytes       int64   `json:"bytes"`
	// FirstVideoOK: the first video frame was a keyframe and a sequence header came before it.
	FirstVideoOK bool `json:"first_video_ok"`
	// Gaps counts jumps in video timestamps larger than twice the frame interval.
	Gaps int `json:"gaps"`
	// GapsNotAtKey counts gaps after which the next video frame was not a keyframe.
	GapsNotAtKey int     `json:"gaps_not_at_key"`
	MaxLag       float64 `json:"max_lag_ms"` // behind the live edge, after the warm-up
	MeanLag      float64 `json:"mean_lag_ms"`
	// Reconnects counts connections after the first that brought a
	// picture; ReconnectMs the time from each loss to the first keyframe
	// of the next connection (redirector answer and failed attempts
	// included).
	Reconnects        int       `json:"reconnects,omitempty"`
	ReconnectFailures int       `json:"reconnect_failures,omitempty"`
	ReconnectMs       []float64 `json:"reconnect_ms,omitempty"`
	// Servers are the hosts the player played from, in order.
	Servers []string `json:"servers,omitempty"`

	offsets []lagSample
}

type lagSample struct {
	at     time.Duration // since the player connected
	offset int64         // wall ms - stream ms
}

// Report summarises a run.
type Report struct {
	URL           string   `json:"url"`
	Viewers       int      `json:"viewers"`
	Connected     int      `json:"connected"`
	Failed        int      `json:"failed"`
	FirstFrameP50 float64  `json:"first_frame_p50_ms"`
	FirstFrameP99 float64  `json:"first_frame_p99_ms"`
	Frames        int64    `json:"frames"`
	Bytes         int64    `json:"bytes"`
	Mbps          float64  `json:"mbps"`
	AllFirstOK    bool     `json:"all_first_video_ok"`
	Normal        Class    `json:"normal"`
	SlowClass     Class    `json:"slow"`
	Errors        []string `json:"errors,omitempty"`
	Elapsed       float64  `json:"elapsed_s"`
	// With ReconnectVia: reconnections that brought a picture, failed
	// attempts, and the time from a loss to the next picture.
	Reconnects        int          `json:"reconnects,omitempty"`
	ReconnectFailures int          `json:"reconnect_failures,omitempty"`
	ReconnectP50      float64      `json:"reconnect_to_picture_p50_ms,omitempty"`
	ReconnectP95      float64      `json:"reconnect_to_picture_p95_ms,omitempty"`
	ReconnectMax      float64      `json:"reconnect_to_picture_max_ms,omitempty"`
	Server            *proc.Server `json:"server,omitempty"`
	PerViewer         []Viewer     `json:"per_viewer,omitempty"`
	withoutViewers    bool
}

// Class aggregates normal or slow players.
type Class struct {
	Viewers      int     `json:"viewers"`
	MeanFrames   float64 `json:"mean_frames"`
	MinFrames    int64   `json:"min_frames"`
	Gaps         int     `json:"gaps"`
	GapsNotAtKey int     `json:"gaps_not_at_key"`
	MaxLag       float64 `json:"max_lag_ms"`
	MeanMbps     float64 `json:"mean_mbps"`
}

// Run plays cfg.Viewers players and returns the report once every player
// is done (Ramp + Duration, or ctx).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	var u rtmp.URL
	switch {
	case cfg.URL != "":
		var err error
		if u, err = rtmp.ParseURL(cfg.URL, 1); err != nil {
			return nil, err
		}
		if u.Name == "" {
			return nil, fmt.Errorf("%s: no stream name", cfg.URL)
		}
	case cfg.ReconnectVia == "":
		return nil, fmt.Errorf("no URL to play")
	}
	if cfg.MaxReconnects <= 0 {
		cfg.MaxReconnects = 100
	}
	if cfg.Viewers <= 0 {
		return nil, fmt.Errorf("viewers must be positive")
	}
	if cfg.SlowRate <= 0 {
		cfg.SlowRate = 300_000
	}
	if cfg.RecvBuffer <= 0 {
		cfg.RecvBuffer = 16 << 10
	}
	if cfg.Warmup <= 0 {
		cfg.Warmup = 5 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	start := time.Now()
	meter := proc.Start(cfg.PIDs)
	viewers := make([]*Viewer, cfg.Viewers)
	var wg sync.WaitGroup
	var live atomic.Int64
	var frames, bytes atomic.Int64
	stopProgress := make(chan struct{})
	if cfg.Progress != nil {
		go progress(cfg.Progress, start, cfg.Viewers, &live, &frames, &bytes, stopProgress)
	}
	for i := 0; i < cfg.Viewers; i++ {
		if cfg.Ramp > 0 && cfg.Viewers > 1 {
			at := start.Add(time.Duration(int64(cfg.Ramp) * int64(i) / int64(cfg.Viewers-1)))
			select {
			case <-time.After(time.Until(at)):
			case <-ctx.Done():
			}
		}
		v := &Viewer{ID: i, Slow: i < cfg.Slow}
		viewers[i] = v
		wg.Add(1)
		go func() {
			defer wg.Done()
			play(ctx, cfg, u, v, &live, &frames, &bytes)
		}()
	}
	wg.Wait()
	close(stopProgress)
	r := summarize(cfg, viewers, time.Since(start))
	r.Server = meter.Stop(float64(r.Connected) * cfg.Duration.Minutes())
	return r, nil
}

func progress(w io.Writer, start time.Time, n int, live, frames, bytes *atomic.Int64, stop chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var lastBytes int64
	for {
		select {
		case <-stop:
			fmt.Fprintln(w)
			return
		case <-t.C:
			b := bytes.Load()
			fmt.Fprintf(w, "\r%5.0fs  playing %d/%d  frames %d  %.1f Mbit/s   ", time.Since(start).Seconds(), live.Load(), n, frames.Load(), float64(b-lastBytes)*8/1e6)
			lastBytes = b
		}
	}
}

// play is one player: a connection, and with ReconnectVia a new one
// through the redirector each time one ends, until its time is up.
func play(ctx context.Context, cfg Config, u rtmp.URL, v *Viewer, live, frames, bytes *atomic.Int64) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration+10*time.Second)
	defer cancel()
	var (
		end    time.Time // set once the first connection plays
		lostAt time.Time // when the last connection ended
		st     = &playState{}
	)
	for attempt := 0; ; attempt++ {
		target, err := u, error(nil)
		if cfg.ReconnectVia != "" && (attempt > 0 || cfg.URL == "") {
			target, err = resolve(ctx, cfg.ReconnectVia)
		}
		if err == nil {
			err = session(ctx, cfg, target, v, st, &end, lostAt, live, frames, bytes)
		}
		if cfg.ReconnectVia == "" || ctx.Err() != nil || !end.IsZero() && !time.Now().Before(end) {
			if err != nil && v.Error == "" && ctx.Err() == nil && (end.IsZero() || time.Now().Before(end)) {
				v.Error = err.Error()
			}
			return
		}
		if err != nil {
			// An error until a later connection brings a picture again.
			v.Error, v.LastLoss = err.Error(), err.Error()
		}
		if attempt >= cfg.MaxReconnects {
			return
		}
		switch {
		case st.pictured || lostAt.IsZero() && v.Connected:
			// This connection played: the loss is now.
			lostAt = time.Now()
		case !lostAt.IsZero():
			v.ReconnectFailures++
		}
		st.pictured = false
		// At once after a loss, then a pause growing while attempts fail,
		// to 300 ms: a redirector names a dead server for a second or two
		// after its death, and a player should not wait long beyond that.
		d := time.Duration(min(v.ReconnectFailures, 3)) * 100 * time.Millisecond
		if lostAt.IsZero() {
			d = 200 * time.Millisecond // the first connection is still to be made
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		if !end.IsZero() && !time.Now().Before(end) {
			return
		}
	}
}

// playState is what a player carries from one connection to the next.
type playState struct {
	pictured bool // the current connection brought a keyframe
}

// resolve asks the redirector where to play.
func resolve(ctx context.Context, via string) (rtmp.URL, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, via, nil)
	if err != nil {
		return rtmp.URL{}, err
	}
	req.Header.Set("Accept", "application/json, */*;q=0.5")
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		return rtmp.URL{}, fmt.Errorf("redirector: %w", err)
	}
	defer resp.Body.Close()
	var loc string
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		loc = resp.Header.Get("Location")
	case resp.StatusCode == http.StatusOK:
		var ans struct {
			URL string `json:"url"`
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&ans); err != nil {
			return rtmp.URL{}, fmt.Errorf("redirector: answer: %w", err)
		}
		loc = ans.URL
	default:
		return rtmp.URL{}, fmt.Errorf("redirector: HTTP %d", resp.StatusCode)
	}
	u, err := rtmp.ParseURL(loc, 1)
	if err != nil {
		return rtmp.URL{}, fmt.Errorf("redirector: location %q: %w", loc, err)
	}
	if u.Name == "" {
		return rtmp.URL{}, fmt.Errorf("redirector: location %q has no stream name", loc)
	}
	return u, nil
}

// errUnpublished ends a connection whose stream was unpublished there.
var errUnpublished = errors.New(rtmp.CodePlayUnpublishNotify)

// session plays one connection until it ends or the player's time is up
// (end, set by the first connection that plays). lostAt, when set, is when
// the previous connection ended: the first keyframe here closes the
// reconnect.
func session(ctx context.Context, cfg Config, u rtmp.URL, v *Viewer, st *playState, end *time.Time, lostAt time.Time, live, frames, bytes *atomic.Int64) error {
	t0 := time.Now()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return err
	}
	if v.Slow {
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(cfg.RecvBuffer)
		}
		nc = throttle.NewLink(float64(cfg.SlowRate)).Conn(ctx, nc)
	}
	cc, err := rtmp.DialConn(ctx, nc, u, rtmp.ConnConfig{ReadTimeout: 15 * time.Second, ConnectProps: cfg.ConnectProps}, cfg.Log)
	if err != nil {
		nc.Close()
		return err
	}
	defer cc.Close(nil)
	stop := context.AfterFunc(ctx, func() { cc.Close(ctx.Err()) })
	defer stop()
	if _, err := cc.Play(ctx, u.Name); err != nil {
		return err
	}
	first := end.IsZero()
	if first {
		v.Connected = true
		*end = time.Now().Add(cfg.Duration)
	}
	v.Servers = append(v.Servers, u.Host)
	live.Add(1)
	defer live.Add(-1)
	var rec *flvWriter
	if cfg.Record != nil && first {
		if w := cfg.Record(v.ID, v.Slow); w != nil {
			rec = newFLVWriter(w)
			defer rec.Close()
		}
	}
	// Lag is sampled from each connection's start, after its own warm-up.
	playStart := time.Now()
	var (
		sawSeq, sawVideo bool
		lastVTS          uint32
		minDelta         uint32        = math.MaxUint32
		lastSample       time.Duration = -time.Hour
	)
	for time.Now().Before(*end) {
		m, err := cc.ReadMessage()
		if err != nil {
			if ctx.Err() == nil && time.Now().Before(*end) {
				return err
			}
			return nil
		}
		if m.Type == rtmp.TypeCommandAMF0 && cfg.ReconnectVia != "" {
			if cmd, err := rtmp.ParseCommand(m); err == nil && cmd.Name == "onStatus" {
				switch rtmp.StatusOf(cmd).Code {
				case rtmp.CodePlayUnpublishNotify, rtmp.CodePlayStop:
					return errUnpublished
				}
			}
			continue
		}
		if m.Type != rtmp.TypeAudio && m.Type != rtmp.TypeVideo && m.Type != rtmp.TypeDataAMF0 {
			continue
		}
		now := time.Now()
		if cfg.OnMedia != nil {
			cfg.OnMedia(v.ID, m.Type, m.Timestamp, now)
		}
		v.Frames++
		v.Bytes += int64(len(m.Payload))
		frames.Add(1)
		bytes.Add(int64(len(m.Payload)))
		if rec != nil {
			rec.Write(m.Type, m.Timestamp, m.Payload)
		}
		switch m.Type {
		case rtmp.TypeAudio:
			v.AudioFrames++
		case rtmp.TypeVideo:
			if len(m.Payload) < 2 {
				continue
			}
			key := m.Payload[0]>>4 == 1
			seq := m.Payload[0]&0x0f == 7 && m.Payload[1] == 0
			if seq {
				sawSeq = true
				continue
			}
			v.VideoFrames++
			if key && !st.pictured {
				st.pictured = true
				if !lostAt.IsZero() {
					v.Error = "" // playing on: the loss is in LastLoss
					v.Reconnects++
					v.ReconnectMs = append(v.ReconnectMs, float64(now.Sub(lostAt).Microseconds())/1000)
				}
			}
			if !sawVideo {
				sawVideo = true
				if first {
					v.FirstFrame = float64(now.Sub(t0).Microseconds()) / 1000
					v.FirstVideoOK = key && sawSeq
				}
				lastVTS = m.Timestamp
				break
			}
			if m.Timestamp > lastVTS {
				delta := m.Timestamp - lastVTS
				if delta < minDelta {
					minDelta = delta
				} else if minDelta > 0 && minDelta < math.MaxUint32 && delta > 2*minDelta && delta > 50 {
					v.Gaps++
					// The frame that closes the gap is the one after it.
					if !key {
						v.GapsNotAtKey++
					}
				}
			}
			lastVTS = m.Timestamp
		}
		if at := now.Sub(playStart); at-lastSample >= 100*time.Millisecond {
			lastSample = at
			v.offsets = append(v.offsets, lagSample{at: at, offset: now.UnixMilli() - int64(m.Timestamp)})
		}
	}
	return nil
}

func summarize(cfg Config, vs []*Viewer, elapsed time.Duration) *Report {
	r := &Report{URL: cfg.URL, Viewers: len(vs), AllFirstOK: true, Elapsed: elapsed.Seconds()}
	// The live edge: the smallest wall-minus-stream offset any player saw.
	edge := int64(math.MaxInt64)
	for _, v := range vs {
		for _, s := range v.offsets {
			edge = min(edge, s.offset)
		}
	}
	var firsts []float64
	for _, v := range vs {
		var sum float64
		var n int
		for _, s := range v.offsets {
			if s.at < cfg.Warmup {
				continue
			}
			lag := float64(s.offset - edge)
			v.MaxLag = math.Max(v.MaxLag, lag)
			sum += lag
			n++
		}
		if n > 0 {
			v.MeanLag = sum / float64(n)
		}
		v.offsets = nil
		if !v.Connected {
			r.Failed++
			if len(r.Errors) < 10 && v.Error != "" {
				r.Errors = append(r.Errors, v.Error)
			}
			continue
		}
		r.Connected++
		r.Frames += v.Frames
		r.Bytes += v.Bytes
		if v.VideoFrames > 0 {
			firsts = append(firsts, v.FirstFrame)
		}
		if !v.FirstVideoOK {
			r.AllFirstOK = false
		}
		c := &r.Normal
		if v.Slow {
			c = &r.SlowClass
		}
		if c.Viewers == 0 || v.Frames < c.MinFrames {
			c.MinFrames = v.Frames
		}
		c.Viewers++
		c.MeanFrames += float64(v.Frames)
		c.Gaps += v.Gaps
		c.GapsNotAtKey += v.GapsNotAtKey
		c.MaxLag = math.Max(c.MaxLag, v.MaxLag)
		c.MeanMbps += float64(v.Bytes) * 8 / 1e6 / cfg.Duration.Seconds()
	}
	for _, c := range []*Class{&r.Normal, &r.SlowClass} {
		if c.Viewers > 0 {
			c.MeanFrames /= float64(c.Viewers)
			c.MeanMbps /= float64(c.Viewers)
		}
	}
	if r.Connected == 0 {
		r.AllFirstOK = false
	}
	var recon []float64
	for _, v := range vs {
		r.Reconnects += v.Reconnects
		r.ReconnectFailures += v.ReconnectFailures
		recon = append(recon, v.ReconnectMs...)
	}
	if len(recon) > 0 {
		sort.Float64s(recon)
		r.ReconnectP50, r.ReconnectP95, r.ReconnectMax = percentile(recon, 0.5), percentile(recon, 0.95), recon[len(recon)-1]
	}
	sort.Float64s(firsts)
	r.FirstFrameP50 = percentile(firsts, 0.50)
	r.FirstFrameP99 = percentile(firsts, 0.99)
	r.Mbps = float64(r.Bytes) * 8 / 1e6 / elapsed.Seconds()
	r.PerViewer = make([]Viewer, len(vs))
	for i, v := range vs {
		r.PerViewer[i] = *v
	}
	return r
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
