package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/topology/demand"
	"github.com/relaymesh/relaymesh/topology/graph"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func dev(t testing.TB, cfg Config) (*Controller, *graph.Graph) {
	t.Helper()
	g, err := graph.DevWorld()
	if err != nil {
		t.Fatal(err)
	}
	return New(cfg, g), g
}

func server(t testing.TB, g *graph.Graph, id string) int {
	t.Helper()
	for i, s := range g.Servers() {
		if s.ID == id {
			return i
		}
	}
	t.Fatalf("no server %s", id)
	return -1
}

func vertex(t testing.TB, g *graph.Graph, id string) graph.VertexID {
	t.Helper()
	v, ok := g.Vertex(id)
	if !ok {
		t.Fatalf("no location %s", id)
	}
	return v
}

func only(t *testing.T, ds []Decision, a Action) Decision {
	t.Helper()
	if len(ds) != 1 || ds[0].Action != a {
		t.Fatalf("decisions %v, want one %v", ds, a)
	}
	return ds[0]
}

// Demand from Japan opens the stream at the Asian hub, pulling from the
// primary; the relay serves once ready.
func TestDemandOpensThenReady(t *testing.T) {
	c, g := dev(t, Config{Demand: demand.Config{Threshold: 5}})
	jp, as := vertex(t, g, "JP"), server(t, g, "relay-as")
	ds := c.Apply(Event{Time: t0, Kind: EvDemand, Stream: "live/a", Vertex: jp, N: 200, Nearest: -1}, nil)
	d := only(t, ds, Open)
	if d.Server != as || d.Parent != g.Primary() || !strings.Contains(d.Reason, "demand bonus") {
		t.Fatalf("open %+v", d)
	}
	d = only(t, c.Apply(Event{Time: t0.Add(time.Second), Kind: EvReady, Stream: "live/a", Server: as}, nil), Ready)
	if rs := c.Relays(0); len(rs) != 1 || rs[0].State != Serving {
		t.Fatalf("relays %+v", rs)
	}
}

// A relay that is starting counts as a carrier for the demand rule: more
// demand from Japan while relay-as starts opens nothing farther away.
func TestStartingRelayIsACarrier(t *testing.T) {
	c, g := dev(t, Config{Demand: demand.Config{Threshold: 5}})
	jp := vertex(t, g, "JP")
	only(t, c.Apply(Event{Time: t0, Kind: EvDemand, Stream: "live/a", Vertex: jp, N: 200, Nearest: -1}, nil), Open)
	// The redirector still sends Japan to the primary (nearest: eu).
	if ds := c.Apply(Event{Time: t0.Add(time.Second), Kind: EvDemand, Stream: "live/a", Vertex: jp, N: 5000, Nearest: -1}, nil); len(ds) != 0 {
		t.Fatalf("demand during start-up opened %v", ds)
	}
}

// A relay that dies while serving viewers, and comes back while the
// stream still has demand, is placed again for that stream.
func TestRelayBackIsPlacedAgain(t *testing.T) {
	c, g := dev(t, Config{Demand: demand.Config{Threshold: 5}, StatusTTL: 3 * time.Second})
	jp, as := vertex(t, g, "JP"), server(t, g, "relay-as")
	now := t0
	c.Apply(Event{Time: now, Kind: EvDemand, Stream: "live/a", Vertex: jp, N: 200, Nearest: -1}, nil)
	c.Apply(Event{Time: now, Kind: EvReady, Stream: "live/a", Server: as}, nil)
	c.Apply(Event{Time: now, Kind: EvStatus, Server: as, Loads: []Load{{Stream: "live/a", Viewers: 40}}}, nil)
	c.Apply(Event{Time: now, Kind: EvTick}, nil)
	now = now.Add(5 * time.Second) // silent for longer than the TTL
	d := only(t, c.Apply(Event{Time: now, Kind: EvTick}, nil), Down)
	if d.Server != as || len(c.Relays(0)) != 0 {
		t.Fatalf("down %+v, relays %+v", d, c.Relays(0))
	}
	// Its viewers come back through the redirector (to the primary now).
	c.Apply(Event{Time: now.Add(time.Second), Kind: EvDemand, Stream: "live/a", Vertex: jp, N: 2, Nearest: 10}, nil)
	now = now.Add(10 * time.Second)
	d = only(t, c.Apply(Event{Time: now, Kind: EvStatus, Server: as}, nil), Open)
	if d.Server != as || !strings.Contains(d.Reason, "is back") {
		t.Fatalf("open %+v", d)
	}

	// Without demand since, a server that comes back is not placed again.
	c.Apply(Event{Time: now, Kind: EvReady, Stream: "live/a", Server: as}, nil)
	c.Apply(Event{Time: now, Kind: EvStatus, Server: as, Loads: []Load{{Stream: "live/a", Viewers: 40}}}, nil)
	now = now.Add(5 * time.Second)
	only(t, c.Apply(Event{Time: now, Kind: EvTick}, nil), Down)
	now = now.Add(10 * time.Minute)
	if ds := c.Apply(Event{Time: now, Kind: EvStatus, Server: as}, nil); len(ds) != 0 {
		t.Fatalf("back without demand: %v", ds)
	}
}

// An unpublished stream's relays close after the grace unless it is
// published again.
func TestEndGrace(t *testing.T) {
	c, g := dev(t, Config{Demand: demand.Config{Threshold: 5}, EndGrace: 10 * time.Second})
	jp, as := vertex(t, g, "JP"), server(t, g, "relay-as")
	c.Apply(Event{Time: t0, Kind: EvDemand, Stream: "live/a", Vertex: jp, N: 200, Nearest: -1}, nil)
	c.Apply(Event{Time: t0, Kind: EvStatus, Server: as}, nil)
	c.Apply(Event{Time: t0, Kind: EvUnpublish, Stream: "live/a"}, nil)
	if ds := c.Apply(Event{Time: t0.Add(5 * time.Second), Kind: EvTick}, nil); len(ds) != 0 {
		t.Fatalf("before the grace: %v", ds)
	}
	c.Apply(Event{Time: t0.Add(6 * time.Second), Kind: EvStatus, Server: as}, nil)
	ds := c.Apply(Event{Time: t0.Add(11 * time.Second), Kind: EvTick}, nil)
	if len(ds) != 2 || ds[0].Action != Close || ds[0].Server != as || ds[1].Action != Forget {
		t.Fatalf("after the grace: %v", ds)
	}
}

// A crowd whose own location is hosted but full is served from elsewhere;
// its requests build pressure there, and at one relay's worth a relay
// opens at that location from its own pool — not where the region's
// other relays are.
func TestPressureOpensWhereTheUnservedAre(t *testing.T) {
	g, err := graph.World(
		graph.Server{ID: "p", Location: "eu", Role: graph.RolePrimary, CapacityViewers: 1000},
		graph.Server{ID: "jp-1", Location: "JP", CapacityViewers: 10},
		graph.Server{ID: "jp-2", Location: "JP", CapacityViewers: 10},
		graph.Server{ID: "in-1", Location: "IN", CapacityViewers: 10},
		graph.Server{ID: "in-2", Location: "IN", CapacityViewers: 10})
	if err != nil {
		t.Fatal(err)
	}
	c := New(Config{}, g)
	id, _ := c.Stream("live/a")
	in1, jp1 := server(t, g, "in-1"), server(t, g, "jp-1")
	for _, srv := range []int{in1, jp1} {
		if !c.Adopt(t0, srv, id, g.Primary(), Serving, t0) {
			t.Fatal("adopt")
		}
	}
	vin := vertex(t, g, "IN")
	status := func(inViewers float64) {
		c.Status(t0, in1, []Load{{Stream: "live/a", Viewers: inViewers}}, nil)
		c.Status(t0, jp1, []Load{{Stream: "live/a", Viewers: 2}}, nil)
		c.Status(t0, g.Primary(), nil, nil)
		c.Tick(t0, nil)
	}
	// Room at IN: its requests were served there, no pressure.
	status(3)
	if ds := c.Apply(Event{Time: t0, Kind: EvDemand, Stream: "live/a", Vertex: vin, N: 20, Nearest: 0}, nil); len(ds) != 0 {
		t.Fatalf("with room: %v", ds)
	}
	// IN full: seven requests are not yet a relay's worth (0.8 × 10), the
	// eighth is.
	status(10)
	if ds := c.Apply(Event{Time: t0, Kind: EvDemand, Stream: "live/a", Vertex: vin, N: 7, Nearest: 0}, nil); len(ds) != 0 {
		t.Fatalf("below a relay's worth: %v", ds)
	}
	d := only(t, c.Apply(Event{Time: t0, Kind: EvDemand, Stream: "live/a", Vertex: vin, N: 1, Nearest: 0}, nil), Open)
	if d.Server != server(t, g, "in-2") || !strings.Contains(d.Reason, "served farther away") {
		t.Fatalf("open %+v", d)
	}
	// The starting relay counts as capacity at IN: more requests before
	// the next status open nothing.
	if ds := c.Apply(Event{Time: t0, Kind: EvDemand, Stream: "live/a", Vertex: vin, N: 50, Nearest: 0}, nil); len(ds) != 0 {
		t.Fatalf("while in-2 starts: %v", ds)
	}
}
