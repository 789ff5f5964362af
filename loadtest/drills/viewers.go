package drills

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/relaymesh/relaymesh/internal/rtmp"
	"github.com/relaymesh/relaymesh/loadtest/swarm"
)

// Player is one RTMP viewer run by the harness from a viewer host. It
// records when each video frame arrived, and with Via set it reconnects
// through the redirector whenever its connection ends, the way a player
// that asks /play again would.
type Player struct {
	Host *Host
	URL  string
	// Via, when set, is asked for a URL to play after a connection ended.
	Via func(ctx context.Context) (string, error)

	mu       sync.Mutex
	frames   []time.Time
	ends     []time.Time // connections that ended
	played   []string    // URLs that were played
	lastErr  string
	attempts int
}

// Run plays until ctx ends (or, without Via, until the connection ends).
func (p *Player) Run(ctx context.Context) {
	u := p.URL
	for ctx.Err() == nil {
		if u != "" {
			p.play(ctx, u)
		}
		if p.Via == nil || ctx.Err() != nil {
			return
		}
		u = ""
		for ctx.Err() == nil {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			nu, err := p.Via(cctx)
			cancel()
			if err == nil && nu != "" {
				u = nu
				break
			}
			p.fail(err)
			sleep(ctx, 100*time.Millisecond)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (p *Player) fail(err error) {
	if err == nil {
		return
	}
	p.mu.Lock()
	p.lastErr = err.Error()
	p.mu.Unlock()
}

func (p *Player) play(ctx context.Context, raw string) {
	p.mu.Lock()
	p.attempts++
	p.mu.Unlock()
	u, err := rtmp.ParseURL(raw, 1)
	if err != nil {
		p.fail(err)
		return
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	nc, err := p.Host.NS.Dial(dctx, u.Host)
	cancel()
	if err != nil {
		p.fail(err)
		sleep(ctx, 100*time.Millisecond)
		return
	}
	cc, err := rtmp.DialConn(ctx, nc, u, rtmp.ConnConfig{ReadTimeout: 30 * time.Second, HandshakeTimeout: 3 * time.Second}, nil)
	if err != nil {
		nc.Close()
		p.fail(err)
		sleep(ctx, 100*time.Millisecond)
		return
	}
	defer cc.Close(nil)
	stop := context.AfterFunc(ctx, func() { cc.Close(ctx.Err()) })
	defer stop()
	if _, err := cc.Play(ctx, u.Name); err != nil {
		p.fail(err)
		sleep(ctx, 100*time.Millisecond)
		return
	}
	p.mu.Lock()
	p.played = append(p.played, raw)
	p.mu.Unlock()
	for {
		m, err := cc.ReadMessage()
		if err != nil {
			p.mu.Lock()
			p.ends = append(p.ends, time.Now())
			p.mu.Unlock()
			p.fail(err)
			return
		}
		if m.Type != rtmp.TypeVideo || len(m.Payload) < 2 {
			continue
		}
		if m.Payload[0]&0x0f == 7 && m.Payload[1] == 0 {
			continue // sequence header
		}
		p.mu.Lock()
		p.frames = append(p.frames, time.Now())
		p.mu.Unlock()
	}
}

// FirstFrameAfter is how long after t the first video frame arrived
// (-1 if none).
func (p *Player) FirstFrameAfter(t time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.frames {
		if f.After(t) {
			return f.Sub(t)
		}
	}
	return -1
}

// LongestStall is the longest time without a video frame within [from, to].
func (p *Player) LongestStall(from, to time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	last := from
	var worst time.Duration
	for _, f := range p.frames {
		if f.Before(from) {
			continue
		}
		if f.After(to) {
			break
		}
		worst = max(worst, f.Sub(last))
		last = f
	}
	return max(worst, to.Sub(last))
}

// EndsAfter counts connections that ended after t.
func (p *Player) EndsAfter(t time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, e := range p.ends {
		if e.After(t) {
			n++
		}
	}
	return n
}

// Played is the URLs played so far.
func (p *Player) Played() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.played...)
}

// Players runs n players from host v on url in the background.
func Players(ctx context.Context, v *Host, url string, n int, via func(context.Context) (string, error)) []*Player {
	ps := make([]*Player, n)
	for i := range ps {
		ps[i] = &Player{Host: v, URL: url, Via: via}
		go ps[i].Run(ctx)
	}
	return ps
}

// Swarm is a `relaymesh loadtest rtmp` run from a viewer host.
type Swarm struct {
	done   chan struct{}
	Report *swarm.Report
	Err    error
}

// StartSwarm runs n RTMP viewers of url from host v for d (connects spread
// over ramp), with the load tester's JSON report.
func (m *Mesh) StartSwarm(v *Host, url string, n int, ramp, d time.Duration, tag string, extra ...string) *Swarm {
	s := &Swarm{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		var out bytes.Buffer
		args := append([]string{"loadtest", "rtmp", "--url", url, "--viewers", strconv.Itoa(n),
			"--ramp", ramp.String(), "--duration", d.String(), "--json", "--per-viewer"}, extra...)
		cmd := v.NS.Command(m.Cfg.Bin, args...)
		cmd.Stdout = &out
		lf, err := os.Create(filepath.Join(m.Cfg.Dir, "swarm-"+tag+".log"))
		if err == nil {
			cmd.Stderr = lf
			defer lf.Close()
		}
		if err := cmd.Run(); err != nil {
			s.Err = fmt.Errorf("loadtest rtmp from %s: %w", v.Name, err)
			return
		}
		var r swarm.Report
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			s.Err = fmt.Errorf("loadtest rtmp report: %w", err)
			return
		}
		s.Report = &r
	}()
	return s
}

// Wait waits for the swarm's report.
func (s *Swarm) Wait() (*swarm.Report, error) {
	<-s.done
	return s.Report, s.Err
}

// Lost sums up what a swarm's viewers lost: viewers that failed or ended
// with an error, and gaps (frames dropped for them).
func Lost(r *swarm.Report) (failed, errored, gaps int) {
	if r == nil {
		return -1, -1, -1
	}
	for _, v := range r.PerViewer {
		if !v.Connected {
			failed++
		} else if v.Error != "" {
			errored++
		}
	}
	return failed, errored, r.Normal.Gaps + r.SlowClass.Gaps
}
