package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/relaymesh/relaymesh/internal/bus"
)

// The lease. The leader renews it every Interval; the bucket's TTL
// (LeaseTTL, 15 s by default) removes it when renewals stop, and a
// follower then creates it. A follower does not wait for that when the
// leader's connection is gone (follow, below): it takes the lease over
// within about two intervals. The TTL is for a leader that is there but
// cannot renew: a slow or failed renewal does not end the leadership:
// the lease the last confirmed renewal wrote is valid until LeaseTTL after
// that renewal was sent (the server stored it later, so it expires later),
// and the leader keeps deciding until a margin before that, each renewal
// waiting for its answer a few intervals at most (one lost with a NATS
// server is sent again). The TTL is longer than a bucket's leader election
// after the loss of a NATS server (4–9 s, when no write of the lease's
// stream succeeds) and a short network cut, so those cost no pause. Past
// the validity the leader cannot be sure it holds the lease: it pauses
// (no decisions, the leader gauge at 0) and keeps renewing over the
// revision it last wrote. A renewal that succeeds then proves nobody took
// the lease meanwhile (the write is conditional on that revision; a
// rewritten key has another), and the leader resumes with its state as it
// was. When the bucket stayed unwritable for longer than the TTL the lease
// has expired on the server: the leader writes it again on the condition
// that nothing was written to the bucket since its revision, which proves
// the same (bus.Conn.RewriteLapsed), and followers leave it that chance
// while it answers their pings (leaderProbe.holdOff). It gives up when the
// lease is held by another or was written since, or after pausing for
// twice the TTL.

// leaseTTL is the TTL the lease is kept by: the configured one, or the
// bucket's when the server keeps a shorter one.
func (o *Orchestrator) leaseTTL(b *bus.Buckets) time.Duration {
	ttl := o.cfg.Buckets.LeaseTTL
	if b != nil && b.LeaseTTL > 0 {
		ttl = min(ttl, b.LeaseTTL)
	}
	return ttl
}

// leaseMargin is how long before the lease may lapse the leader pauses.
func (o *Orchestrator) leaseMargin() time.Duration {
	return min(o.cfg.Interval/2, o.cfg.Buckets.LeaseTTL/4)
}

// renewWait bounds the wait for one renewal's answer: long enough for a
// loaded server, short enough that a request lost with a server is sent
// again well within the lease's validity.
func (o *Orchestrator) renewWait() time.Duration { return 4 * o.cfg.Interval }

// leaseKeeper tells the leader loop whether it may decide.
type leaseKeeper struct {
	paused   atomic.Bool
	changed  chan struct{} // a signal per pause or resumption
	pausedAt time.Time     // set by keepLease before paused (tests)
}

func newLeaseKeeper() *leaseKeeper { return &leaseKeeper{changed: make(chan struct{}, 1)} }

func (k *leaseKeeper) set(paused bool) {
	if k.paused.Swap(paused) != paused {
		select {
		case k.changed <- struct{}{}:
		default:
		}
	}
}

// keepLease renews the lease at revision rev, last written by a request
// sent at sent, every Interval until ctx ends; it returns why it gave up.
func (o *Orchestrator) keepLease(ctx context.Context, b *bus.Buckets, k *leaseKeeper, rev uint64, sent time.Time) error {
	ttl := o.leaseTTL(b)
	margin := min(o.leaseMargin(), ttl/4)
	valid := sent.Add(ttl - margin)
	t := time.NewTicker(o.cfg.Interval)
	defer t.Stop()
	var lastErr error
	for {
		now := time.Now()
		// Paused beyond twice the TTL, the lease has lapsed on any server
		// that works: the leader steps down and competes again.
		if k.paused.Load() && now.Sub(valid) > 2*ttl {
			return fmt.Errorf("renew lease: none confirmed for %v: %w", now.Sub(valid)+ttl-margin, lastErr)
		}
		if !now.Before(valid) && !k.paused.Load() {
			k.pausedAt = now
			k.set(true)
			o.leader.Store(false)
			o.log.Warn("lease not confirmed in time: decisions paused while renewing", "err", lastErr)
		}
		// Wait for the answer while the lease is valid (renewWait at
		// most: the leader goes on deciding meanwhile, so never past the
		// validity); once paused, two intervals per attempt.
		wait := min(valid.Sub(now), o.renewWait())
		if k.paused.Load() {
			wait = 2 * o.cfg.Interval
		}
		rctx, cancel := context.WithTimeout(ctx, wait)
		nrev, err := o.renew(rctx, b, rev, now)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		var lost *leaseLost
		switch {
		case err == nil:
			rev, valid = nrev, now.Add(ttl-margin)
			if k.paused.Load() {
				o.log.Info("lease renewed: decisions resume", "paused_for", time.Since(now).Round(time.Millisecond))
				o.leader.Store(true)
				k.set(false)
			} else if lastErr != nil {
				o.log.Info("lease renewed again")
			}
			lastErr = nil
		case errors.As(err, &lost):
			return fmt.Errorf("renew lease: %w (last error before: %v)", err, lastErr)
		default:
			if lastErr == nil {
				o.log.Warn("lease renewal failed, retrying", "err", err, "valid_for", time.Until(valid).Round(time.Millisecond))
			}
			lastErr = err
			// Again soon (an error may come back at once: no responders).
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(o.cfg.Interval / 4):
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// leaseLost says the lease is not this instance's any more.
type leaseLost struct{ why string }

func (e *leaseLost) Error() string { return "lease lost: " + e.why }

// renew writes the lease over revision rev. When rev is stale because a
// renewal that timed out here reached the server after all, the lease is
// still this instance's: its revision is taken and written over.
func (o *Orchestrator) renew(ctx context.Context, b *bus.Buckets, rev uint64, now time.Time) (uint64, error) {
	data, _ := bus.Encode(bus.Lease{Holder: o.cfg.ID, Since: now.UTC()})
	nrev, err := b.Leader.Update(ctx, bus.LeaderKey, data, rev)
	if err == nil || !staleRevision(err) {
		return nrev, err
	}
	e, gerr := b.Leader.Get(ctx, bus.LeaderKey)
	switch {
	case errors.Is(gerr, jetstream.ErrKeyNotFound) || errors.Is(gerr, jetstream.ErrKeyDeleted):
		// The lease lapsed on the server: no renewal landed for its TTL
		// (the bucket unwritable that long, e.g. a stream's leader
		// election drawn out on a loaded cluster). If nothing was written
		// to the bucket since rev, nobody held the lease meanwhile (a
		// follower's Create, a takeover, a release all write): it is
		// written again on that condition, and the leader resumes.
		nrev, err := o.conn.RewriteLapsed(ctx, b.Leader.Bucket(), bus.LeaderKey, data, rev)
		if err != nil && staleRevision(err) {
			return 0, &leaseLost{why: "the lease lapsed and was written since"}
		}
		if err == nil {
			o.log.Warn("the lease had lapsed (no renewal landed for its TTL) and nobody took it: written again", "revision", nrev)
		}
		return nrev, err
	case gerr != nil:
		return 0, gerr
	}
	l, derr := bus.DecodeLease(e.Value())
	if derr != nil || l.Holder != o.cfg.ID {
		return 0, &leaseLost{why: fmt.Sprintf("held by %q", l.Holder)}
	}
	return b.Leader.Update(ctx, bus.LeaderKey, data, e.Revision())
}

// answerPings answers on bus.LeaderSubject while the leader loop runs.
func (o *Orchestrator) answerPings() (func(), error) {
	id := []byte(o.cfg.ID)
	sub, err := o.conn.NC.Subscribe(bus.LeaderSubject, func(m *nats.Msg) { _ = m.Respond(id) })
	if err != nil {
		return nil, err
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// leaderProbe is a follower's view of the leader's connection: it asks on
// bus.LeaderSubject every quarter interval, apart from the follower's
// bucket reads (a slow one must not slow the pings) and without waiting
// for the last ping's answer (one sent as the leader dies may wait for its
// timeout), and remembers since when every answer has been "no
// responders": no subscriber anywhere in the cluster, the leader's
// connection is gone.
type leaderProbe struct {
	mu    sync.Mutex
	since time.Time // when the current run of "no responders" began
	n     int       // its length
	rev   uint64    // the lease's revision the follower saw last
	gone  chan struct{}
	// answered is when a ping was last answered by another instance;
	// holdFrom when the follower began leaving a missing lease to it
	// (holdOff; zero: not now).
	answered, holdFrom time.Time
}

func newLeaderProbe() *leaderProbe { return &leaderProbe{gone: make(chan struct{}, 1)} }

// The outcomes of a ping.
const (
	pingAnswered = iota
	pingNoResponders
	pingUnknown // a timeout, a lost connection: proves nothing
)

// record counts the outcome of a ping sent at sent and ended at at. An
// answer ends the run of "no responders"; so does an unknown outcome of a
// ping sent after the run began (the leader may be back), not of one sent
// before.
func (p *leaderProbe) record(sent, at time.Time, outcome int, enough func(time.Duration, int) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch outcome {
	case pingAnswered:
		p.since, p.n = time.Time{}, 0
		p.answered = at
		return
	case pingUnknown:
		if p.n == 0 || !sent.Before(p.since) {
			p.since, p.n = time.Time{}, 0
		}
		return
	}
	if p.n == 0 {
		p.since = at
	}
	p.n++
	if enough(at.Sub(p.since), p.n) {
		select {
		case p.gone <- struct{}{}:
		default:
		}
	}
}

// absent says for how long and how many answers in a row the holder of
// the lease at revision rev, written at written (the server's time), has
// been missing (0, 0: it answered last). A revision written after the run
// of "no responders" began starts the count again: its leader was alive
// then (a new one, or a renewal), whatever the pings said. (Revisions only
// grow; an older one is a replica behind. A clock ahead of the server's
// by less than an interval only delays this to the next renewal.)
func (p *leaderProbe) absent(rev uint64, written, now time.Time) (time.Duration, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if rev > p.rev {
		p.rev = rev
		if p.n > 0 && written.After(p.since) {
			p.since, p.n = time.Time{}, 0
		}
	}
	if p.n == 0 {
		return 0, 0
	}
	return now.Sub(p.since), p.n
}

// leading says this instance leads: it answers its own pings, so none is
// sent, and nothing it knew of another leader holds any more.
func (p *leaderProbe) leading() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.since, p.n = time.Time{}, 0
	p.answered, p.holdFrom = time.Time{}, time.Time{}
}

// holdOff says whether a follower that finds no lease leaves it, for now,
// to a leader that answered a ping within fresh and none has gone
// unanswered since: a leader whose lease lapsed while the bucket could not
// be written is paused, and writes it again over its revision as soon as
// the bucket takes writes (renew). The follower waits for that at most max
// from when it first found no lease while holding off: a leader that
// answers but never writes it back (wedged) is not waited for longer; one
// whose write is refused steps down and stops answering at once.
func (p *leaderProbe) holdOff(now time.Time, fresh, max time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n > 0 || p.answered.IsZero() || now.Sub(p.answered) > fresh {
		return false
	}
	if p.holdFrom.IsZero() {
		p.holdFrom = now
	}
	return now.Sub(p.holdFrom) < max
}

// leaseSeen ends a hold-off: the lease is there again.
func (p *leaderProbe) leaseSeen() {
	p.mu.Lock()
	p.holdFrom = time.Time{}
	p.mu.Unlock()
}

// leaderGone is when a follower takes a silent leader's lease: the leader
// missing for one and a half intervals and at least four pings in a row.
// A leader whose NATS server died reconnects to another well within that
// (its subscription comes back with it); one that was killed never does.
func (o *Orchestrator) leaderGone(d time.Duration, n int) bool {
	return n >= 4 && d >= o.cfg.Interval*3/2
}

// probeLeader pings the leader until ctx ends (not while this instance
// leads: it would answer itself), a ping every quarter interval, each
// waiting an interval at most for its answer.
func (o *Orchestrator) probeLeader(ctx context.Context, p *leaderProbe) {
	t := time.NewTicker(o.cfg.Interval / 4)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	inflight := make(chan struct{}, 4)
	for {
		if o.leader.Load() {
			p.leading()
		} else {
			select {
			case inflight <- struct{}{}:
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-inflight }()
					sent := time.Now()
					rctx, cancel := context.WithTimeout(ctx, o.cfg.Interval)
					_, err := o.conn.NC.RequestWithContext(rctx, bus.LeaderSubject, nil)
					cancel()
					if ctx.Err() != nil {
						return
					}
					outcome := pingAnswered
					switch {
					case errors.Is(err, nats.ErrNoResponders):
						outcome = pingNoResponders
					case err != nil:
						outcome = pingUnknown
					}
					p.record(sent, time.Now(), outcome, o.leaderGone)
				}()
			default: // four waiting for their answers: a slow connection
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// follow is one look at the lease by a follower: it creates the lease
// when there is none (never written, expired, released), takes its own
// (a Create or takeover that timed out here but reached the server; valid
// from when it was sent, the lease's Since), and takes a dead leader's:
// when the probe has missed the leader long enough (leaderGone), it writes
// its own lease over the revision it just read, so that a leader that
// renewed meanwhile keeps the lease (the write is refused) and one that
// comes back finds it taken (its renewals are refused: it steps down).
// This is a single conditional write, without waiting for the TTL.
func (o *Orchestrator) follow(ctx context.Context, b *bus.Buckets, p *leaderProbe) (rev uint64, sent time.Time, ok bool) {
	gctx, cancel := context.WithTimeout(ctx, o.cfg.Interval)
	e, err := b.Leader.Get(gctx, bus.LeaderKey)
	cancel()
	if err != nil {
		// None there (or the read failed, then the create says more).
		// A lease that lapsed while its leader answers is left to it a
		// while (holdOff).
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			o.log.Debug("reading the lease failed", "err", err)
		} else if p.holdOff(time.Now(), o.cfg.Interval, o.leaseTTL(b)) {
			o.log.Debug("no lease, but a leader answers pings: left to it to write again")
			return 0, time.Time{}, false
		}
		return o.acquire(ctx, b)
	}
	p.leaseSeen()
	l, _ := bus.DecodeLease(e.Value())
	if l.Holder == o.cfg.ID {
		return e.Revision(), l.Since, true
	}
	d, n := p.absent(e.Revision(), e.Created(), time.Now())
	if !o.leaderGone(d, n) {
		return 0, time.Time{}, false
	}
	sent = time.Now()
	data, _ := bus.Encode(bus.Lease{Holder: o.cfg.ID, Since: sent.UTC()})
	uctx, cancel := context.WithTimeout(ctx, 2*o.cfg.Interval)
	defer cancel()
	rev, err = b.Leader.Update(uctx, bus.LeaderKey, data, e.Revision())
	if err != nil {
		o.log.Debug("taking the silent leader's lease failed", "holder", l.Holder, "err", err)
		return 0, time.Time{}, false
	}
	o.log.Warn("leader gone (its connection closed): lease taken over", "holder", l.Holder,
		"missing_for", d.Round(time.Millisecond), "pings", n)
	return rev, sent, true
}

// staleRevision says an update was refused for its revision: "key exists"
// on one replica, "key revision mismatch" on replicated buckets.
func staleRevision(err error) bool {
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
