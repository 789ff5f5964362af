package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/controller"
	"github.com/relaymesh/relaymesh/topology/orchestrator"
	"github.com/relaymesh/relaymesh/topology/placement"
)

// oneController is the scenario of TestOrchestratorDecidesAsSimulator:
// small relays in Asia and North America, so that a few hundred viewers
// need demand openings and scaling.
const oneController = `
name: one-controller
duration: 1m
primary: {location: eu, capacity_viewers: 100}
pools:
  - {locations: [as, na], servers: 4, capacity_viewers: 40}
streams: [{id: live/final}]
audience: [{stream: live/final, location: JP, curve: [{at: 0s, viewers: 1}]}]
demand: {threshold: 20}
scaling: {horizon: 2s, window: 4, hold: 1s, min_lifetime: 2s, drain_timeout: 2s}
status_ttl: 3s
`

// TestOrchestratorDecidesAsSimulator drives the real orchestrator over the
// embedded bus with a scripted audience (300 viewers from Japan and the
// United States placed by a placement.Mesh as the redirector would, demand
// events on the bus, relays acknowledging commands and reporting the
// viewers they hold) and checks that every decision it took equals the
// simulator's controller's for the same events: the orchestrator's journal
// replayed through Replay, which configures the controller from the
// scenario exactly as Run does.
func TestOrchestratorDecidesAsSimulator(t *testing.T) {
	sc, err := ParseScenario("one-controller", []byte(oneController), "")
	if err != nil {
		t.Fatal(err)
	}
	g := sc.GraphWithServers()
	cc := ControllerConfig(sc)

	e, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	connect := func() *bus.Conn {
		c, err := bus.Connect(bus.Options{InProcess: e.Server()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bcfg := bus.BucketConfig{StatusTTL: cc.StatusTTL, LeaseTTL: time.Second}
	relays := connect()
	buckets, err := relays.OpenBuckets(ctx, bcfg)
	if err != nil {
		t.Fatal(err)
	}

	mesh := placement.New(g, placement.Config{})
	sid, err := mesh.AddStream("live/final", 0)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	held := make([]int, len(g.Servers())) // viewers per server
	opens := 0
	sub, err := relays.NC.Subscribe("relaymesh.v1.relay.*.cmd", func(m *nats.Msg) {
		cmd, err := bus.DecodeCommand(m.Data)
		id := strings.TrimSuffix(strings.TrimPrefix(m.Subject, "relaymesh.v1.relay."), ".cmd")
		if srv, ok := mesh.ServerByID(id); ok && err == nil {
			switch cmd.Op {
			case bus.OpOpen:
				mesh.Open(srv, sid)
				mu.Lock()
				opens++
				mu.Unlock()
			case bus.OpClose:
				mesh.Close(srv, sid)
			}
		}
		data, _ := bus.Encode(bus.Reply{OK: err == nil})
		_ = m.Respond(data)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	var jmu sync.Mutex
	var events []controller.Event
	var decided []controller.Decision
	o, err := orchestrator.New(orchestrator.Config{ID: "e2e", Graph: g, Demand: cc.Demand, Scaling: cc.Scaling,
		FanOut: cc.FanOut, Buckets: bcfg, Interval: 100 * time.Millisecond, EndGrace: cc.EndGrace,
		Journal: func(e controller.Event, ds []controller.Decision) {
			jmu.Lock()
			events = append(events, e)
			decided = append(decided, ds...)
			jmu.Unlock()
		}}, connect(), nil)
	if err != nil {
		t.Fatal(err)
	}
	octx, ostop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = o.Run(octx) }()
	for i := 0; !o.Leader(); i++ {
		if i > 500 {
			t.Fatal("the orchestrator did not lead within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}

	report := func() {
		mu.Lock()
		defer mu.Unlock()
		for i, s := range g.Servers() {
			st := bus.Status{ID: s.ID, Location: s.Location, Time: time.Now(), Viewers: held[i]}
			if held[i] > 0 {
				st.Streams = []bus.StreamStatus{{App: "live", Name: "final", Viewers: held[i], Live: true}}
			}
			data, _ := bus.Encode(st)
			if _, err := buckets.Relays.Put(ctx, s.ID, data); err != nil {
				t.Error(err)
			}
		}
	}
	pub := connect()
	rng := rand.New(rand.NewPCG(1, 2))
	origins := []string{"JP", "US"}
	placed := 0
	// 300 viewers, 10 every 100 ms, statuses every 200 ms, then 3 s more.
	for step := 0; step < 60; step++ {
		if step%2 == 0 {
			report()
		}
		if step < 30 {
			var d bus.Demand
			for k := range 10 {
				loc := origins[(step*10+k)%len(origins)]
				v, _ := g.Vertex(loc)
				res := mesh.Choose(v, sid, rng)
				near := float64(res.Nearest)
				full := 0
				if res.Server == placement.NoServer {
					near, full = -1, 1
				} else {
					mesh.AddViewers(res.Server, sid, 1)
					mu.Lock()
					held[res.Server]++
					mu.Unlock()
					placed++
				}
				if near > 1e30 {
					near = -1
				}
				d.Events = append(d.Events, bus.DemandEvent{App: "live", Name: "final", Vertex: loc, Nearest: near, N: 1, Full: full})
			}
			data, _ := bus.Encode(d)
			if err := pub.NC.Publish(bus.DemandSubject, data); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	ostop()
	<-done

	jmu.Lock()
	defer jmu.Unlock()
	got := describe(decided)
	want := describe(Replay(sc, events))
	if len(got) != len(want) {
		t.Errorf("orchestrator took %d decisions, the simulator's controller %d for the same %d events", len(got), len(want), len(events))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("decision %d differs:\norchestrator: %s\nsimulator:    %s", i, got[i], want[i])
		}
	}
	nOpen := 0
	for _, d := range decided {
		if d.Action == controller.Open {
			nOpen++
		}
	}
	mu.Lock()
	t.Logf("%d events, %d decisions (%d opens; relays got %d open commands), %d of 300 viewers placed", len(events), len(decided), nOpen, opens, placed)
	mu.Unlock()
	if nOpen < 2 {
		t.Fatalf("only %d relays opened: the scenario should need demand and scaling", nOpen)
	}
}

func describe(ds []controller.Decision) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%v stream %d server %d parent %d at %d: %s", d.Action, d.Stream, d.Server, d.Parent, d.Location, d.Reason)
	}
	return out
}
