// Package orchestrator is the control-plane service that opens and closes
// relays: it consumes viewer demand and relay status from the bus, runs the
// topology code (demand bonus, per-region scaling), keeps the placements in
// a key-value bucket, chooses each new relay's parent and commands relays.
//
// Several instances may run; one leads, through a lease in a bucket with a
// TTL (created if absent, renewed every interval). When the leader stops
// (its connection gone: within about two intervals) or its lease lapses,
// another instance takes over and rebuilds its state from the placements
// bucket and fresh statuses (lease.go).
package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/controller"
	"github.com/relaymesh/relaymesh/topology/demand"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/scaling"
)

// Config tunes an orchestrator. Zero fields take the documented defaults.
type Config struct {
	// ID names this instance in the lease. Default host name and process id.
	ID string
	// Graph is the location graph with its servers (required).
	Graph *graph.Graph
	// Demand and Scaling are the topology parameters (see docs/topology.md).
	Demand  demand.Config
	Scaling scaling.Config
	// Interval between evaluations and lease renewals. Default 1 s.
	Interval time.Duration
	// Buckets sets the status and lease TTLs (defaults in package bus).
	// A follower takes over about two intervals after the leader's
	// connection is gone, within about LeaseTTL when it hangs connected.
	Buckets bus.BucketConfig
	// FanOut is how many relays of one stream may pull from one server
	// (primary or relay) before the next relay goes to another parent.
	// Default 4.
	FanOut int
	// CommandTimeout bounds one command to a relay. Default 20 s.
	CommandTimeout time.Duration
	// MaxStreams bounds the streams tracked. Default 10,000.
	MaxStreams int
	// EndGrace is how long after the primary reports a stream unpublished
	// the leader closes its relays and forgets its demand, unless it is
	// published again meanwhile (a publisher reconnecting). Default 30 s.
	EndGrace time.Duration
	// Journal, when set, is called by the leader with every event it gives
	// the controller and the decisions that came back (tests and audits:
	// replayed through a controller.Controller they give the same
	// decisions).
	Journal func(controller.Event, []controller.Decision)
}

func (c *Config) defaults() {
	if c.ID == "" {
		h, _ := os.Hostname()
		c.ID = fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	if c.Buckets.StatusTTL <= 0 {
		c.Buckets.StatusTTL = bus.DefaultStatusTTL
	}
	if c.Buckets.LeaseTTL <= 0 {
		c.Buckets.LeaseTTL = bus.DefaultLeaseTTL
	}
	if c.FanOut <= 0 {
		c.FanOut = 4
	}
	if c.CommandTimeout <= 0 {
		c.CommandTimeout = 20 * time.Second
	}
	if c.MaxStreams <= 0 {
		c.MaxStreams = 10000
	}
	if c.EndGrace <= 0 {
		c.EndGrace = 30 * time.Second
	}
}

// Bonus is the demand bonus of a stream at a location, for dashboards.
type Bonus struct {
	App       string  `json:"app"`
	Name      string  `json:"name"`
	Location  string  `json:"location"`
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
}

// Orchestrator is one instance of the service.
type Orchestrator struct {
	cfg    Config
	conn   *bus.Conn
	log    *slog.Logger
	leader atomic.Bool
	bonus  atomic.Pointer[[]Bonus]
	terms  atomic.Uint64

	decisions decisionLog
	counters  counters
}

// New returns an orchestrator; Run starts it.
func New(cfg Config, conn *bus.Conn, log *slog.Logger) (*Orchestrator, error) {
	cfg.defaults()
	if cfg.Graph == nil || cfg.Graph.Primary() < 0 {
		return nil, errors.New("orchestrator: a graph with a primary server is required")
	}
	if conn == nil {
		return nil, errors.New("orchestrator: a bus connection is required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := &Orchestrator{cfg: cfg, conn: conn, log: log.With("component", "orchestrator", "instance", cfg.ID)}
	empty := []Bonus{}
	o.bonus.Store(&empty)
	return o, nil
}

// Leader reports whether this instance currently leads.
func (o *Orchestrator) Leader() bool { return o.leader.Load() }

// Terms counts the times this instance became leader.
func (o *Orchestrator) Terms() uint64 { return o.terms.Load() }

// Bonuses returns the demand bonuses at the last evaluation of the leader
// (empty on a follower).
func (o *Orchestrator) Bonuses() []Bonus { return *o.bonus.Load() }

// Run follows and, when it wins the lease, leads until ctx ends.
func (o *Orchestrator) Run(ctx context.Context) error {
	var buckets *bus.Buckets
	probe := newLeaderProbe()
	pctx, stopProbe := context.WithCancel(ctx)
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() { defer pwg.Done(); o.probeLeader(pctx, probe) }()
	defer pwg.Wait()
	defer stopProbe()
	t := time.NewTicker(o.cfg.Interval)
	defer t.Stop()
	for {
		if buckets == nil {
			bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			b, err := o.conn.OpenBuckets(bctx, o.cfg.Buckets)
			cancel()
			if err != nil && ctx.Err() == nil {
				o.log.Debug("buckets unavailable, will retry", "err", err)
			}
			if b != nil && b.LeaseTTL != o.cfg.Buckets.LeaseTTL {
				o.log.Warn("the lease bucket keeps another TTL: leading by it", "ttl", b.LeaseTTL, "configured", o.cfg.Buckets.LeaseTTL)
			}
			buckets = b
		}
		if buckets != nil {
			if rev, sent, ok := o.follow(ctx, buckets, probe); ok {
				o.terms.Add(1)
				o.leader.Store(true)
				o.log.Info("leading")
				err := o.lead(ctx, buckets, rev, sent)
				o.leader.Store(false)
				empty := []Bonus{}
				o.bonus.Store(&empty)
				if ctx.Err() != nil {
					o.release(buckets)
					return nil
				}
				o.log.Warn("leadership lost", "err", err)
			}
		}
		// A follower looks at the lease four times per interval, so that
		// it takes over within a quarter interval of the lease's expiry (a
		// read is one small request), and at once when the probe finds
		// the leader gone.
		wait := t.C
		if buckets != nil {
			wait = time.After(o.cfg.Interval / 4)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wait:
		case <-probe.gone:
		}
	}
}

// acquire creates the lease if nobody holds it; sent is when the request
// that wrote it was sent.
func (o *Orchestrator) acquire(ctx context.Context, b *bus.Buckets) (rev uint64, sent time.Time, ok bool) {
	sent = time.Now()
	data, _ := bus.Encode(bus.Lease{Holder: o.cfg.ID, Since: sent.UTC()})
	cctx, cancel := context.WithTimeout(ctx, o.cfg.Interval)
	defer cancel()
	rev, err := b.Leader.Create(cctx, bus.LeaderKey, data)
	return rev, sent, err == nil
}

// release deletes the lease on a clean stop so a follower takes over at once.
func (o *Orchestrator) release(b *bus.Buckets) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	e, err := b.Leader.Get(ctx, bus.LeaderKey)
	if err != nil {
		return
	}
	if l, err := bus.DecodeLease(e.Value()); err == nil && l.Holder == o.cfg.ID {
		_ = b.Leader.Purge(ctx, bus.LeaderKey)
	}
}

// lead runs the leader loop until ctx ends or the lease cannot be kept
// (lease.go).
func (o *Orchestrator) lead(ctx context.Context, b *bus.Buckets, rev uint64, sent time.Time) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopPings, err := o.answerPings()
	if err != nil {
		return fmt.Errorf("answer pings: %w", err)
	}
	defer stopPings()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	// The lease is kept from the start, restoring included.
	lost := make(chan error, 1)
	keeper := newLeaseKeeper()
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := o.keepLease(ctx, b, keeper, rev, sent); err != nil {
			lost <- err
			cancel()
		}
	}()
	st := newState(o, b)
	if err := st.restore(ctx); err != nil {
		if len(lost) > 0 {
			return <-lost
		}
		return fmt.Errorf("restore: %w", err)
	}

	statuses := make(chan bus.Status, 256)
	w, err := b.Relays.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch statuses: %w", err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil || e.Value() == nil {
					continue
				}
				s, err := bus.DecodeStatus(e.Value())
				if err != nil || s.ID != e.Key() {
					continue
				}
				select {
				case statuses <- s:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	// Statuses also come as core messages: while the bucket's watch is
	// away (its stream's leader lost) relays are not taken for silent.
	ssub, err := o.conn.NC.Subscribe(bus.StatusWildcard, func(m *nats.Msg) {
		s, err := bus.DecodeStatus(m.Data)
		if err != nil {
			return
		}
		if subj, err := bus.StatusSubject(s.ID); err != nil || subj != m.Subject {
			return
		}
		select {
		case statuses <- s:
		default: // the watch brings it too
		}
	})
	if err != nil {
		return fmt.Errorf("subscribe statuses: %w", err)
	}
	defer ssub.Unsubscribe()
	demandCh := make(chan []byte, 256)
	sub, err := o.conn.NC.Subscribe(bus.DemandSubject, func(m *nats.Msg) {
		select {
		case demandCh <- m.Data:
		default: // a burst beyond the queue: drop, demand is statistical
		}
	})
	if err != nil {
		return fmt.Errorf("subscribe demand: %w", err)
	}
	defer sub.Unsubscribe()
	eventCh := make(chan []byte, 256)
	esub, err := o.conn.NC.Subscribe(bus.StreamEventWildcard, func(m *nats.Msg) {
		select {
		case eventCh <- m.Data:
		default: // dropped: the stream's relays stay until closed otherwise
		}
	})
	if err != nil {
		return fmt.Errorf("subscribe stream events: %w", err)
	}
	defer esub.Unsubscribe()
	// A relay's process that dies is down at once, not after the status
	// TTL (gone.go).
	discCh := make(chan bus.Disconnect, 64)
	dsub, err := subscribeDisconnects(o.conn.NC, discCh)
	if err != nil {
		return fmt.Errorf("subscribe disconnects: %w", err)
	}
	defer dsub.Unsubscribe()
	defer st.probes.wg.Wait()
	defer cancel() // the probes end with the term
	st.startWorkers(ctx, &wg)
	st.startBonusWriter(ctx, &wg)

	t := time.NewTicker(o.cfg.Interval)
	defer t.Stop()
	for {
		// While the lease is not confirmed nothing is decided: the
		// events wait (statuses, results) or are dropped (demand and
		// stream events beyond their queues), as with a busy leader.
		sc, dc, ec, rc, tc, xc, gc := statuses, demandCh, eventCh, st.results, t.C, discCh, st.probes.out
		if keeper.paused.Load() {
			sc, dc, ec, rc, tc, xc, gc = nil, nil, nil, nil, nil, nil, nil
		}
		select {
		case err := <-lost:
			return err
		case <-keeper.changed:
			continue
		case <-ctx.Done():
			if len(lost) > 0 {
				return <-lost
			}
			return nil
		case s := <-sc:
			st.onStatus(ctx, time.Now(), s)
		case data := <-dc:
			d, err := bus.DecodeDemand(data)
			if err != nil {
				o.log.Debug("bad demand message", "err", err)
				continue
			}
			st.onDemand(ctx, time.Now(), d)
		case data := <-ec:
			e, err := bus.DecodeStreamEvent(data)
			if err != nil {
				o.log.Debug("bad stream event", "err", err)
				continue
			}
			st.onStreamEvent(ctx, time.Now(), e)
		case r := <-rc:
			st.onResult(ctx, r)
		case d := <-xc:
			st.onDisconnect(ctx, time.Now(), d)
		case r := <-gc:
			st.onGone(ctx, r)
		case now := <-tc:
			st.evaluate(ctx, now)
			o.bonus.Store(st.bonuses(now))
			st.saveBonuses(now)
		}
	}
}
