package redirector

import (
	"context"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/bus/bustest"
)

// TestLiveness: a relay that stops sending heartbeats (killed: no goodbye)
// is no longer named within 3 s, long before its status expires; a relay
// that drains or says goodbye is not named from the next answer on.
func TestLiveness(t *testing.T) {
	_, c := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := c.OpenBuckets(ctx, bus.BucketConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := newTest(t, c, Config{DevIP: true})
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	h := r.Handler()
	const tokyo = "/play/live/a?ip=203.0.113.5"
	pl, _ := bus.Encode(bus.Placement{App: "live", Name: "a", Relays: []bus.PlacedRelay{{Server: "relay-as", State: bus.StateReady}}})
	if _, err := b.Placements.Put(ctx, bus.StreamKey("live", "a"), pl); err != nil {
		t.Fatal(err)
	}
	subj, _ := bus.AliveSubject("relay-as")
	beat := func(a bus.Alive) {
		a.ID, a.Time = "relay-as", time.Now()
		data, _ := bus.Encode(a)
		if err := c.NC.Publish(subj, data); err != nil {
			t.Fatal(err)
		}
	}
	// A relay that reports and beats, until stop is closed.
	start := func() (stop func()) {
		st, _ := bus.Encode(bus.Status{ID: "relay-as", Location: "as", RTMP: "127.0.0.1:40001", HTTP: "127.0.0.1:40002", Time: time.Now()})
		if _, err := b.Relays.Put(ctx, "relay-as", st); err != nil {
			t.Fatal(err)
		}
		quit := make(chan struct{})
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			for {
				beat(bus.Alive{})
				select {
				case <-quit:
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
		}()
		waitFor(t, "relay-as named", func() bool { return choice(t, h, tokyo).Relay == "relay-as" })
		return func() { close(quit); <-ended }
	}

	// Killed: the heartbeats stop, the status stays in the bucket. (First
	// past the grace a freshly connected redirector gives heartbeats.)
	stop := start()
	time.Sleep(r.cfg.AliveTimeout)
	stop()
	killed := time.Now()
	waitFor(t, "the dead relay out of rotation", func() bool { return choice(t, h, tokyo).Relay != "relay-as" })
	if d := time.Since(killed); d > 3*time.Second {
		t.Errorf("a dead relay was named for %v after its last heartbeat, want ≤ 3 s", d)
	} else {
		t.Logf("dead relay out of rotation %v after its last heartbeat", d.Round(time.Millisecond))
	}

	// Back, then drained: out with the draining heartbeat.
	stop = start()
	beat(bus.Alive{Draining: true})
	waitFor(t, "the draining relay out of rotation", func() bool { return choice(t, h, tokyo).Relay != "relay-as" })
	stop()

	// Back, then stopped with a goodbye and its status removed.
	time.Sleep(10 * time.Millisecond) // the next status is after the drained beat
	stop = start()
	stop()
	beat(bus.Alive{Draining: true, Bye: true})
	if err := b.Relays.Delete(ctx, "relay-as"); err != nil {
		t.Fatal(err)
	}
	bye := time.Now()
	waitFor(t, "the departed relay out of rotation", func() bool { return choice(t, h, tokyo).Relay != "relay-as" })
	t.Logf("departed relay out of rotation %v after its goodbye", time.Since(bye).Round(time.Millisecond))
	if mv := r.View(); mv.Relays[relayIndex(mv, "relay-as")].Status != "down" {
		t.Errorf("mesh view after the goodbye: %+v", mv.Relays)
	}
}

func relayIndex(mv MeshView, id string) int {
	for i, r := range mv.Relays {
		if r.ID == id {
			return i
		}
	}
	return -1
}

// After the bus comes back, relays are not taken out for the heartbeats
// they could not send while it was away.
func TestLivenessGraceAfterReconnect(t *testing.T) {
	r := steerMesh(t)
	id, _ := r.mesh.ServerByID("relay-as")
	t0 := time.Now()
	r.onAlive(bus.Alive{ID: "relay-as", Time: t0}, t0)
	r.mu.Lock()
	defer r.mu.Unlock()
	rs := r.relays[id]
	// Connected since long before: 3 s without a heartbeat is down.
	r.busSince = t0.Add(-time.Minute)
	if r.liveLocked(rs, t0.Add(3*time.Second)) {
		t.Fatal("a relay silent for 3 s is up")
	}
	// Reconnected 1 s ago after a 5 s outage: still up for now.
	r.busSince = t0.Add(5 * time.Second)
	if !r.liveLocked(rs, t0.Add(6*time.Second)) {
		t.Fatal("a relay taken down for heartbeats lost with the bus")
	}
	if r.liveLocked(rs, t0.Add(8*time.Second)) {
		t.Fatal("a relay still silent 3 s after the reconnection is up")
	}
}
