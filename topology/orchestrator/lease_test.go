package orchestrator

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/bus/bustest"
)

// slowKV delays the lease updates while slow is set, as a loaded NATS
// server does (an update that times out here may still land there).
type slowKV struct {
	jetstream.KeyValue
	slow  atomic.Bool
	delay time.Duration
}

func (s *slowKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if s.slow.Load() {
		select {
		case <-ctx.Done():
			// The write still reaches the server, late.
			go func() { _, _ = s.KeyValue.Update(context.Background(), key, value, rev) }()
			return 0, ctx.Err()
		case <-time.After(s.delay):
		}
	}
	return s.KeyValue.Update(ctx, key, value, rev)
}

func leaseFixture(t *testing.T) (*Orchestrator, *bus.Buckets, *slowKV, uint64, time.Time) {
	t.Helper()
	_, c := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := bus.BucketConfig{LeaseTTL: time.Second}
	b, err := c.OpenBuckets(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	skv := &slowKV{KeyValue: b.Leader, delay: 300 * time.Millisecond}
	b.Leader = skv
	o := &Orchestrator{cfg: Config{ID: "a", Interval: 100 * time.Millisecond, Buckets: cfg}, conn: c}
	o.log = slog.New(slog.DiscardHandler)
	sent := time.Now()
	data, _ := bus.Encode(bus.Lease{Holder: "a", Since: sent})
	rev, err := b.Leader.Create(ctx, bus.LeaderKey, data)
	if err != nil {
		t.Fatal(err)
	}
	return o, b, skv, rev, sent
}

// TestLeaseSurvivesSlowRenewals: renewals that time out for less than the
// lease's validity (some of them landing late) do not end the leadership.
func TestLeaseSurvivesSlowRenewals(t *testing.T) {
	o, b, skv, rev, sent := leaseFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	k := newLeaseKeeper()
	o.leader.Store(true)
	go func() { done <- o.keepLease(ctx, b, k, rev, sent) }()
	for i := 0; i < 3; i++ {
		time.Sleep(300 * time.Millisecond)
		skv.slow.Store(true) // 500 ms of renewals timing out (validity: 900 ms)
		time.Sleep(500 * time.Millisecond)
		skv.slow.Store(false)
	}
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("lease given up: %v", err)
	default:
	}
	if k.paused.Load() || !o.Leader() {
		t.Fatalf("paused %v, leader %v: want leading through the slow renewals", k.paused.Load(), o.Leader())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("keepLease at the end: %v", err)
	}
	e, err := b.Leader.Get(context.Background(), bus.LeaderKey)
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := bus.DecodeLease(e.Value()); l.Holder != "a" {
		t.Fatalf("lease held by %q", l.Holder)
	}
}

// TestLeasePausedWhenUnsure: with no renewal confirmed, the leader pauses
// before the lease may lapse and resumes when a renewal over its revision
// succeeds; with the lease held by another it gives up.
func TestLeasePausedWhenUnsure(t *testing.T) {
	o, b, skv, rev, sent := leaseFixture(t)
	skv.slow.Store(true)
	skv.delay = time.Hour
	k := newLeaseKeeper()
	o.leader.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.keepLease(ctx, b, k, rev, sent) }()
	for !k.paused.Load() && time.Since(sent) < 10*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	// The lease is valid for LeaseTTL after it was sent: the leader goes on
	// until a margin before, then pauses (no upper bound on when: the
	// machine may be slow).
	if !k.paused.Load() || o.Leader() {
		t.Fatalf("paused %v, leader gauge %v: want paused, gauge 0", k.paused.Load(), o.Leader())
	}
	if d := k.pausedAt.Sub(sent); d < o.cfg.Buckets.LeaseTTL-o.leaseMargin() {
		t.Fatalf("paused %v after the lease was sent, before its validity (%v) ended", d, o.cfg.Buckets.LeaseTTL-o.leaseMargin())
	}
	skv.slow.Store(false)
	for k.paused.Load() && time.Since(sent) < 20*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if k.paused.Load() || !o.Leader() {
		t.Fatalf("still paused after the renewals came back")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	o2, b2, _, rev2, sent2 := leaseFixture(t)
	data, _ := bus.Encode(bus.Lease{Holder: "b", Since: time.Now()})
	if _, err := b2.Leader.Put(context.Background(), bus.LeaderKey, data); err != nil {
		t.Fatal(err)
	}
	var lost *leaseLost
	if err := o2.keepLease(context.Background(), b2, newLeaseKeeper(), rev2, sent2); !errors.As(err, &lost) {
		t.Fatalf("keepLease with the lease taken: %v, want lease lost", err)
	}
}

// TestFollowerRemovesDeadLeadersLease: a lease whose holder answers no
// pings and is not renewed is removed after 1.5 intervals; one whose
// holder answers stays.
func TestFollowerRemovesDeadLeadersLease(t *testing.T) {
	o, b, _, rev0, _ := leaseFixture(t)
	var w leaderWatch
	// Its own lease (a Create that timed out but landed) is taken.
	if rev, _, mine := o.watchLeader(context.Background(), b, &w); !mine || rev != rev0 {
		t.Fatalf("own lease: mine %v, revision %d, want %d", mine, rev, rev0)
	}
	o.cfg.ID = "b"
	start := time.Now()
	for time.Since(start) < 3*time.Second {
		o.watchLeader(context.Background(), b, &w)
		if _, err := b.Leader.Get(context.Background(), bus.LeaderKey); errors.Is(err, jetstream.ErrKeyNotFound) {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if _, err := b.Leader.Get(context.Background(), bus.LeaderKey); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("the dead leader's lease is still there after %v: %v", time.Since(start), err)
	}
	if d := time.Since(start); d < o.cfg.Interval*3/2 {
		t.Errorf("removed after %v, before 1.5 intervals", d)
	}

	o2, b2, _, _, _ := leaseFixture(t)
	stop, err := o2.answerPings()
	o2.cfg.ID = "b" // the follower; the leader "a" answers on the same connection
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var w2 leaderWatch
	for i := 0; i < 40; i++ {
		o2.watchLeader(context.Background(), b2, &w2)
		time.Sleep(25 * time.Millisecond)
	}
	if _, err := b2.Leader.Get(context.Background(), bus.LeaderKey); err != nil {
		t.Fatalf("a live leader's lease was removed: %v", err)
	}
}
