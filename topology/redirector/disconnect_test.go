package redirector

import (
	"context"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/bus/bustest"
	"github.com/relaymesh/relaymesh/topology/liveness/livenesstest"
)

// TestDisconnectedRelay: a relay whose NATS connection closes is out of
// rotation at once when nothing listens at its address any more (its
// process died), and stays named when its listener answers (a NATS blip of
// a healthy relay, which reconnects). A late heartbeat of the dead process
// does not bring it back; a process listening there again does. The
// heartbeat timeout is a minute here: only the disconnect can take the
// relay out.
func TestDisconnectedRelay(t *testing.T) {
	e, c := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := c.OpenBuckets(ctx, bus.BucketConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := newTest(t, c, Config{DevIP: true, AliveTimeout: time.Minute})
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	h := r.Handler()
	const tokyo = "/play/live/a?ip=203.0.113.5"
	named := func() bool { return choice(t, h, tokyo).Relay == "relay-as" }
	pl, _ := bus.Encode(bus.Placement{App: "live", Name: "a", Relays: []bus.PlacedRelay{{Server: "relay-as", State: bus.StateReady}}})
	if _, err := b.Placements.Put(ctx, bus.StreamKey("live", "a"), pl); err != nil {
		t.Fatal(err)
	}
	// The relay's listener (its HTTP port), and its agent's connection.
	ln := livenesstest.Listen(t)
	addr := ln.Addr().String()
	st, _ := bus.Encode(bus.Status{ID: "relay-as", Location: "as", RTMP: addr, HTTP: addr, Time: time.Now()})
	if _, err := b.Relays.Put(ctx, "relay-as", st); err != nil {
		t.Fatal(err)
	}
	subj, _ := bus.AliveSubject("relay-as")
	agent := func() *bus.Conn {
		ac, err := bus.Connect(bus.Options{InProcess: e.Server(), Name: "relay-as"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := bus.Encode(bus.Alive{ID: "relay-as", Time: time.Now()})
		if err := ac.NC.Publish(subj, data); err != nil {
			t.Fatal(err)
		}
		if err := ac.NC.Flush(); err != nil {
			t.Fatal(err)
		}
		return ac
	}
	outcome := func(o int) uint64 { return r.disconnects.n[o].Load() }

	// A blip: the connection closes, the process lives and reconnects.
	ac := agent()
	waitFor(t, "relay-as named", named)
	ac.Close()
	waitFor(t, "the disconnect probed", func() bool { return outcome(outcomeAlive) > 0 })
	if !named() {
		t.Fatal("a relay whose connection closed while it listens is out of rotation")
	}
	ac = agent()
	defer func() { ac.Close() }()

	// Killed: the listener is gone when the connection closes.
	ln.Close()
	killed := time.Now()
	ac.Close()
	waitFor(t, "the dead relay out of rotation", func() bool { return !named() })
	t.Logf("out of rotation %v after the connection closed", time.Since(killed).Round(time.Millisecond))
	if outcome(outcomeGone) != 1 {
		t.Errorf("gone %d times, want 1", outcome(outcomeGone))
	}
	sm := steering(t, h, "/steer/hls/live/a?base=relay-as")
	for _, p := range sm.PathwayPriority {
		if p == "relay-as" {
			t.Errorf("the steering answer names the dead relay: %+v", sm)
		}
	}

	// A late heartbeat of the dead process: still out.
	ac = agent()
	time.Sleep(300 * time.Millisecond)
	if named() {
		t.Fatal("a heartbeat brought back a relay whose listener refuses")
	}
	// Restarted: it listens again and beats.
	if _, err := livenesstest.ListenAt(t, addr); err != nil {
		t.Skipf("the dead relay's port was taken meanwhile: %v", err)
	}
	ac.Close()
	ac = agent()
	waitFor(t, "the restarted relay named again", named)
}
