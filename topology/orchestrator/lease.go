package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/relaymesh/relaymesh/internal/bus"
)

// The lease. The leader renews it every Interval; the bucket's TTL
// (LeaseTTL, 5 s by default) removes it when renewals stop, and a follower
// then creates it. A slow or failed renewal does not end the leadership:
// the lease the last confirmed renewal wrote is valid until LeaseTTL after
// that renewal was sent (the server stored it later, so it expires later),
// and the leader keeps leading and retries until a margin of one Interval
// before that. It gives up only when it cannot be sure it still holds the
// lease: no renewal confirmed in time, the lease gone, or held by another.

// leaseMargin is how long before the lease may lapse the leader gives up.
func (o *Orchestrator) leaseMargin() time.Duration {
	return min(o.cfg.Interval, o.cfg.Buckets.LeaseTTL/2)
}

// keepLease renews the lease at revision rev, last written by a request
// sent at sent, every Interval until ctx ends; it returns why it gave up.
func (o *Orchestrator) keepLease(ctx context.Context, b *bus.Buckets, rev uint64, sent time.Time) error {
	ttl := o.cfg.Buckets.LeaseTTL
	valid := sent.Add(ttl - o.leaseMargin())
	t := time.NewTicker(o.cfg.Interval)
	defer t.Stop()
	var lastErr error
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for attempt := 0; ; attempt++ {
			now := time.Now()
			if !now.Before(valid) {
				return fmt.Errorf("renew lease: none confirmed within %v: %w", ttl-o.leaseMargin(), lastErr)
			}
			// An attempt may take up to two intervals (a slow server still
			// renews), never past the point of giving up.
			rctx, cancel := context.WithTimeout(ctx, min(valid.Sub(now), 2*o.cfg.Interval))
			nrev, err := o.renew(rctx, b, rev, now)
			cancel()
			if ctx.Err() != nil {
				return nil
			}
			if err == nil {
				if lastErr != nil {
					o.log.Info("lease renewed again", "valid_for_was", valid.Sub(now).Round(time.Millisecond))
				}
				rev, valid, lastErr = nrev, now.Add(ttl-o.leaseMargin()), nil
				break
			}
			var lost *leaseLost
			if errors.As(err, &lost) {
				return err
			}
			if lastErr == nil {
				o.log.Warn("lease renewal failed, still leading and retrying", "err", err,
					"valid_for", time.Until(valid).Round(time.Millisecond))
			}
			lastErr = err
			if attempt >= 1 {
				break // the next tick tries again
			}
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
	if err == nil || !errors.Is(err, jetstream.ErrKeyExists) {
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
