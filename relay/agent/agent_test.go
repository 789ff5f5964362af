package agent

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/bus/bustest"
)

type fakePuller struct {
	mu       sync.Mutex
	url      string
	held     map[string]bool
	fail     error
	released []string
}

func (f *fakePuller) Hold(ctx context.Context, app, name, parent string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.url = parent
	if f.fail != nil {
		return f.fail
	}
	f.held[app+"/"+name] = true
	return nil
}
func (f *fakePuller) Release(app, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.held, app+"/"+name)
	f.released = append(f.released, app+"/"+name)
}

func startBus(t *testing.T) *bus.Conn {
	t.Helper()
	_, c := bustest.Start(t)
	return c
}

// waitFor polls cond for up to 10 s (a bound, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestStatusAndCommands(t *testing.T) {
	c := startBus(t)
	stats := func() []bus.StreamStatus {
		return []bus.StreamStatus{{App: "live", Name: "a", Viewers: 5, Mbps: 10, Live: true}}
	}
	p := &fakePuller{held: map[string]bool{}}
	ttl := time.Second
	a, err := New(Config{ID: "relay-eu", Location: "eu", RTMP: "127.0.0.1:1", CapacityViewers: 100,
		Interval: 100 * time.Millisecond, Buckets: bus.BucketConfig{StatusTTL: ttl}}, c, stats, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	bctx, bcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer bcancel()
	waitFor(t, "first report", func() bool { return a.Reports() > 0 })
	b, err := c.OpenBuckets(bctx, bus.BucketConfig{StatusTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	e, err := b.Relays.Get(bctx, "relay-eu")
	if err != nil {
		t.Fatal(err)
	}
	st, err := bus.DecodeStatus(e.Value())
	if err != nil || st.Viewers != 5 || st.Location != "eu" || len(st.Streams) != 1 {
		t.Fatalf("status %+v %v", st, err)
	}

	// open → Hold on the parent; the status then says held.
	if _, err := c.Request(bctx, "relay-eu", bus.Command{Op: bus.OpOpen, App: "live", Name: "a", Parent: "rtmp://127.0.0.1:1935"}); err != nil {
		t.Fatalf("open: %v", err)
	}
	p.mu.Lock()
	if !p.held["live/a"] || p.url != "rtmp://127.0.0.1:1935" {
		t.Fatalf("puller after open: %+v", p)
	}
	p.fail = errors.New("upstream refused")
	p.mu.Unlock()
	if !a.Status().Streams[0].Held {
		t.Fatal("status does not show the held stream")
	}
	if _, err := c.Request(bctx, "relay-eu", bus.Command{Op: bus.OpOpen, App: "live", Name: "b"}); err == nil {
		t.Fatal("failed open acknowledged")
	}
	if _, err := c.Request(bctx, "relay-eu", bus.Command{Op: bus.OpDrain}); err != nil || !a.Draining() {
		t.Fatalf("drain: %v", err)
	}
	if _, err := c.Request(bctx, "relay-eu", bus.Command{Op: bus.OpClose, App: "live", Name: "a"}); err != nil {
		t.Fatalf("close: %v", err)
	}
	p.mu.Lock()
	if p.held["live/a"] || len(p.released) != 1 {
		t.Fatalf("puller after close: %+v", p)
	}
	p.mu.Unlock()
	if _, err := c.Request(bctx, "relay-eu", bus.Command{Op: "explode"}); err == nil {
		t.Fatal("bad command acknowledged")
	}

	// A stopped relay vanishes from the bucket once the TTL passes.
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "status expiry", func() bool {
		_, err := b.Relays.Get(bctx, "relay-eu")
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
}

func TestRunWithoutBus(t *testing.T) {
	// With the bus gone the agent keeps trying and stops with its context.
	e, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := bus.Connect(bus.Options{InProcess: e.Server()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e.Shutdown()
	a, _ := New(Config{ID: "r", Interval: 20 * time.Millisecond}, c, func() []bus.StreamStatus { return nil }, &fakePuller{held: map[string]bool{}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if a.Reports() != 0 {
		t.Fatal("reports stored without a bus")
	}
}

func TestHeartbeatDrainAndGoodbye(t *testing.T) {
	c := startBus(t)
	alive := make(chan bus.Alive, 64)
	sub, err := c.NC.Subscribe(bus.AliveWildcard, func(m *nats.Msg) {
		if a, err := bus.DecodeAlive(m.Data); err == nil {
			alive <- a
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	ttl := time.Minute // the goodbye, not the TTL, removes the status
	a, err := New(Config{ID: "relay-eu", Interval: 100 * time.Millisecond, AliveInterval: 50 * time.Millisecond,
		Buckets: bus.BucketConfig{StatusTTL: ttl}}, c, func() []bus.StreamStatus { return nil }, &fakePuller{held: map[string]bool{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	next := func(what string, ok func(bus.Alive) bool) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case al := <-alive:
				if al.ID == "relay-eu" && ok(al) {
					return
				}
			case <-deadline:
				t.Fatalf("no %s heartbeat", what)
			}
		}
	}
	next("first", func(al bus.Alive) bool { return !al.Draining && !al.Bye })
	waitFor(t, "first report", func() bool { return a.Reports() > 0 })
	bctx, bcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer bcancel()
	if _, err := c.Request(bctx, "relay-eu", bus.Command{Op: bus.OpDrain}); err != nil {
		t.Fatal(err)
	}
	next("draining", func(al bus.Alive) bool { return al.Draining && !al.Bye })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	next("goodbye", func(al bus.Alive) bool { return al.Bye })
	b, err := c.OpenBuckets(bctx, bus.BucketConfig{StatusTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Relays.Get(bctx, "relay-eu"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("status still stored after the goodbye: %v", err)
	}
}
