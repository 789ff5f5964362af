package rtmp

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Flusher writes the connections of a server in rounds, the way an event
// loop does, instead of one goroutine per connection: a few workers each own
// a share of the connections and, in a round, give each of them one
// non-blocking writev of everything pending (control messages, then media
// polled from the hub). Control messages do not wait for a round: queueing
// one serves its connection at once.
//
// Rounds are adaptive. A worker sleeps while none of its connections has
// anything to write (no timer but a housekeeping one every second, no work
// for idle connections); the first frame queued for one of them schedules a
// round Coalesce later (one timer per worker), so that frames arriving
// together go out together. A connection then gets media at most every
// Gap(connections of its worker): with few viewers that is a few
// milliseconds, so a small audience gets frames with little added latency;
// with many it grows to nearly Interval, because each round's writev per
// connection then carries several frames, and batching is what pays. Media
// that arrives in bursts is batched already: a service that wrote one is
// not followed by a Gap (burst.go).
//
// A downstream relay's link is written in whole rounds (Interval apart)
// whatever the audience: batching there pays at every viewer behind it, and
// it costs latency once per tree rather than once per hop, because a relay
// writes each round it receives to its viewers as it comes (its Gap is
// below Interval).
//
// What a round saves over a goroutine per viewer is the scheduling: with a
// thousand viewers of one stream, one wake-up per worker and round instead of
// a wake-up, a timer and a park per viewer and batch. A socket that does not
// take everything (a slow viewer) keeps the rest pending in its chunk writer
// and gets no new media until it drained, so its backlog builds up in the
// hub, where the drop policy applies.
type Flusher struct {
	interval time.Duration
	cfg      FlusherConfig
	workers  []*flushWorker
	ctx      context.Context
	attachMu sync.Mutex
}

// FlusherConfig tunes the adaptive rounds. Zero fields take the defaults.
type FlusherConfig struct {
	// Workers is the most writer goroutines (default: one per CPU). Only as
	// many as the audience needs run rounds: one per ConnsPerWorker
	// connections.
	Workers int
	// ConnsPerWorker is how many connections a worker takes before the next
	// one is used (default 256).
	ConnsPerWorker int
	// Coalesce is the shortest wait between the first frame pending and the
	// round that writes it, so that frames arriving together go out
	// together (default 2ms).
	Coalesce time.Duration
	// FullBatchConns is the number of connections of a worker from which its
	// rounds are a whole Interval apart; below, the gap shrinks in
	// proportion (default 512).
	FullBatchConns int
	// Whole writes every connection like a downstream relay's link: in
	// whole rounds, Interval apart on the shared grid, whatever the
	// audience (a fixed round, for comparisons).
	Whole bool
}

func (c FlusherConfig) withDefaults() FlusherConfig {
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.ConnsPerWorker <= 0 {
		c.ConnsPerWorker = 256
	}
	if c.Coalesce <= 0 {
		c.Coalesce = 2 * time.Millisecond
	}
	if c.FullBatchConns <= 0 {
		c.FullBatchConns = 512
	}
	return c
}

// NewFlusher starts workers (0: one per CPU) that write their connections
// in rounds at most interval apart until ctx ends; then they close the
// connections they own.
func NewFlusher(ctx context.Context, interval time.Duration, workers int) *Flusher {
	return NewAdaptiveFlusher(ctx, interval, FlusherConfig{Workers: workers})
}

// NewAdaptiveFlusher is NewFlusher with the adaptive rounds tuned by cfg.
func NewAdaptiveFlusher(ctx context.Context, interval time.Duration, cfg FlusherConfig) *Flusher {
	cfg = cfg.withDefaults()
	if interval <= 0 {
		interval = 50 * time.Millisecond
	}
	f := &Flusher{interval: interval, cfg: cfg, ctx: ctx}
	for range cfg.Workers {
		w := &flushWorker{f: f, wake: make(chan struct{}, 1)}
		f.workers = append(f.workers, w)
		go w.run(ctx)
	}
	return f
}

// Interval is the longest time between two rounds that write media.
func (f *Flusher) Interval() time.Duration { return f.interval }

// Gap is the shortest time between two media rounds of a viewer's
// connection on a worker that owns n connections: 9/10 of Interval ×
// n / FullBatchConns, at most 9/10 of Interval. A little under Interval, so
// that a relay fed in whole rounds by its upstream (they come Interval
// apart) writes each of them to its viewers as it arrives.
func (f *Flusher) Gap(n int) time.Duration {
	full := f.interval * 9 / 10
	if n >= f.cfg.FullBatchConns {
		return full
	}
	return time.Duration(int64(full) * int64(n) / int64(f.cfg.FullBatchConns))
}

// attach hands c's writes to a worker: the least loaded of the first few,
// as many as the audience needs (one per ConnsPerWorker connections).
func (f *Flusher) attach(c *Conn) *flushWorker {
	f.attachMu.Lock()
	total := 0
	for _, w := range f.workers {
		total += int(w.owned.Load())
	}
	active := min(len(f.workers), total/f.cfg.ConnsPerWorker+1)
	best := f.workers[0]
	for _, w := range f.workers[1:active] {
		if w.owned.Load() < best.owned.Load() {
			best = w
		}
	}
	best.owned.Add(1)
	f.attachMu.Unlock()
	if c.writer != nil {
		c.writer.borrow(&best.spares) // before the worker can see c
	}
	best.mu.Lock()
	best.incoming = append(best.incoming, c)
	best.mu.Unlock()
	return best
}

// flushWorker owns the writes of its connections: only its goroutine calls
// their service method.
type flushWorker struct {
	f      *Flusher
	wake   chan struct{} // cap 1: a connection has something urgent, or media is pending
	media  atomic.Bool   // media was queued for a connection since the last round
	owned  atomic.Int32  // connections attached and not yet forgotten
	rounds atomic.Uint64 // rounds run (tests)

	mu       sync.Mutex
	incoming []*Conn // attached since the last round
	urgent   []*Conn // connections to serve before the next round
	stopped  bool
	closing  error // what connections are closed with once stopped

	conns  []*Conn     // owned by the worker goroutine
	spares writeSpares // lent to its connections' chunk writers
}

// poke asks the worker to serve c before the next round. It never blocks.
func (w *flushWorker) poke(c *Conn) {
	if c.urgent.Swap(true) {
		return // already asked
	}
	w.mu.Lock()
	stopped := w.stopped
	if !stopped {
		w.urgent = append(w.urgent, c)
	}
	w.mu.Unlock()
	if stopped {
		c.Close(w.closing)
		return
	}
	w.signal()
}

// mediaReady tells the worker that one of its connections has frames to
// poll: the next round is scheduled if none is. It never blocks, and costs
// one atomic load while a round is already due.
func (w *flushWorker) mediaReady() {
	if w.media.Load() || w.media.Swap(true) {
		return
	}
	w.signal()
}

func (w *flushWorker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *flushWorker) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var (
		urgent   []*Conn
		due      time.Time // when the scheduled round runs; zero: none
		lastFull time.Time // the last round that looked at every connection
	)
	schedule := func(now, at time.Time) {
		if !due.IsZero() && !at.Before(due) {
			return
		}
		due = at
		timer.Reset(max(at.Sub(now), 0))
	}
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			w.stop(ServerClosing(ctx))
			return
		case <-w.wake:
			w.mu.Lock()
			urgent, w.urgent = w.urgent, urgent[:0]
			w.mu.Unlock()
			now := time.Now()
			retry := false
			for _, c := range urgent {
				c.urgent.Store(false)
				if c.service(now) && c.retry {
					retry = true
				}
			}
			clear(urgent)
			if retry {
				// Its socket is full or its media held back: no frame of
				// its own wakes the worker while its queue is not empty.
				schedule(now, now.Add(w.f.interval))
			}
			if w.media.Load() {
				schedule(now, now.Add(w.f.cfg.Coalesce))
			}
		case <-timer.C:
			due = time.Time{}
			// Frames queued from here on signal again and schedule the next
			// round; those queued before are written by this one.
			w.media.Store(false)
			now := time.Now()
			all := now.Sub(lastFull) >= housekeeping
			if all {
				lastFull = now
			}
			next, again := w.round(now, all)
			if again {
				// Something stayed pending (a full socket, media held back
				// for a slow peer): come back, though no new frame may wake us.
				schedule(now, now.Add(w.f.interval))
			}
			if !next.IsZero() {
				schedule(now, next) // connections with frames not due yet
			}
		}
		if due.IsZero() && w.owned.Load() > 0 {
			// Nothing pending, but connections to look after: forget the
			// closed ones now and then.
			now := time.Now()
			schedule(now, now.Add(housekeeping))
		}
	}
}

// housekeeping is how often a worker looks at every connection it owns,
// pending or not (closed connections are forgotten then), and the longest
// it sleeps while it owns any.
const housekeeping = time.Second

// round serves the connections that have something to write and are due
// (every connection when all is set) and forgets the closed ones. It
// returns when the earliest connection with frames that was not due yet
// is, and whether a connection needs another round without new frames.
func (w *flushWorker) round(now time.Time, all bool) (next time.Time, again bool) {
	w.rounds.Add(1)
	w.mu.Lock()
	w.conns = append(w.conns, w.incoming...)
	clear(w.incoming)
	w.incoming = w.incoming[:0]
	w.mu.Unlock()
	gap := w.f.Gap(len(w.conns))
	kept := w.conns[:0]
	for _, c := range w.conns {
		pending := c.mediaPending.Load()
		if !all && !c.retry && !pending {
			kept = append(kept, c) // nothing to write: no work
			continue
		}
		if pending && !c.retry && now.Before(c.nextDue) {
			kept = append(kept, c)
			if next.IsZero() || c.nextDue.Before(next) {
				next = c.nextDue
			}
			continue
		}
		grid, due := false, c.nextDue
		if pending {
			c.mediaPending.Store(false)
			if grid = w.f.cfg.Whole || c.relayLink.Load(); grid {
				// On a grid of Interval shared by every worker, so that all
				// relays' links (and whatever reads like one) get the same
				// rounds.
				c.nextDue = now.Truncate(w.f.interval).Add(w.f.interval)
			} else {
				c.nextDue = now.Add(gap)
			}
		}
		if c.service(now) {
			switch {
			case !pending || grid:
			case c.burst.n == 0:
				// Nothing to write after all (a control message's service
				// took it first): no Gap for that.
				c.nextDue = due
			case c.burst.together():
				c.nextDue = now // batched upstream: no Gap (burst.go)
			}
			kept = append(kept, c)
			if c.retry {
				again = true
			}
		}
	}
	if gone := len(w.conns) - len(kept); gone > 0 {
		w.owned.Add(-int32(gone))
	}
	clear(w.conns[len(kept):])
	w.conns = kept
	return next, again
}

func (w *flushWorker) stop(err error) {
	w.mu.Lock()
	w.stopped, w.closing = true, err
	all := append(w.conns, w.incoming...)
	all = append(all, w.urgent...)
	w.incoming, w.urgent, w.conns = nil, nil, nil
	w.mu.Unlock()
	for _, c := range all {
		c.Close(err)
	}
}
