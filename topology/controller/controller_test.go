package controller

import (
	"math"
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

// pressureWorld is a world of the primary "p" (eu, 1,000 viewers) and the
// relays ids of 10 viewers each, at the location their id starts with
// ("in-1" at IN), and a controller of it with the stream live/a.
func pressureWorld(t testing.TB, ids ...string) (*graph.Graph, *Controller, int) {
	t.Helper()
	servers := []graph.Server{{ID: "p", Location: "eu", Role: graph.RolePrimary, CapacityViewers: 1000}}
	for _, id := range ids {
		loc, _, _ := strings.Cut(id, "-")
		servers = append(servers, graph.Server{ID: id, Location: strings.ToUpper(loc), CapacityViewers: 10})
	}
	g, err := graph.World(servers...)
	if err != nil {
		t.Fatal(err)
	}
	c := New(Config{}, g)
	id, _ := c.Stream("live/a")
	return g, c, id
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

// servingInJapan is a controller (status TTL ttl) with relay-as serving
// 40 viewers of live/a from Japan at t0; it returns Japan and relay-as.
func servingInJapan(t *testing.T, ttl time.Duration) (*Controller, graph.VertexID, int) {
	c, g := dev(t, Config{Demand: demand.Config{Threshold: 5}, StatusTTL: ttl})
	jp, as := vertex(t, g, "JP"), server(t, g, "relay-as")
	c.Apply(Event{Time: t0, Kind: EvDemand, Stream: "live/a", Vertex: jp, N: 200, Nearest: -1}, nil)
	c.Apply(Event{Time: t0, Kind: EvReady, Stream: "live/a", Server: as}, nil)
	c.Apply(Event{Time: t0, Kind: EvStatus, Server: as, Loads: []Load{{Stream: "live/a", Viewers: 40}}}, nil)
	return c, jp, as
}

// A relay that dies while serving viewers, and comes back while the
// stream still has demand, is placed again for that stream.
func TestRelayBackIsPlacedAgain(t *testing.T) {
	c, jp, as := servingInJapan(t, 3*time.Second)
	now := t0
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

// A relay whose process is known to be gone (EvGone) is down at once, not
// after StatusTTL, and is back with its next status; the primary, a server
// already down and an unknown index are left alone.
func TestGoneRelayIsDownAtOnce(t *testing.T) {
	c, jp, as := servingInJapan(t, 10*time.Second)
	g := c.g
	now := t0
	now = now.Add(time.Second)
	d := only(t, c.Apply(Event{Time: now, Kind: EvGone, Server: as, Why: "its process is gone"}, nil), Down)
	if d.Server != as || d.Reason != "its process is gone" || len(c.Relays(0)) != 0 || !c.IsDown(as) {
		t.Fatalf("down %+v, relays %+v", d, c.Relays(0))
	}
	for _, srv := range []int{as, g.Primary(), -1, len(g.Servers())} {
		if ds := c.Apply(Event{Time: now, Kind: EvGone, Server: srv}, nil); len(ds) != 0 {
			t.Errorf("gone %d: %v", srv, ds)
		}
	}
	if ds := c.Apply(Event{Time: now.Add(20 * time.Second), Kind: EvTick}, nil); len(ds) != 0 {
		t.Errorf("tick after gone: %v", ds)
	}
	c.Apply(Event{Time: now.Add(time.Second), Kind: EvDemand, Stream: "live/a", Vertex: jp, N: 2, Nearest: 10}, nil)
	d = only(t, c.Apply(Event{Time: now.Add(30 * time.Second), Kind: EvStatus, Server: as}, nil), Open)
	if d.Server != as || c.IsDown(as) {
		t.Fatalf("back: %+v", d)
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
// its requests build pressure there, and at half a relay's worth a relay
// opens at that location from its own pool — not where the region's
// other relays are.
func TestPressureOpensWhereTheUnservedAre(t *testing.T) {
	g, c, id := pressureWorld(t, "jp-1", "jp-2", "in-1", "in-2")
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
	// IN full: four requests are not yet half a relay's worth (0.5 ×
	// 0.95 × 10), the fifth is.
	status(10)
	if ds := c.Apply(Event{Time: t0, Kind: EvDemand, Stream: "live/a", Vertex: vin, N: 4, Nearest: 0}, nil); len(ds) != 0 {
		t.Fatalf("below half a relay's worth: %v", ds)
	}
	d := only(t, c.Apply(Event{Time: t0, Kind: EvDemand, Stream: "live/a", Vertex: vin, N: 1, Nearest: 0}, nil), Open)
	if d.Server != server(t, g, "in-2") || !strings.Contains(d.Reason, "served farther away") {
		t.Fatalf("open %+v", d)
	}
	// The starting relay counts as capacity at IN: the requests its room
	// takes before the next status open nothing.
	if ds := c.Apply(Event{Time: t0, Kind: EvDemand, Stream: "live/a", Vertex: vin, N: 8, Nearest: 0}, nil); len(ds) != 0 {
		t.Fatalf("while in-2 starts: %v", ds)
	}
}

// Requests taken as served at a location since its relays' last report
// count against its room: a crowd that fills a starting relay before it
// reports builds pressure for the next one, rather than waiting for the
// status to show the relay full.
func TestPressureCountsRequestsSinceTheLastReport(t *testing.T) {
	g, c, id := pressureWorld(t, "in-1", "in-2", "in-3")
	in1 := server(t, g, "in-1")
	if !c.Adopt(t0, in1, id, g.Primary(), Serving, t0) {
		t.Fatal("adopt")
	}
	vin := vertex(t, g, "IN")
	c.Status(t0, in1, []Load{{Stream: "live/a", Viewers: 2}}, nil)
	c.Status(t0, g.Primary(), nil, nil)
	c.Tick(t0, nil)
	demand := func(n float64) []Decision {
		return c.Apply(Event{Time: t0, Kind: EvDemand, Stream: "live/a", Vertex: vin, N: n, Nearest: 0}, nil)
	}
	// 2 viewers reported; 7 requests fit below 0.95 × 10 and are taken as
	// served there.
	if ds := demand(7); len(ds) != 0 {
		t.Fatalf("with room: %v", ds)
	}
	// 2 + 7 = 9 ≥ 9.5 is false: one more still fits; then the location is
	// full and five more requests (half a relay's worth) open the next.
	if ds := demand(1); len(ds) != 0 {
		t.Fatalf("last room: %v", ds)
	}
	var opened []Decision
	for range 5 {
		opened = append(opened, demand(1)...)
	}
	if len(opened) != 1 || opened[0].Action != Open || !strings.Contains(opened[0].Reason, "since their last report") {
		t.Fatalf("opened %v", opened)
	}
	// A tick forgets the requests counted: the next report has them.
	c.Status(t0.Add(2*time.Second), in1, []Load{{Stream: "live/a", Viewers: 3}}, nil)
	c.Status(t0.Add(2*time.Second), g.Primary(), nil, nil)
	c.Tick(t0.Add(2*time.Second), nil)
	if ds := demand(5); len(ds) != 0 {
		t.Fatalf("after the report: %v", ds)
	}
}

// A location whose servers are all down does not stop the search for the
// location that should serve a crowd: its requests build pressure at the
// next nearest one that hosts the stream.
func TestPressureSkipsALocationThatIsDown(t *testing.T) {
	g, c, id := pressureWorld(t, "in-1", "in-2", "jp-1", "jp-2")
	in1, in2, jp1 := server(t, g, "in-1"), server(t, g, "in-2"), server(t, g, "jp-1")
	for _, srv := range []int{in1, jp1} {
		if !c.Adopt(t0, srv, id, g.Primary(), Serving, t0) {
			t.Fatal("adopt")
		}
	}
	c.Status(t0, in1, []Load{{Stream: "live/a", Viewers: 10}}, nil)
	c.Status(t0, in2, nil, nil)
	// IN goes silent; JP is nearly full (9 of 10: below the scaler's high
	// watermark, so the region opens nothing itself).
	later := t0.Add(11 * time.Second)
	c.Status(later, jp1, []Load{{Stream: "live/a", Viewers: 9}}, nil)
	c.Status(later, server(t, g, "jp-2"), nil, nil)
	c.Status(later, g.Primary(), nil, nil)
	downs := 0
	for _, d := range c.Tick(later, nil) {
		if d.Action == Down {
			downs++
		}
	}
	if downs != 2 {
		t.Fatalf("%d servers down, want IN's 2", downs)
	}
	// One request fills JP; five more (half a relay's worth) open jp-2.
	var opened []Decision
	for range 6 {
		opened = append(opened, c.Apply(Event{Time: later, Kind: EvDemand, Stream: "live/a", Vertex: vertex(t, g, "IN"), N: 1, Nearest: 0}, nil)...)
	}
	if len(opened) != 1 || opened[0].Server != server(t, g, "jp-2") || !strings.Contains(opened[0].Reason, "around JP") {
		t.Fatalf("opened %v", opened)
	}
}

// A server's status is overdue once it is its usual interval old: every 2 s
// measured, so due at 2 s after the last, overdue from then on; the first
// status has no interval yet, and the gap while a server was down is not
// one.
func TestStatusOverdue(t *testing.T) {
	c, g := dev(t, Config{})
	srv := server(t, g, g.Servers()[1].ID)
	sec := func(x float64) time.Time { return t0.Add(time.Duration(x * float64(time.Second))) }
	c.Status(sec(0), srv, nil, nil)
	if c.overdue(sec(5), srv) {
		t.Fatal("overdue with one status (no interval known)")
	}
	c.Status(sec(2), srv, nil, nil)
	c.Status(sec(4), srv, nil, nil)
	if c.overdue(sec(5.9), srv) {
		t.Fatal("overdue before its interval")
	}
	if !c.overdue(sec(6), srv) {
		t.Fatal("not overdue a whole interval after its last status")
	}
	c.down[srv] = true // back after a long silence: the gap is no interval
	c.Status(sec(100), srv, nil, nil)
	if c.period[srv] != 2 {
		t.Fatalf("interval %v s after the server came back, want 2", c.period[srv])
	}
}

// Statuses that come with jitter (every 250 ms, give or take 40 ms, as a
// loaded relay sends them) are not overdue when one is a little later
// than its interval, and are once one is missing.
func TestStatusOverdueWithJitter(t *testing.T) {
	c, g := dev(t, Config{})
	srv := server(t, g, g.Servers()[1].ID)
	at := 0.0
	for i := range 40 {
		at += 0.25 + []float64{0.04, -0.04, 0.02, -0.02}[i%4]
		c.Status(t0.Add(time.Duration(at*float64(time.Second))), srv, nil, nil)
	}
	late := func(s float64) time.Time { return t0.Add(time.Duration((at + s) * float64(time.Second))) }
	if c.overdue(late(0.29), srv) {
		t.Errorf("overdue 40 ms after it was due (interval %.3f s, jitter %.3f s)", c.period[srv], c.jitter[srv])
	}
	if !c.overdue(late(0.5), srv) {
		t.Errorf("not overdue with a status missing (interval %.3f s, jitter %.3f s)", c.period[srv], c.jitter[srv])
	}
}

// After an outage of a location's servers, as many of them are placed again
// as the viewers they carried need: two relays that carried 30 viewers each
// come back as one (capacity 100), two that carried 60 each as two.
func TestServersBackPlacedAsTheirViewersNeed(t *testing.T) {
	var b graph.Builder
	b.AddLocation(graph.Location{ID: "eu"})
	b.AddLocation(graph.Location{ID: "as"})
	b.AddLink(graph.Link{From: "eu", To: "as", Cost: 10, Symmetric: true})
	b.AddServer(graph.Server{ID: "p", Location: "eu", Role: graph.RolePrimary, CapacityViewers: 1000})
	b.AddServer(graph.Server{ID: "as0", Location: "as", CapacityViewers: 100})
	b.AddServer(graph.Server{ID: "as1", Location: "as", CapacityViewers: 100})
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, each := range []float64{30, 60} {
		c := New(Config{StatusTTL: 3 * time.Second}, g)
		id, _ := c.Stream("live/a")
		as0, as1, as := server(t, g, "as0"), server(t, g, "as1"), vertex(t, g, "as")
		now := t0
		for _, srv := range []int{as0, as1} {
			if !c.Adopt(now, srv, id, g.Primary(), Serving, now) {
				t.Fatal("adopt")
			}
			c.Status(now, srv, []Load{{Stream: "live/a", Viewers: each}}, nil)
		}
		c.Tick(now, nil)
		now = now.Add(5 * time.Second)
		if ds := c.Tick(now, nil); len(ds) != 2 || ds[0].Action != Down || ds[1].Action != Down {
			t.Fatalf("down: %v", ds)
		}
		c.Demand(now, id, as, 1, 10, nil) // the stream is still watched
		now = now.Add(10 * time.Second)
		var opens []Decision
		for _, srv := range []int{as0, as1} {
			opens = append(opens, c.Status(now, srv, nil, nil)...)
		}
		want := 1
		if each == 60 {
			want = 2
		}
		if len(opens) != want || opens[0].Server != as0 {
			t.Fatalf("%v viewers each: opens %v, want %d", each, opens, want)
		}
	}
}

// Requests turned away (no server could take them) build no pressure: the
// viewers wait and ask again, every retry one more request, and the scaler
// counts them as waiting in their region instead. The same requests
// served farther away open a relay.
func TestTurnedAwayRequestsAreNoPressure(t *testing.T) {
	for _, full := range []bool{true, false} {
		g, c, id := pressureWorld(t, "in-1", "in-2")
		in1 := server(t, g, "in-1")
		if !c.Adopt(t0, in1, id, g.Primary(), Serving, t0) {
			t.Fatal("adopt")
		}
		c.Status(t0, in1, []Load{{Stream: "live/a", Viewers: 9}}, nil) // below 0.95 × 10
		c.Status(t0, g.Primary(), nil, nil)
		if ds := c.Tick(t0, nil); len(ds) != 0 {
			t.Fatalf("tick: %v", ds)
		}
		var ds []Decision
		for i := range 10 { // two viewers, asking again every second
			e := Event{Time: t0.Add(time.Duration(i) * time.Second), Kind: EvDemand, Stream: "live/a", Vertex: vertex(t, g, "IN"), N: 2, Nearest: 0}
			if full {
				e.Full = 2
			}
			ds = c.Apply(e, ds)
		}
		if full != (len(ds) == 0) {
			t.Errorf("turned away %v: decisions %v", full, ds)
		}
	}
}

// The requests that find a server go to the scaler by the viewers'
// location: every request comes from DE, whose relay is nearly full, while the
// relay in the US fills with DE's viewers (guests) at 1 viewer/s. The
// growth is eu's; na provisions none for the guests and opens nothing.
func TestGuestsOpenNothingInTheirHostsRegion(t *testing.T) {
	g, c, id := pressureWorld(t, "de-1", "de-2", "de-3", "us-1", "us-2", "us-3")
	de, us := server(t, g, "de-1"), server(t, g, "us-1")
	for _, srv := range []int{de, us} {
		if !c.Adopt(t0, srv, id, -1, Serving, t0) {
			t.Fatalf("adopt %d", srv)
		}
	}
	vDE := vertex(t, g, "DE")
	sec := func(x float64) time.Time { return t0.Add(time.Duration(x * float64(time.Second))) }
	var ds []Decision
	for i := range 4 {
		now := sec(float64(2*i + 2))
		ds = c.Demand(now, id, vDE, 2, 10, ds)
		ds = c.Status(now, g.Primary(), nil, ds)
		ds = c.Status(now, de, []Load{{Stream: "live/a", Viewers: 9}}, ds)
		ds = c.Status(now, us, []Load{{Stream: "live/a", Viewers: float64(3 + 2*i)}}, ds)
		ds = c.Tick(now, ds)
	}
	inEU := 0
	for _, d := range ds {
		if d.Action != Open {
			continue
		}
		switch g.Location(g.Region(d.Location)).ID {
		case "na":
			t.Errorf("opened in na for DE's viewers on its relay: %v", d)
		case "eu":
			inEU++
		}
	}
	if inEU == 0 {
		t.Errorf("no relay opened in eu for DE's growth: %v", ds)
	}
}

// foldStartup keeps the last startupWindow start-up times and gives their
// mean, half their mean absolute difference and the longest.
func TestFoldStartup(t *testing.T) {
	c, _ := dev(t, Config{})
	var mean, spread, longest time.Duration
	for _, x := range []float64{5, 20, 10, 15} {
		mean, spread, longest = c.foldStartup(x)
	}
	near := func(what string, got time.Duration, want float64) {
		t.Helper()
		if math.Abs(got.Seconds()-want) > 1e-6 {
			t.Errorf("%s %v, want %gs", what, got, want)
		}
	}
	near("mean", mean, 12.5)
	near("spread", spread, 50.0/6/2) // pairs differ by 5, 10, 15, 5, 10, 5
	near("longest", longest, 20)
	for range startupWindow {
		mean, spread, longest = c.foldStartup(7)
	}
	near("mean after the window", mean, 7)
	near("spread after the window", spread, 0)
	near("longest after the window", longest, 7)
}
