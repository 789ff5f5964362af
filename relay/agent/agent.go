// Package agent connects a relay to the control plane: it reports the
// relay's status to the bus every interval (a key in a bucket with a TTL, so
// a dead relay vanishes, plus a status message) and obeys the
// orchestrator's commands (open a stream from a parent, drain, close) by
// request-reply. The relay keeps serving whatever happens to the bus: the
// agent only retries.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/relaymesh/relaymesh/internal/bus"
)

// Puller is the part of the relay's upstream the agent drives
// (*pull.Upstream implements it).
type Puller interface {
	// Hold pulls app/name from parent (rtmp://host:port; "" for the
	// configured upstream) and keeps it until Release; it returns once the
	// upstream plays (or refused, or ctx ended). The parent is the
	// orchestrator's choice for this stream only: other streams, and pulls
	// for viewers, keep the configured upstream.
	Hold(ctx context.Context, app, name, parent string) error
	// Release stops pulling app/name.
	Release(app, name string)
}

// StatsFunc returns the current per-stream load of the relay.
type StatsFunc func() []bus.StreamStatus

// Config describes the relay to the control plane.
type Config struct {
	ID       string // relay id, a subject token (required)
	Location string // location id in the graph
	RTMP     string // host:port viewers play from
	HTTP     string // host:port for HLS/DASH
	RTMPS    string // host:port of RTMPS (optional)
	HTTPS    string // host:port of HTTPS for HLS/DASH (optional)
	// CapacityViewers and CapacityMbps are the soft limits (0: unlimited).
	CapacityViewers int
	CapacityMbps    float64
	// Interval between status reports. Default 2 s.
	Interval time.Duration
	// OpenTimeout bounds how long an open command waits for the upstream.
	// Default 15 s.
	OpenTimeout time.Duration
	// MaxCommands bounds commands being carried out at once; more are
	// refused with a retryable error. Default 16.
	MaxCommands int
	// Buckets sets the bucket TTLs when the agent creates them.
	Buckets bus.BucketConfig
	// AliveInterval between heartbeats (liveness.go). Default
	// bus.DefaultAliveInterval.
	AliveInterval time.Duration
}

func (c *Config) defaults() {
	if c.Interval <= 0 {
		c.Interval = 2 * time.Second
	}
	if c.OpenTimeout <= 0 {
		c.OpenTimeout = 15 * time.Second
	}
	if c.MaxCommands <= 0 {
		c.MaxCommands = 16
	}
	if c.AliveInterval <= 0 {
		c.AliveInterval = bus.DefaultAliveInterval
	}
}

// Agent is one relay's link to the control plane.
type Agent struct {
	cfg    Config
	conn   *bus.Conn
	stats  StatsFunc
	puller Puller
	log    *slog.Logger

	sem      chan struct{}
	draining atomic.Bool
	mu       sync.Mutex
	held     map[string]bool // app/name → held by a command
	statSubj string
	cmdSubj  string
	alvSubj  string
	reports  atomic.Uint64
	kick     chan struct{} // a status report now (drain)
}

// New returns an agent; Run starts it. puller may be nil (the primary,
// which pulls from nobody): open and close are then refused.
func New(cfg Config, conn *bus.Conn, stats StatsFunc, puller Puller, log *slog.Logger) (*Agent, error) {
	cfg.defaults()
	st, err := bus.StatusSubject(cfg.ID)
	if err != nil {
		return nil, fmt.Errorf("agent: relay id: %w", err)
	}
	cs, _ := bus.CommandSubject(cfg.ID)
	as, _ := bus.AliveSubject(cfg.ID)
	if conn == nil || stats == nil {
		return nil, errors.New("agent: conn and stats are required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Agent{cfg: cfg, conn: conn, stats: stats, puller: puller, log: log.With("component", "agent"),
		sem: make(chan struct{}, cfg.MaxCommands), held: map[string]bool{}, statSubj: st, cmdSubj: cs, alvSubj: as,
		kick: make(chan struct{}, 1)}, nil
}

// Reports counts the status reports stored so far.
func (a *Agent) Reports() uint64 { return a.reports.Load() }

// Draining reports whether the orchestrator asked this relay to drain.
func (a *Agent) Draining() bool { return a.draining.Load() }

// Run reports status and serves commands until ctx ends. It returns nil
// then; it never gives up because the bus is away.
func (a *Agent) Run(ctx context.Context) error {
	var buckets *bus.Buckets
	// The goodbye is the last word: after the heartbeats and commands stopped.
	defer func() { a.goodbye(buckets) }()
	var wg sync.WaitGroup
	defer wg.Wait()
	cmdCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub, err := a.conn.NC.Subscribe(a.cmdSubj, func(m *nats.Msg) {
		if m.Reply == "" {
			return
		}
		select {
		case a.sem <- struct{}{}:
		default:
			a.respond(m, errors.New("busy: too many commands in progress, retry"))
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-a.sem }()
			a.respond(m, a.handle(cmdCtx, m.Data))
		}()
	})
	if err != nil {
		return fmt.Errorf("agent: subscribe: %w", err)
	}
	defer sub.Unsubscribe()
	wg.Add(1)
	go func() { defer wg.Done(); a.heartbeat(ctx) }()

	t := time.NewTicker(a.cfg.Interval)
	defer t.Stop()
	for {
		if buckets == nil {
			octx, ocancel := context.WithTimeout(ctx, a.cfg.Interval)
			buckets, err = a.conn.OpenBuckets(octx, a.cfg.Buckets)
			ocancel()
			if err != nil && ctx.Err() == nil {
				a.log.Debug("status bucket unavailable, will retry", "err", err)
			}
		}
		a.report(ctx, buckets)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-a.kick:
		}
	}
}

// Status builds the current status report.
func (a *Agent) Status() bus.Status {
	s := bus.Status{ID: a.cfg.ID, Location: a.cfg.Location, RTMP: a.cfg.RTMP, HTTP: a.cfg.HTTP, RTMPS: a.cfg.RTMPS, HTTPS: a.cfg.HTTPS,
		CapacityViewers: a.cfg.CapacityViewers, CapacityMbps: a.cfg.CapacityMbps,
		Draining: a.draining.Load(), Time: time.Now().UTC()}
	streams := a.stats()
	if len(streams) > bus.MaxStreamsPerStatus {
		streams = streams[:bus.MaxStreamsPerStatus]
	}
	a.mu.Lock()
	for i := range streams {
		streams[i].Held = a.held[streams[i].App+"/"+streams[i].Name]
		s.Viewers += streams[i].Viewers
		s.Mbps += streams[i].Mbps
	}
	a.mu.Unlock()
	s.Streams = streams
	return s
}

func (a *Agent) report(ctx context.Context, b *bus.Buckets) {
	data, err := bus.Encode(a.Status())
	if err != nil {
		a.log.Error("encode status", "err", err)
		return
	}
	// Core NATS publish only queues in the client; never waits for the server.
	_ = a.conn.NC.Publish(a.statSubj, data)
	if b == nil {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, a.cfg.Interval)
	defer cancel()
	if _, err := b.Relays.Put(pctx, a.cfg.ID, data); err != nil {
		if ctx.Err() == nil {
			a.log.Debug("status not stored, will retry", "err", err)
		}
		return
	}
	a.reports.Add(1)
}

func (a *Agent) respond(m *nats.Msg, err error) {
	rep := bus.Reply{OK: err == nil}
	if err != nil {
		rep.Error = err.Error()
		if len(rep.Error) > bus.MaxFieldLen {
			rep.Error = rep.Error[:bus.MaxFieldLen]
		}
	}
	data, _ := bus.Encode(rep)
	if err := m.Respond(data); err != nil {
		a.log.Debug("reply not sent", "err", err)
	}
}

// handle carries out one command.
func (a *Agent) handle(ctx context.Context, data []byte) error {
	cmd, err := bus.DecodeCommand(data)
	if err != nil {
		return err
	}
	key := cmd.App + "/" + cmd.Name
	if a.puller == nil && (cmd.Op == bus.OpOpen || cmd.Op == bus.OpClose) {
		return fmt.Errorf("%s: this server pulls from no upstream", cmd.Op)
	}
	log := a.log.With("op", cmd.Op, "stream", key, "reason", cmd.Reason)
	switch cmd.Op {
	case bus.OpOpen:
		octx, cancel := context.WithTimeout(ctx, a.cfg.OpenTimeout)
		defer cancel()
		if err := a.puller.Hold(octx, cmd.App, cmd.Name, cmd.Parent); err != nil {
			log.Warn("open failed", "parent", cmd.Parent, "err", err)
			return fmt.Errorf("open %s: %w", key, err)
		}
		a.mu.Lock()
		a.held[key] = true
		a.mu.Unlock()
		log.Info("stream opened", "parent", cmd.Parent)
	case bus.OpClose:
		a.puller.Release(cmd.App, cmd.Name)
		a.mu.Lock()
		delete(a.held, key)
		a.mu.Unlock()
		log.Info("stream closed")
	case bus.OpDrain:
		a.draining.Store(true)
		a.sendAlive(bus.Alive{Draining: true}) // the redirectors stop naming it now
		select {
		case a.kick <- struct{}{}: // and the status says so without waiting
		default:
		}
		log.Info("draining")
	case bus.OpUndrain:
		a.draining.Store(false)
		log.Info("back in service")
	}
	return nil
}
