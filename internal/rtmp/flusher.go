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
// a share of the connections and, every Interval, give each of them one
// non-blocking writev of everything pending (control messages, then media
// polled from the hub). Control messages do not wait for the round: queueing
// one wakes the connection's worker at once.
//
// What a round saves over a goroutine per viewer is the scheduling: with a
// thousand viewers of one stream, one wake-up per worker and round instead of
// a wake-up, a timer and a park per viewer and batch. A socket that does not
// take everything (a slow viewer) keeps the rest pending in its chunk writer
// and gets no new media until it drained, so its backlog builds up in the
// hub, where the drop policy applies.
type Flusher struct {
	interval time.Duration
	workers  []*flushWorker
	next     atomic.Uint32
	ctx      context.Context
}

// NewFlusher starts workers (0: one per CPU) that write their connections
// every interval until ctx ends; then they close the connections they own.
func NewFlusher(ctx context.Context, interval time.Duration, workers int) *Flusher {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if interval <= 0 {
		interval = 50 * time.Millisecond
	}
	f := &Flusher{interval: interval, ctx: ctx}
	for range workers {
		w := &flushWorker{wake: make(chan struct{}, 1)}
		f.workers = append(f.workers, w)
		go w.run(ctx, interval)
	}
	return f
}

// Interval is the time between two rounds.
func (f *Flusher) Interval() time.Duration { return f.interval }

// attach hands c's writes to one of the workers.
func (f *Flusher) attach(c *Conn) *flushWorker {
	w := f.workers[int(f.next.Add(1))%len(f.workers)]
	w.mu.Lock()
	w.incoming = append(w.incoming, c)
	w.mu.Unlock()
	return w
}

// flushWorker owns the writes of its connections: only its goroutine calls
// their service method.
type flushWorker struct {
	wake chan struct{} // cap 1: a connection has something urgent

	mu       sync.Mutex
	incoming []*Conn // attached since the last round
	urgent   []*Conn // connections to serve before the next round
	stopped  bool
	closing  error // what connections are closed with once stopped

	conns []*Conn // owned by the worker goroutine
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
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *flushWorker) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var urgent []*Conn
	for {
		select {
		case <-ctx.Done():
			w.stop(ServerClosing(ctx))
			return
		case <-w.wake:
			w.mu.Lock()
			urgent, w.urgent = w.urgent, urgent[:0]
			w.mu.Unlock()
			now := time.Now()
			for _, c := range urgent {
				c.urgent.Store(false)
				c.service(now)
			}
			clear(urgent)
		case <-t.C:
			w.round()
		}
	}
}

// round serves every connection once and forgets the closed ones.
func (w *flushWorker) round() {
	w.mu.Lock()
	w.conns = append(w.conns, w.incoming...)
	clear(w.incoming)
	w.incoming = w.incoming[:0]
	w.mu.Unlock()
	now := time.Now()
	kept := w.conns[:0]
	for _, c := range w.conns {
		if c.service(now) {
			kept = append(kept, c)
		}
	}
	clear(w.conns[len(kept):])
	w.conns = kept
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
