package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/relaymesh/relaymesh/internal/bus"
)

// The lease. The leader renews it every Interval; the bucket's TTL
// (LeaseTTL, 5 s by default) removes it when renewals stop, and a follower
// then creates it. A slow or failed renewal does not end the leadership:
// the lease the last confirmed renewal wrote is valid until LeaseTTL after
// that renewal was sent (the server stored it later, so it expires later),
// and the leader keeps deciding until a margin before that, each renewal
// waiting for its answer as long as the lease is valid (a slow server
// still renews). Past that point it cannot be sure it holds the lease: it
// pauses (no decisions, the leader gauge at 0) and keeps renewing over
// the revision it last wrote. A renewal that succeeds then proves nobody
// took the lease meanwhile (the write is conditional on that revision; an
// expired or rewritten key has another), and the leader resumes with its
// state as it was: a NATS server lost under the lease's stream (whose
// leader election takes seconds) or a loaded one does not cost a
// takeover. It gives up when the lease is gone or held by another, or
// after pausing for twice the TTL.

// leaseMargin is how long before the lease may lapse the leader pauses.
func (o *Orchestrator) leaseMargin() time.Duration {
	return min(o.cfg.Interval/2, o.cfg.Buckets.LeaseTTL/4)
}

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
	ttl, margin := o.cfg.Buckets.LeaseTTL, o.leaseMargin()
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
		// Wait for the answer while the lease is valid; once paused, an
		// interval or two per attempt.
		wait := valid.Sub(now)
		if wait < o.cfg.Interval {
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
		return 0, &leaseLost{why: "the lease lapsed"}
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

// leaderWatch is a follower's view of the leader: the lease's revision,
// since when it has not changed, and the pings left unanswered.
type leaderWatch struct {
	rev     uint64
	since   time.Time
	missing int
}

// watchLeader runs between a follower's attempts at the lease: when the
// leader's connection is gone (two pings in a row answered "no
// responders": no subscriber anywhere in the cluster) and the lease has
// not been renewed for one and a half intervals, the leader is dead, and
// the follower removes the lease, conditionally on the revision it saw
// (a renewal meanwhile keeps it), rather than wait out its TTL. A live
// leader answers, and renews: either keeps its lease.
//
// A lease that names this instance while it follows is its own: a Create
// that timed out here but reached the server. It is taken (mine), valid
// from when that Create was sent (the lease's Since).
func (o *Orchestrator) watchLeader(ctx context.Context, b *bus.Buckets, w *leaderWatch) (rev uint64, sent time.Time, mine bool) {
	ctx, cancel := context.WithTimeout(ctx, o.cfg.Interval)
	defer cancel()
	_, err := o.conn.NC.RequestWithContext(ctx, bus.LeaderSubject, nil)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		w.missing++
	case err == nil:
		w.missing = 0
	}
	// A read that fails (a loaded server) changes nothing of what was seen.
	e, err := b.Leader.Get(ctx, bus.LeaderKey)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			*w = leaderWatch{}
		}
		return 0, time.Time{}, false
	}
	l, _ := bus.DecodeLease(e.Value())
	if l.Holder == o.cfg.ID {
		*w = leaderWatch{}
		return e.Revision(), l.Since, true
	}
	now := time.Now()
	if e.Revision() != w.rev {
		missing := 0
		if w.rev == 0 {
			missing = w.missing // the first look: the pings just asked count
		}
		*w = leaderWatch{rev: e.Revision(), since: now, missing: missing}
	}
	if w.missing < 2 || now.Sub(w.since) < o.cfg.Interval*3/2 {
		return 0, time.Time{}, false
	}
	if err := b.Leader.Delete(ctx, bus.LeaderKey, jetstream.LastRevision(w.rev)); err == nil {
		o.log.Warn("leader gone (its connection closed, the lease not renewed): lease removed", "holder", l.Holder,
			"not_renewed_for", now.Sub(w.since).Round(time.Millisecond))
	}
	*w = leaderWatch{}
	return 0, time.Time{}, false
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
