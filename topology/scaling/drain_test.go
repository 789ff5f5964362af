package scaling

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/topology/graph"
)

// samplesOf reports the given viewers per server for stream 0.
func samplesOf(load map[int]float64) []Sample {
	var out []Sample
	for srv, v := range load {
		out = append(out, Sample{Server: srv, Stream: 0, Viewers: v})
	}
	return out
}

// drains runs evaluations every 2 s from `from` to `to` seconds with the
// loads load() gives and returns the drains decided.
func drains(s *Scaler, from, to float64, load func() map[int]float64) []Decision {
	var out []Decision
	for x := from; x <= to; x += 2 {
		for _, d := range s.Evaluate(at(x), samplesOf(load()), nil) {
			if d.Action == ActionDrain {
				out = append(out, d)
			}
		}
	}
	return out
}

// A group with a relay starting shows the starting relay's capacity empty:
// that is not a fall of the load, and nothing is drained until it serves.
func TestNoDrainWhileARelayStarts(t *testing.T) {
	g := testGraph(t)
	s := New(cfg(), g)
	de, _ := g.Vertex("DE")
	fr, _ := g.Vertex("FR")
	a, _ := s.OpenAt(at(0), 0, de, "demand")
	b, _ := s.OpenAt(at(0), 0, fr, "demand")
	s.Ready(a.Server, 0)
	s.Ready(b.Server, 0)
	// Old enough (30 s) and far below the low watermark: one would go...
	load := func() map[int]float64 { return map[int]float64{a.Server: 10, b.Server: 5} }
	// ...but a third relay starts at 40 s and has not served by 100 s.
	if ds := drains(s, 2, 38, load); len(ds) != 0 {
		t.Fatalf("drained before the minimum lifetime: %v", ds)
	}
	third := -1
	for i, sv := range g.Servers() {
		if sv.Location == "DE" && i != a.Server {
			third = i
			break
		}
	}
	c, ok := s.OpenOn(at(40), 0, third, "test")
	if !ok {
		t.Fatal("open")
	}
	s.cfg.Settle = time.Second // only the starting relay holds the drain back
	if ds := drains(s, 42, 100, load); len(ds) != 0 {
		t.Fatalf("drained while %d starts: %v", c.Server, ds)
	}
	s.Ready(c.Server, 0)
	if ds := drains(s, 102, 140, load); len(ds) == 0 {
		t.Fatal("never drained once every relay serves")
	}
}

// No relay is drained within Settle of the group's latest opening.
func TestNoDrainWithinSettleOfAnOpening(t *testing.T) {
	g := testGraph(t)
	c := cfg()
	c.Settle = time.Minute
	s := New(c, g)
	de, _ := g.Vertex("DE")
	a, _ := s.OpenAt(at(0), 0, de, "demand")
	s.Ready(a.Server, 0)
	var b Decision
	for i, sv := range g.Servers() {
		if sv.Location == "DE" && i != a.Server {
			b, _ = s.OpenOn(at(0), 0, i, "test")
			break
		}
	}
	s.Ready(b.Server, 0)
	// Two relays at DE, 15 viewers: one can go once the settle time has
	// passed since the openings (the minimum lifetime, 30 s, is shorter).
	load := func() map[int]float64 { return map[int]float64{a.Server: 10, b.Server: 5} }
	if ds := drains(s, 2, 58, load); len(ds) != 0 {
		t.Fatalf("drained within a minute of the opening: %v", ds)
	}
	if ds := drains(s, 60, 90, load); len(ds) == 0 {
		t.Fatal("never drained after the settle time")
	}
}

// Placement sends viewers to a reserve server only when no regular server
// can take them: a regular relay whose location has room only in reserve
// relays is not drained (its viewers would go farther), and reserve
// relays go first.
func TestDrainKeepsRegularViewersOffTheReserve(t *testing.T) {
	var b graph.Builder
	b.AddLocation(graph.Location{ID: "eu"})
	b.AddServer(graph.Server{ID: "p", Location: "eu", Role: graph.RolePrimary, CapacityViewers: 10})
	b.AddServer(graph.Server{ID: "eu0", Location: "eu", CapacityViewers: 100})
	for i := range 3 {
		b.AddServer(graph.Server{ID: fmt.Sprint("res", i), Location: "eu", Role: graph.RoleReserve, CapacityViewers: 100})
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	s := New(cfg(), g)
	var ids []int
	for i := range g.Servers() {
		if i == g.Primary() {
			continue
		}
		d, ok := s.OpenOn(at(0), 0, i, "test")
		if !ok {
			t.Fatal("open")
		}
		s.Ready(d.Server, 0)
		ids = append(ids, d.Server)
	}
	// 60 viewers on the regular relay, 5 on one reserve relay: far below
	// the low watermark over four relays.
	load := func() map[int]float64 { return map[int]float64{ids[0]: 60, ids[1]: 5, ids[2]: 0, ids[3]: 0} }
	ds := drains(s, 40, 200, load)
	if len(ds) == 0 {
		t.Fatal("nothing drained")
	}
	for _, d := range ds {
		if g.Servers()[d.Server].Role != graph.RoleReserve {
			t.Fatalf("drained the regular relay, whose viewers only the reserve could take: %v", d)
		}
	}
}

// Margin scales the predicted growth a group provisions for while that
// growth steepens; a steady ramp takes its growth as predicted.
func TestMarginProvisionsForMoreGrowth(t *testing.T) {
	g := testGraph(t)
	opened := func(margin float64, loads []float64) int {
		c := cfg()
		c.Margin = margin
		s := New(c, g)
		de, _ := g.Vertex("DE")
		d, _ := s.OpenAt(at(0), 0, de, "demand")
		s.Ready(d.Server, 0)
		n := 0
		for i, v := range loads {
			for _, o := range s.Evaluate(at(2*float64(i+1)), []Sample{{Server: d.Server, Stream: 0, Viewers: v}}, nil) {
				if o.Action == ActionOpen {
					n++
					if !strings.Contains(o.Reason, "× the growth") {
						t.Errorf("reason: %s", o.Reason)
					}
				}
			}
		}
		return n
	}
	// Steepening, 10, 30, 60: the growth predicted 4 s ahead is 50 (no
	// faster than the last two samples' 12.5/s); 60 + 1 × 50 = 110 over
	// one relay (80): one more; 60 + 3 × 50 = 210: two more.
	steep := []float64{10, 30, 60}
	if a, b := opened(1, steep), opened(3, steep); a != 1 || b != 2 {
		t.Fatalf("steepening: opened %d with margin 1, %d with margin 3; want 1 and 2", a, b)
	}
	// Steady, 10 viewers/s: 60 + 40 = 100 whatever the margin: one more.
	steady := []float64{20, 40, 60}
	if a, b := opened(1, steady), opened(3, steady); a != 1 || b != 1 {
		t.Fatalf("steady: opened %d with margin 1, %d with margin 3; want 1 and 1", a, b)
	}
}

// With distances, a region whose pools and reserve are full overflows to
// the reserve of the nearest other region first, not to any reserve.
func TestOverflowToTheNearestReserve(t *testing.T) {
	var b graph.Builder
	for _, id := range []string{"eu", "na", "as"} {
		b.AddLocation(graph.Location{ID: id})
	}
	b.AddLink(graph.Link{From: "eu", To: "na", Cost: 9, Symmetric: true})
	b.AddLink(graph.Link{From: "eu", To: "as", Cost: 3, Symmetric: true})
	b.AddServer(graph.Server{ID: "p", Location: "eu", Role: graph.RolePrimary, CapacityViewers: 10})
	b.AddServer(graph.Server{ID: "eu0", Location: "eu", CapacityViewers: 100})
	for i := range 4 {
		b.AddServer(graph.Server{ID: fmt.Sprint("na-res", i), Location: "na", Role: graph.RoleReserve, CapacityViewers: 100})
		b.AddServer(graph.Server{ID: fmt.Sprint("as-res", i), Location: "as", Role: graph.RoleReserve, CapacityViewers: 100})
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	cost := map[[2]string]float32{{"eu", "eu"}: 0, {"eu", "na"}: 9, {"eu", "as"}: 3}
	s := New(cfg(), g)
	s.SetDistance(func(from, to graph.VertexID) float32 {
		return cost[[2]string{g.Location(from).ID, g.Location(to).ID}]
	})
	eu, _ := g.Vertex("eu")
	d, _ := s.OpenAt(at(0), 0, eu, "demand")
	s.Ready(d.Server, 0)
	ds := s.Evaluate(at(2), []Sample{{Server: d.Server, Stream: 0, Viewers: 250}}, nil)
	if len(ds) == 0 {
		t.Fatal("no overflow")
	}
	for _, o := range ds {
		if sv := g.Servers()[o.Server]; sv.Location != "as" || !strings.Contains(o.Reason, "nearest reserve") {
			t.Fatalf("overflow to %s: %s", sv.ID, o.Reason)
		}
	}
}

// Settle follows a short minimum lifetime (a mesh tuned to scale in within
// seconds) and is a minute otherwise.
func TestSettleDefault(t *testing.T) {
	for _, tc := range []struct{ min, want time.Duration }{{time.Second, time.Second}, {0, time.Minute}, {10 * time.Minute, time.Minute}} {
		c := Config{MinLifetime: tc.min}
		c.defaults()
		if c.Settle != tc.want {
			t.Errorf("MinLifetime %v: Settle %v, want %v", tc.min, c.Settle, tc.want)
		}
	}
}
