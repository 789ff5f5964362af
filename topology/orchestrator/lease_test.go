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
	lose  atomic.Int32 // updates left to lose: never answered, never landing
}

func (s *slowKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if s.lose.Load() > 0 {
		<-ctx.Done()
		s.lose.Add(-1)
		return 0, ctx.Err()
	}
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

// TestLeaseRenewalLostIsSentAgain: a renewal that is never answered (lost
// with a NATS server) is sent again after renewWait, well within the
// lease's validity: the leader does not pause.
func TestLeaseRenewalLostIsSentAgain(t *testing.T) {
	o, b, skv, rev, sent := leaseFixture(t)
	skv.lose.Store(1)
	k := newLeaseKeeper()
	o.leader.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.keepLease(ctx, b, k, rev, sent) }()
	for skv.lose.Load() > 0 && time.Since(sent) < 10*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(5 * o.cfg.Interval) // renewals go on after the lost one
	if k.paused.Load() || !k.pausedAt.IsZero() || !o.Leader() {
		t.Fatalf("paused %v (at %v), leader %v: want leading through a lost renewal", k.paused.Load(), k.pausedAt, o.Leader())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// follower is orchestrator id on the fixture's connection, probing.
func follower(t *testing.T, o *Orchestrator, id string) (*Orchestrator, *leaderProbe) {
	f := &Orchestrator{cfg: o.cfg, conn: o.conn, log: o.log}
	f.cfg.ID = id
	p := newLeaderProbe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.probeLeader(ctx, p) }()
	t.Cleanup(func() { cancel(); <-done })
	return f, p
}

// TestFollowerTakesDeadLeadersLease: a lease whose holder answers no pings
// is taken over by a conditional write after 1.5 intervals, without
// waiting for its TTL; the old holder, should it come back, finds it
// taken and steps down. A lease whose holder answers stays, and a lease
// naming the follower itself (a write that timed out but landed) is its.
func TestFollowerTakesDeadLeadersLease(t *testing.T) {
	o, b, _, rev0, sent0 := leaseFixture(t)
	// Its own lease is taken as it is.
	if rev, since, ok := o.follow(context.Background(), b, newLeaderProbe()); !ok || rev != rev0 || !since.Equal(sent0) {
		t.Fatalf("own lease: ok %v, revision %d (want %d), since %v (want %v)", ok, rev, rev0, since, sent0)
	}
	f, p := follower(t, o, "b")
	start := time.Now()
	var rev uint64
	ok := false
	for !ok && time.Since(start) < 10*time.Second {
		if rev, _, ok = f.follow(context.Background(), b, p); !ok {
			select {
			case <-p.gone:
			case <-time.After(f.cfg.Interval / 4):
			}
		}
	}
	if !ok {
		t.Fatalf("the dead leader's lease not taken over within %v", time.Since(start))
	}
	if d := time.Since(start); d < f.cfg.Interval*3/2 {
		t.Errorf("taken over after %v, before 1.5 intervals", d)
	}
	if d := time.Since(start); d >= f.cfg.Buckets.LeaseTTL {
		t.Errorf("taken over after %v: the lease's TTL (%v), not the probe", d, f.cfg.Buckets.LeaseTTL)
	}
	e, err := b.Leader.Get(context.Background(), bus.LeaderKey)
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := bus.DecodeLease(e.Value()); l.Holder != "b" || e.Revision() != rev {
		t.Fatalf("lease %+v at revision %d, want b's at %d", l, e.Revision(), rev)
	}
	// The old leader's renewal over its revision is refused: it steps down.
	var lost *leaseLost
	if err := o.keepLease(context.Background(), b, newLeaseKeeper(), rev0, sent0); !errors.As(err, &lost) {
		t.Fatalf("the old leader's keepLease: %v, want lease lost", err)
	}

	// A live leader: it answers and renews (the fixture's TTL is short).
	o2, b2, _, rev2, sent2 := leaseFixture(t)
	stop, err := o2.answerPings()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	o2.leader.Store(true)
	lctx, lcancel := context.WithCancel(context.Background())
	ldone := make(chan error, 1)
	go func() { ldone <- o2.keepLease(lctx, b2, newLeaseKeeper(), rev2, sent2) }()
	f2, p2 := follower(t, o2, "b")
	for start := time.Now(); time.Since(start) < 20*f2.cfg.Interval; {
		if _, _, ok := f2.follow(context.Background(), b2, p2); ok {
			t.Fatal("a live leader's lease was taken")
		}
		time.Sleep(25 * time.Millisecond)
	}
	lcancel()
	if err := <-ldone; err != nil {
		t.Fatalf("the live leader's keepLease: %v", err)
	}
	e, err = b2.Leader.Get(context.Background(), bus.LeaderKey)
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := bus.DecodeLease(e.Value()); l.Holder != "a" {
		t.Fatalf("a live leader's lease is held by %q", l.Holder)
	}
}

// TestLeaderProbe: only an unbroken run of "no responders" counts, and
// the probe signals when the run is long enough.
func TestLeaderProbe(t *testing.T) {
	o := &Orchestrator{cfg: Config{Interval: time.Second}}
	p := newLeaderProbe()
	t0 := time.Now()
	p.absent(1, t0, t0) // the lease at revision 1 seen
	for i := 0; i < 3; i++ {
		at := t0.Add(time.Duration(i) * time.Second)
		p.record(at, at, pingNoResponders, o.leaderGone)
	}
	if d, n := p.absent(1, t0, t0.Add(2*time.Second)); d != 2*time.Second || n != 3 || o.leaderGone(d, n) {
		t.Fatalf("after 3 pings over 2 s: %v, %d, gone %v; want 2 s, 3, not gone (four pings needed)", d, n, o.leaderGone(d, n))
	}
	select {
	case <-p.gone:
		t.Fatal("signalled before four pings")
	default:
	}
	// A timeout of a ping sent before the run began changes nothing; one
	// sent after it ends the run, as an answer does.
	p.record(t0.Add(-500*time.Millisecond), t0.Add(2500*time.Millisecond), pingUnknown, o.leaderGone)
	if _, n := p.absent(1, t0, t0.Add(2500*time.Millisecond)); n != 3 {
		t.Fatalf("after a timeout of a ping sent before the run: %d pings missing, want 3", n)
	}
	p.record(t0.Add(500*time.Millisecond), t0.Add(2600*time.Millisecond), pingUnknown, o.leaderGone)
	if d, n := p.absent(1, t0, t0.Add(2600*time.Millisecond)); d != 0 || n != 0 {
		t.Fatalf("after a timeout of a ping sent in the run: %v, %d", d, n)
	}
	at := t0.Add(2700 * time.Millisecond)
	p.record(at, at, pingNoResponders, o.leaderGone)
	p.record(at, t0.Add(3*time.Second), pingAnswered, o.leaderGone)
	if d, n := p.absent(1, t0, t0.Add(3*time.Second)); d != 0 || n != 0 {
		t.Fatalf("after an answer: %v, %d", d, n)
	}
	for i := 0; i < 4; i++ {
		at := t0.Add(4*time.Second + time.Duration(i)*400*time.Millisecond)
		p.record(at, at, pingNoResponders, o.leaderGone)
	}
	select {
	case <-p.gone:
		t.Fatal("signalled after 1.2 s: want 1.5 intervals")
	default:
	}
	p.record(t0.Add(5600*time.Millisecond), t0.Add(5600*time.Millisecond), pingNoResponders, o.leaderGone)
	select {
	case <-p.gone:
	default:
		t.Fatal("five pings over 1.6 s missing: not signalled")
	}
	if !o.leaderGone(p.absent(1, t0, t0.Add(5600*time.Millisecond))) {
		t.Fatal("not gone after 1.6 s and five pings")
	}
	// A revision written before the run began (the dead leader's last
	// renewal, seen late) changes nothing; one written after it (a
	// renewal, or a new leader) starts the count again.
	if d, n := p.absent(2, t0.Add(3500*time.Millisecond), t0.Add(5650*time.Millisecond)); d != 1650*time.Millisecond || n != 5 {
		t.Fatalf("at a revision written before the run: %v, %d; want 1.65 s, 5", d, n)
	}
	if d, n := p.absent(3, t0.Add(4500*time.Millisecond), t0.Add(5700*time.Millisecond)); d != 0 || n != 0 {
		t.Fatalf("at a revision written after the run began: %v, %d; want 0, 0", d, n)
	}
}

// TestLeaseLapsedIsWrittenAgain: when no renewal lands for longer than the
// TTL (the bucket unwritable that long) the lease expires on the server;
// the paused leader writes it again once it can, nobody having written
// the bucket since, and resumes, while a follower that finds no lease
// leaves it to the leader that answers its pings. Had another written the
// lease meanwhile, the leader gives it up.
func TestLeaseLapsedIsWrittenAgain(t *testing.T) {
	o, b, skv, rev, sent := leaseFixture(t)
	stop, err := o.answerPings()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	f, p := follower(t, o, "b")
	k := newLeaseKeeper()
	o.leader.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.keepLease(ctx, b, k, rev, sent) }()
	skv.lose.Store(1 << 20) // no renewal lands
	lapsed := false
	for start := time.Now(); !lapsed && time.Since(start) < 5*time.Second; {
		if _, _, ok := f.follow(context.Background(), b, p); ok {
			t.Fatal("the follower took the lease of a leader that answers")
		}
		_, err := skv.KeyValue.Get(context.Background(), bus.LeaderKey)
		lapsed = errors.Is(err, jetstream.ErrKeyNotFound)
		time.Sleep(20 * time.Millisecond)
	}
	if !lapsed {
		t.Fatal("the lease did not expire on the server")
	}
	if !k.paused.Load() || o.Leader() {
		t.Fatalf("lease lapsed: paused %v, leader %v; want paused", k.paused.Load(), o.Leader())
	}
	skv.lose.Store(0) // the bucket takes writes again
	for start := time.Now(); k.paused.Load() && time.Since(start) < 5*time.Second; {
		if _, _, ok := f.follow(context.Background(), b, p); ok {
			t.Fatal("the follower took the lapsed lease of a leader that answers")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("lease given up: %v", err)
	default:
	}
	if k.paused.Load() || !o.Leader() {
		t.Fatalf("paused %v, leader %v: want leading again", k.paused.Load(), o.Leader())
	}
	e, err := b.Leader.Get(context.Background(), bus.LeaderKey)
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := bus.DecodeLease(e.Value()); l.Holder != "a" {
		t.Fatalf("lease held by %q", l.Holder)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Lapsed, then created by another: given up.
	o2, b2, skv2, rev2, sent2 := leaseFixture(t)
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(20 * time.Millisecond) {
		if _, err := skv2.KeyValue.Get(context.Background(), bus.LeaderKey); errors.Is(err, jetstream.ErrKeyNotFound) {
			break
		}
	}
	data, _ := bus.Encode(bus.Lease{Holder: "b", Since: time.Now()})
	if _, err := b2.Leader.Create(context.Background(), bus.LeaderKey, data); err != nil {
		t.Fatalf("creating the lapsed lease: %v", err)
	}
	var lost *leaseLost
	if err := o2.keepLease(context.Background(), b2, newLeaseKeeper(), rev2, sent2); !errors.As(err, &lost) {
		t.Fatalf("keepLease with the lapsed lease written by another: %v, want lease lost", err)
	}
}

// TestLeaderProbeHoldOff: a follower leaves a missing lease to a leader
// that answered lately and has not missed a ping since, for at most its
// bound from the first time it found none; finding the lease again ends it.
func TestLeaderProbeHoldOff(t *testing.T) {
	o := &Orchestrator{cfg: Config{Interval: time.Second}}
	p := newLeaderProbe()
	t0 := time.Now()
	if p.holdOff(t0, time.Second, 10*time.Second) {
		t.Fatal("held off with no answer ever")
	}
	p.record(t0, t0, pingAnswered, o.leaderGone)
	if !p.holdOff(t0.Add(500*time.Millisecond), time.Second, 10*time.Second) {
		t.Fatal("not held off for a leader that answered 0.5 s ago")
	}
	if p.holdOff(t0.Add(1500*time.Millisecond), time.Second, 10*time.Second) {
		t.Fatal("held off for an answer 1.5 s old (fresh: 1 s)")
	}
	for i := 1; i <= 12; i++ {
		at := t0.Add(time.Duration(i) * time.Second)
		p.record(at, at, pingAnswered, o.leaderGone)
		if got, want := p.holdOff(at, time.Second, 10*time.Second), i <= 10; got != want {
			t.Fatalf("%d s after the first answer (the hold-off began at 0.5 s): held off %v, want %v (bound 10 s)", i, got, want)
		}
	}
	p.leaseSeen()
	at := t0.Add(13 * time.Second)
	p.record(at, at, pingAnswered, o.leaderGone)
	if !p.holdOff(at, time.Second, 10*time.Second) {
		t.Fatal("not held off after the lease was seen again")
	}
	at = at.Add(100 * time.Millisecond)
	p.record(at, at, pingNoResponders, o.leaderGone)
	if p.holdOff(at, time.Second, 10*time.Second) {
		t.Fatal("held off after a ping found nobody")
	}
	p.leading()
	if p.holdOff(at, time.Second, 10*time.Second) {
		t.Fatal("held off while leading (its own answers)")
	}
}
