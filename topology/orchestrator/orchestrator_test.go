package orchestrator

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/demand"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/liveness/livenesstest"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 300; i++ {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// cluster is an embedded bus with two orchestrators, a and b, and fake
// relays that acknowledge every command.
type cluster struct {
	t       *testing.T
	ctx     context.Context
	b       *bus.Buckets
	g       *graph.Graph
	orch    [2]*Orchestrator
	cancels [2]context.CancelFunc
	done    [2]chan struct{}
	conn    func() *bus.Conn
	named   func(name string) *bus.Conn // a connection of its own, so named

	mu      sync.Mutex
	cmds    map[string][]string // relay id → ops received
	silent  map[string]bool     // relays that send no status
	viewers map[string]int      // relay id → viewers of live/a it reports
	addrs   map[string]string   // relay id → the HTTP address its status reports
}

func startCluster(t *testing.T, cfg Config) *cluster {
	t.Helper()
	e, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	c := &cluster{t: t, cmds: map[string][]string{}, silent: map[string]bool{}, viewers: map[string]int{}, addrs: map[string]string{}}
	c.named = func(name string) *bus.Conn {
		bc, err := bus.Connect(bus.Options{InProcess: e.Server(), Name: name}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(bc.Close)
		return bc
	}
	c.conn = func() *bus.Conn { return c.named("") }
	if c.g, err = graph.DevWorld(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c.ctx = ctx
	cfg.Graph, cfg.Interval = c.g, 100*time.Millisecond
	cfg.Buckets = bus.BucketConfig{StatusTTL: 3 * time.Second, LeaseTTL: time.Second}
	relays := c.conn()
	if c.b, err = relays.OpenBuckets(ctx, cfg.Buckets); err != nil {
		t.Fatal(err)
	}
	sub, err := relays.NC.Subscribe("relaymesh.v1.relay.*.cmd", func(m *nats.Msg) {
		cmd, err := bus.DecodeCommand(m.Data)
		if err == nil {
			c.mu.Lock()
			id := strings.TrimSuffix(strings.TrimPrefix(m.Subject, "relaymesh.v1.relay."), ".cmd")
			c.cmds[id] = append(c.cmds[id], cmd.Op)
			c.mu.Unlock()
		}
		data, _ := bus.Encode(bus.Reply{OK: err == nil})
		_ = m.Respond(data)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	go func() {
		for ctx.Err() == nil {
			for _, s := range c.g.Servers() {
				c.mu.Lock()
				silent, n, http := c.silent[s.ID], c.viewers[s.ID], c.addrs[s.ID]
				c.mu.Unlock()
				if silent {
					continue
				}
				st := bus.Status{ID: s.ID, Location: s.Location, RTMP: s.RTMP, HTTP: http, Time: time.Now(), Viewers: n}
				if n > 0 {
					st.Streams = []bus.StreamStatus{{App: "live", Name: "a", Viewers: n, Live: true}}
				}
				data, _ := bus.Encode(st)
				_, _ = c.b.Relays.Put(ctx, s.ID, data)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	for i := range c.orch {
		cfg.ID = []string{"a", "b"}[i]
		o, err := New(cfg, c.conn(), nil)
		if err != nil {
			t.Fatal(err)
		}
		c.orch[i] = o
		octx, ocancel := context.WithCancel(ctx)
		c.cancels[i], c.done[i] = ocancel, make(chan struct{})
		go func() { defer close(c.done[i]); _ = o.Run(octx) }()
	}
	t.Cleanup(func() {
		for i := range c.orch {
			c.cancels[i]()
			<-c.done[i]
		}
	})
	return c
}

// leader waits for one of the two to lead and returns its index.
func (c *cluster) leader() int {
	waitFor(c.t, "a leader", func() bool { return c.orch[0].Leader() != c.orch[1].Leader() })
	if c.orch[1].Leader() {
		return 1
	}
	return 0
}

// stop stops orchestrator i.
func (c *cluster) stop(i int) {
	c.cancels[i]()
	<-c.done[i]
}

// ops returns the commands relay id received.
func (c *cluster) ops(id string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.cmds[id]...)
}

func (c *cluster) publish(subject string, v any) {
	c.t.Helper()
	data, _ := bus.Encode(v)
	if err := c.conn().NC.Publish(subject, data); err != nil {
		c.t.Fatal(err)
	}
}

// demandUntil publishes the demand event until cond holds: the leader's
// subscription may start a little after it says it leads, and demand is
// not persisted.
func (c *cluster) demandUntil(what string, e bus.DemandEvent, cond func() bool) {
	c.t.Helper()
	for i := 0; i < 30; i++ {
		c.publish(bus.DemandSubject, bus.Demand{Events: []bus.DemandEvent{e}})
		for j := 0; j < 10; j++ {
			if cond() {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	c.t.Fatalf("timed out waiting for %s", what)
}

// placedAt reports whether app/name has exactly one relay, ready, on server.
func (c *cluster) placedAt(app, name, server string) bool {
	e, err := c.b.Placements.Get(c.ctx, bus.StreamKey(app, name))
	if err != nil {
		return false
	}
	p, err := bus.DecodePlacement(e.Value())
	return err == nil && len(p.Relays) == 1 && p.Relays[0].Server == server &&
		p.Relays[0].State == bus.StateReady && p.Relays[0].Parent == "primary"
}

func count(ops []string, op string) int {
	n := 0
	for _, o := range ops {
		if o == op {
			n++
		}
	}
	return n
}

func TestDemandOpensRelayAndLeaderTakesOver(t *testing.T) {
	c := startCluster(t, Config{Demand: demand.Config{Threshold: 5}})
	lead := c.leader()

	// Demand from Japan opens the stream at the Asian hub.
	ready := func() bool { return c.placedAt("live", "a", "relay-as") }
	c.demandUntil("relay-as ready in the placements", bus.DemandEvent{App: "live", Name: "a", Vertex: "JP", Nearest: 10, N: 200}, ready)
	for _, bo := range c.orch[lead].Bonuses() {
		// The bonus at "as" was reset when the relay opened; others may be small.
		if bo.Location == "as" {
			t.Fatalf("bonus left at the opened location: %+v", bo)
		}
	}

	// The leader stops; the other takes over and keeps the placement.
	c.stop(lead)
	other := 1 - lead
	waitFor(t, "takeover", c.orch[other].Leader)
	time.Sleep(500 * time.Millisecond) // a few evaluations of the new leader
	if !ready() {
		t.Fatal("placement lost after takeover")
	}
	if n := count(c.ops("relay-as"), bus.OpOpen); n != 1 {
		t.Fatalf("relay-as got %d open commands, want 1 (a ready relay is adopted, not reopened)", n)
	}
}

// TestBonusesSurviveTakeover: the demand bonuses gathered under one leader
// (below the threshold, so no relay opens) are where the next leader
// starts from.
func TestBonusesSurviveTakeover(t *testing.T) {
	c := startCluster(t, Config{})
	lead := c.leader()
	at := func(o *Orchestrator) float64 {
		for _, bo := range o.Bonuses() {
			if bo.App == "live" && bo.Name == "a" && bo.Location == "as" {
				return bo.Value
			}
		}
		return 0
	}

	c.demandUntil("a bonus at as", bus.DemandEvent{App: "live", Name: "a", Vertex: "JP", Nearest: -1, N: 2}, func() bool { return at(c.orch[lead]) > 0 })
	before := at(c.orch[lead])
	if before >= 50 {
		t.Fatalf("bonus %v reached the threshold; the test wants less", before)
	}
	waitFor(t, "the bonuses saved", func() bool {
		_, err := c.b.Demand.Get(c.ctx, bus.StreamKey("live", "a"))
		return err == nil
	})

	c.stop(lead)
	other := 1 - lead
	waitFor(t, "takeover", c.orch[other].Leader)
	waitFor(t, "the bonus restored", func() bool { return at(c.orch[other]) > 0 })
	if after := at(c.orch[other]); after < 0.8*before || after > before {
		t.Fatalf("bonus at as: %v under the first leader, %v under the next (60 s half-life)", before, after)
	}
}

// TestEndedStreamClosesRelays: a stream the primary reports unpublished
// loses its relays after EndGrace, unless it comes back before.
func TestEndedStreamClosesRelays(t *testing.T) {
	c := startCluster(t, Config{Demand: demand.Config{Threshold: 5}, EndGrace: 400 * time.Millisecond})
	c.leader()
	for _, name := range []string{"a", "b"} {
		c.demandUntil("live/"+name+" on relay-as", bus.DemandEvent{App: "live", Name: name, Vertex: "JP", Nearest: 10, N: 200},
			func() bool { return c.placedAt("live", name, "relay-as") })
	}
	event := func(name, ev string) {
		subj, _ := bus.StreamEventSubject("live", name)
		c.publish(subj, bus.StreamEvent{App: "live", Name: name, Event: ev, Time: time.Now()})
	}
	event("a", bus.EventUnpublish)
	event("b", bus.EventUnpublish)
	time.Sleep(100 * time.Millisecond)
	event("b", bus.EventPublish) // b's publisher is back within the grace
	waitFor(t, "live/a's placement deleted", func() bool {
		_, err := c.b.Placements.Get(c.ctx, bus.StreamKey("live", "a"))
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
	// The command goes out from a worker, apart from the placement's write.
	waitFor(t, "relay-as's close command", func() bool { return count(c.ops("relay-as"), bus.OpClose) > 0 })
	if n := count(c.ops("relay-as"), bus.OpClose); n != 1 {
		t.Errorf("relay-as got %d close commands, want 1 (for live/a)", n)
	}
	time.Sleep(600 * time.Millisecond) // past b's grace
	if !c.placedAt("live", "b", "relay-as") {
		t.Error("live/b lost its relay although its publisher came back")
	}
}

// TestRelayBackIsPlacedAgain: a relay that goes silent while serving
// viewers is marked down and loses its placement; when it reports again
// while the stream still has demand, the leader opens it again.
func TestRelayBackIsPlacedAgain(t *testing.T) {
	c := startCluster(t, Config{Demand: demand.Config{Threshold: 5}})
	lead := c.leader()
	jp := bus.DemandEvent{App: "live", Name: "a", Vertex: "JP", Nearest: 10, N: 200}
	c.demandUntil("relay-as ready", jp, func() bool { return c.placedAt("live", "a", "relay-as") })
	c.mu.Lock()
	c.viewers["relay-as"] = 40
	c.mu.Unlock()
	time.Sleep(500 * time.Millisecond) // a status with the viewers, read by the leader
	c.mu.Lock()
	c.silent["relay-as"] = true
	c.mu.Unlock()
	waitFor(t, "relay-as marked down and unplaced", func() bool {
		_, err := c.b.Placements.Get(c.ctx, bus.StreamKey("live", "a"))
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
	// Its viewers come back through the redirector meanwhile.
	c.publish(bus.DemandSubject, bus.Demand{Events: []bus.DemandEvent{{App: "live", Name: "a", Vertex: "JP", Nearest: 18, N: 2}}})
	time.Sleep(200 * time.Millisecond)
	c.mu.Lock()
	c.silent["relay-as"] = false
	c.mu.Unlock()
	waitFor(t, "relay-as opened again", func() bool { return count(c.ops("relay-as"), bus.OpOpen) == 2 })
	waitFor(t, "relay-as placed again", func() bool { return c.placedAt("live", "a", "relay-as") })
	back := false
	for _, d := range c.orch[lead].Decisions() {
		back = back || (d.Action == "open" && d.Server == "relay-as" && strings.Contains(d.Reason, "is back"))
	}
	if !back {
		t.Fatalf("no open decision for the returning relay: %+v", c.orch[lead].Decisions())
	}
}

// TestKilledRelayIsDownAtOnce: a relay process that dies is marked down
// when its bus connection closes and its listener refuses, not after the
// status TTL (3 s here); its placement goes with it.
func TestKilledRelayIsDownAtOnce(t *testing.T) {
	c := startCluster(t, Config{Demand: demand.Config{Threshold: 5}})
	lead := c.leader()
	ln := livenesstest.Listen(t)
	agent := c.named("relay-as")
	c.mu.Lock()
	c.addrs["relay-as"] = ln.Addr().String()
	c.mu.Unlock()
	jp := bus.DemandEvent{App: "live", Name: "a", Vertex: "JP", Nearest: 10, N: 200}
	c.demandUntil("relay-as ready", jp, func() bool { return c.placedAt("live", "a", "relay-as") })
	c.mu.Lock()
	c.viewers["relay-as"] = 40
	c.mu.Unlock()
	time.Sleep(500 * time.Millisecond) // a status with the viewers and the address, read by the leader
	// The kill: the process's sockets close, its statuses stop.
	c.mu.Lock()
	c.silent["relay-as"] = true
	c.mu.Unlock()
	ln.Close()
	killed := time.Now()
	agent.Close()
	waitFor(t, "relay-as marked down and unplaced", func() bool {
		_, err := c.b.Placements.Get(c.ctx, bus.StreamKey("live", "a"))
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
	took := time.Since(killed)
	var down *Decision
	for _, d := range c.orch[lead].Decisions() {
		if d.Action == "down" && d.Server == "relay-as" {
			down = &d
		}
	}
	if down == nil || !strings.Contains(down.Reason, "process is gone") {
		t.Fatalf("relay-as down %+v after %v, want it down for its process gone (decisions %+v)", down, took, c.orch[lead].Decisions())
	}
	t.Logf("relay-as down %v after the kill: %s", took.Round(time.Millisecond), down.Reason)
}
