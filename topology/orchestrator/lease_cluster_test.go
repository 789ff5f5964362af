package orchestrator

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/bus/bustest"
	"github.com/relaymesh/relaymesh/internal/testlog"
	"github.com/relaymesh/relaymesh/topology/graph"
)

// TestLeaseInThreeNodeCluster: with the default lease TTL, losing the NATS
// server that leads the lease bucket's stream (no lease write succeeds
// until the stream has a leader again; the leader's connection may move to
// another server) costs the leader neither its lease nor a pause, and the
// follower does not take it; killing the leader (its connection closed,
// no release) hands the lease to the other within a few intervals, long
// before the TTL would. (An in-process server shut down hands its streams
// over; the drills kill a real one, whose streams wait 4–9 s for an
// election: the slow renewals of lease_test.go stand for that here.)
func TestLeaseInThreeNodeCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-server NATS cluster and loses one")
	}
	srvs, urls := bustest.StartCluster(t, 3)
	g, err := graph.DevWorld()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := Config{Graph: g, Interval: 250 * time.Millisecond}
	var orch [2]*Orchestrator
	var conns [2]*bus.Conn
	var cancels [2]context.CancelFunc
	var done [2]chan struct{}
	log := testlog.OnFailure(t)
	for i, id := range []string{"a", "b"} {
		c, err := bus.Connect(bus.Options{URLs: urls, Name: id, ReconnectWait: 100 * time.Millisecond}, nil)
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		cfg.ID = id
		if orch[i], err = New(cfg, c, log); err != nil {
			t.Fatal(err)
		}
		octx, ocancel := context.WithCancel(ctx)
		cancels[i], done[i] = ocancel, make(chan struct{})
		go func() { defer close(done[i]); _ = orch[i].Run(octx) }()
	}
	defer func() {
		for i := range orch {
			cancels[i]()
			<-done[i]
			conns[i].Close()
		}
	}()
	for orch[0].Leader() == orch[1].Leader() && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	if a, b := orch[0].Leader(), orch[1].Leader(); a == b {
		t.Fatalf("not one leader by the deadline: a leads %v, b leads %v", a, b)
	}
	l := 0
	if orch[1].Leader() {
		l = 1
	}
	f := 1 - l
	t.Logf("%s leads", orch[l].cfg.ID)

	// The lease stream's leader node goes.
	node, err := bustest.StreamLeader(ctx, conns[f].JS, bus.BucketLeader)
	if err != nil {
		t.Fatalf("the lease bucket's stream leader: %v", err)
	}
	for _, s := range srvs {
		if s.Name() == node {
			t.Logf("shutting down %s", node)
			s.Shutdown()
		}
	}
	lost := time.Now()
	// Watched until a lease write has succeeded again (a new stream leader)
	// and a little longer: the leader leads throughout, nobody else.
	var paused atomic.Bool
	writable := false
	for time.Since(lost) < 30*time.Second && ctx.Err() == nil {
		if !orch[l].Leader() {
			paused.Store(true)
		}
		if orch[f].Leader() {
			t.Fatalf("%s took the lease after %s was lost", orch[f].cfg.ID, node)
		}
		if !writable {
			wctx, wcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			if leader, err := bustest.StreamLeader(wctx, conns[f].JS, bus.BucketLeader); err == nil && leader != node {
				writable = true
				lost = time.Now().Add(-25 * time.Second) // five seconds more
			}
			wcancel()
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !writable {
		t.Fatalf("the lease bucket elected no new leader after %s was lost", node)
	}
	if paused.Load() || orch[l].Terms() != 1 || orch[f].Terms() != 0 {
		t.Fatalf("after losing %s: the leader paused %v, terms %d and %d; want leading throughout, one term",
			node, paused.Load(), orch[l].Terms(), orch[f].Terms())
	}

	// The leader is killed: its connection closes without a release.
	conns[l].Close()
	killed := time.Now()
	cancels[l]()
	<-done[l]
	for !orch[f].Leader() && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(killed)
	t.Logf("%s took over %v after the kill", orch[f].cfg.ID, took)
	if !orch[f].Leader() {
		t.Fatal("no takeover")
	}
	// Not by the lease's expiry: by the probe, a fraction of the TTL.
	if took >= bus.DefaultLeaseTTL {
		t.Fatalf("took over after %v, the lease's TTL: the dead leader was not noticed", took)
	}
}
