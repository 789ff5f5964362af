package demand

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/topology/distance"
	"github.com/relaymesh/relaymesh/topology/graph"
)

// V —1— A —3— B, P (the primary) —10— A, I isolated.
func setup(t testing.TB, cfg Config) (*Tracker, func(string) graph.VertexID) {
	t.Helper()
	var b graph.Builder
	for _, id := range []string{"V", "A", "B", "P", "I"} {
		b.AddLocation(graph.Location{ID: id})
	}
	b.AddLink(graph.Link{From: "V", To: "A", Cost: 1, Symmetric: true})
	b.AddLink(graph.Link{From: "A", To: "B", Cost: 3, Symmetric: true})
	b.AddLink(graph.Link{From: "P", To: "A", Cost: 10, Symmetric: true})
	b.AddServer(graph.Server{ID: "p", Location: "P", Role: graph.RolePrimary})
	for _, l := range []string{"A", "B", "I"} {
		b.AddServer(graph.Server{ID: "r" + l, Location: l})
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	tr := New(cfg, g, distance.Build(g, distance.ServerLocations(g)))
	return tr, func(id string) graph.VertexID { v, _ := g.Vertex(id); return v }
}

var inf = distance.Inf

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestAccumulationAndDecay(t *testing.T) {
	tr, v := setup(t, Config{K: 1, Threshold: 100, HalfLife: 10 * time.Second, Floor: 1})
	t0 := time.Unix(1000, 0)
	tr.Observe(t0, 0, v("V"), inf, nil)
	for loc, want := range map[string]float64{"A": 1, "B": 0.25, "I": 0, "P": 0} {
		if got := tr.Bonus(t0, 0, v(loc)); !near(got, want) {
			t.Errorf("after one request: bonus at %s = %v, want %v", loc, got, want)
		}
	}
	t1 := t0.Add(10 * time.Second) // one half-life
	if got := tr.Bonus(t1, 0, v("A")); !near(got, 0.5) {
		t.Errorf("decayed bonus at A = %v, want 0.5", got)
	}
	tr.Observe(t1, 0, v("V"), inf, nil)
	if got := tr.Bonus(t1, 0, v("A")); !near(got, 1.5) {
		t.Errorf("bonus at A = %v, want 0.5 + 1", got)
	}
	if got := tr.Bonus(t1, 0, v("B")); !near(got, 0.375) {
		t.Errorf("bonus at B = %v, want 0.125 + 0.25", got)
	}
	if got := tr.Bonus(t1.Add(20*time.Second), 0, v("B")); !near(got, 0.375/4) {
		t.Errorf("two half-lives later: %v", got)
	}
	// Floor: a viewer at A itself adds K/Floor = 1, and 1/3 at B.
	tr.Observe(t0, 1, v("A"), inf, nil)
	if a, b := tr.Bonus(t0, 1, v("A")), tr.Bonus(t0, 1, v("B")); !near(a, 1) || !near(b, 1.0/3) {
		t.Errorf("floor: A %v B %v", a, b)
	}
}

func TestThresholdCrossing(t *testing.T) {
	tr, v := setup(t, Config{K: 1, Threshold: 10, HalfLife: time.Hour, Floor: 1})
	t0 := time.Unix(1000, 0)
	var ds []Decision
	for i := range 9 {
		if ds = tr.Observe(t0, 2, v("V"), inf, ds[:0]); len(ds) != 0 {
			t.Fatalf("request %d: early decision %v", i+1, ds)
		}
	}
	ds = tr.Observe(t0, 2, v("V"), inf, ds[:0])
	if len(ds) != 1 || ds[0].Location != v("A") || ds[0].Stream != 2 || !near(ds[0].Bonus, 10) {
		t.Fatalf("10th request: %+v", ds)
	}
	if ds[0].Reason == "" {
		t.Error("decision without a reason")
	}
	if got := tr.Bonus(t0, 2, v("A")); got != 0 {
		t.Errorf("bonus not reset: %v", got)
	}
	// A is now hosted: it gathers nothing; B keeps going (11 × 0.25).
	tr.Observe(t0, 2, v("V"), inf, nil)
	if a, b := tr.Bonus(t0, 2, v("A")), tr.Bonus(t0, 2, v("B")); a != 0 || !near(b, 2.75) {
		t.Errorf("after opening: A %v B %v", a, b)
	}
	// The relay failed to open: A gathers again from zero.
	tr.SetHosted(2, v("A"), false)
	tr.Observe(t0, 2, v("V"), inf, nil)
	if a := tr.Bonus(t0, 2, v("A")); !near(a, 1) {
		t.Errorf("after SetHosted(false): %v", a)
	}
}

func TestCapsAndUnreachable(t *testing.T) {
	tr, v := setup(t, Config{K: 1, Threshold: 1, Caps: map[string]int{"A": 1}})
	t0 := time.Unix(1000, 0)
	tr.SetHosted(3, v("A"), true) // A's one slot is taken by stream 3
	ds := tr.Observe(t0, 4, v("V"), inf, nil)
	for _, d := range ds {
		if d.Location == v("A") || d.Location == v("I") || d.Location == v("P") {
			t.Fatalf("decision at a capped, unreachable or primary location: %v", d)
		}
	}
	if got := tr.Bonus(t0, 4, v("A")); got != 0 {
		t.Errorf("capped location gathered %v", got)
	}
	tr.Forget(3)
	if ds := tr.Observe(t0, 4, v("V"), inf, nil); len(ds) != 1 || ds[0].Location != v("A") {
		t.Fatalf("after Forget: %v", ds)
	}
}

// Property: no decision is ever made for a location unreachable from the
// requesting viewer.
func TestNoDecisionAtInfiniteDistance(t *testing.T) {
	tr, v := setup(t, Config{K: 1, Threshold: 0.01})
	t0 := time.Unix(1000, 0)
	for s := range 50 {
		for _, from := range []string{"V", "A", "B", "P"} {
			for _, d := range tr.Observe(t0, s, v(from), inf, nil) {
				if d.Location == v("I") {
					t.Fatalf("opened at unreachable I: %v", d)
				}
			}
		}
	}
	// From I itself only I is reachable.
	ds := tr.Observe(t0, 99, v("I"), inf, nil)
	if len(ds) != 1 || ds[0].Location != v("I") {
		t.Fatalf("from I: %v", ds)
	}
}

func BenchmarkObserve(b *testing.B) {
	g, err := graph.World()
	if err != nil {
		b.Fatal(err)
	}
	servers := []graph.Server{{ID: "p", Location: "eu", Role: graph.RolePrimary}}
	for i := range 50 {
		servers = append(servers, graph.Server{ID: fmt.Sprint("r", i), Location: g.Location(graph.VertexID(6 + i*4)).ID})
	}
	g, _ = g.WithServers(servers...)
	tr := New(Config{Threshold: 1e12}, g, distance.Build(g, distance.ServerLocations(g)))
	now := time.Unix(0, 0)
	n := graph.VertexID(g.NumVertices())
	var ds []Decision
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ds = tr.Observe(now.Add(time.Duration(i)*time.Millisecond), i%8, graph.VertexID(i)%n, inf, ds[:0])
		i++
	}
}

func TestObserveN(t *testing.T) {
	tr, v := setup(t, Config{K: 2, Threshold: 1000})
	t0 := time.Unix(1000, 0)
	tr.ObserveN(t0, 0, v("V"), 10, inf, nil)
	if a, b := tr.Bonus(t0, 0, v("A")), tr.Bonus(t0, 0, v("B")); !near(a, 20) || !near(b, 5) {
		t.Fatalf("A %v B %v, want 10·2/1 and 10·2/4", a, b)
	}
	if ds := tr.ObserveN(t0, 0, v("V"), -1, inf, nil); len(ds) != 0 || !near(tr.Bonus(t0, 0, v("A")), 20) {
		t.Fatal("negative batch counted")
	}
}

// Locations not nearer than the viewer's own server gather nothing.
func TestServedDistance(t *testing.T) {
	tr, v := setup(t, Config{K: 1, Threshold: 100})
	t0 := time.Unix(1000, 0)
	tr.Observe(t0, 0, v("V"), 4, nil) // served at distance 4: A (1) gains, B (4) does not
	if a, b := tr.Bonus(t0, 0, v("A")), tr.Bonus(t0, 0, v("B")); !near(a, 1) || b != 0 {
		t.Fatalf("A %v B %v", a, b)
	}
	tr.Observe(t0, 0, v("V"), 1, nil) // served at A itself: nothing nearer
	if a := tr.Bonus(t0, 0, v("A")); !near(a, 1) {
		t.Fatalf("A %v", a)
	}
}

// TestSaveAndRestore: what Each reports, restored into a new tracker, gives
// the same bonuses, decaying from the time they were saved; hosted and
// non-candidate locations are left out.
func TestSaveAndRestore(t *testing.T) {
	cfg := Config{K: 1, Threshold: 100, HalfLife: 10 * time.Second, Floor: 1}
	tr, v := setup(t, cfg)
	t0 := time.Unix(1000, 0)
	tr.ObserveN(t0, 3, v("V"), 8, inf, nil) // A 8, B 2
	tr.SetHosted(3, v("B"), true)
	t1 := t0.Add(10 * time.Second)
	type saved struct {
		v     graph.VertexID
		value float64
		at    time.Time
	}
	var cells []saved
	tr.Each(t1, 3, 0.01, func(v graph.VertexID, value float64, at time.Time) { cells = append(cells, saved{v, value, at}) })
	if len(cells) != 1 || cells[0].v != v("A") || !near(cells[0].value, 8) || !cells[0].at.Equal(t0) {
		t.Fatalf("saved %+v, want A: 8 at t0 only (B is hosted)", cells)
	}
	tr.Each(t1, 3, 5, func(graph.VertexID, float64, time.Time) { t.Error("a cell under min reported") })

	next, _ := setup(t, cfg)
	for _, c := range cells {
		next.Restore(3, c.v, c.value, c.at)
	}
	next.Restore(3, v("P"), 50, t0) // the primary's location gathers nothing
	next.Restore(3, v("B"), -1, t0)
	if got := next.Bonus(t1, 3, v("A")); !near(got, 4) {
		t.Errorf("restored bonus at A one half-life later = %v, want 4", got)
	}
	if got := next.Bonus(t1, 3, v("P")) + next.Bonus(t1, 3, v("B")); got != 0 {
		t.Errorf("restored %v where nothing gathers", got)
	}
	// New demand adds to the restored bonus; an older save adds decayed.
	next.Observe(t1, 3, v("V"), inf, nil)
	next.Restore(3, v("A"), 2, t0)
	if got := next.Bonus(t1, 3, v("A")); !near(got, 4+1+1) {
		t.Errorf("bonus at A = %v, want 4 + 1 + 2/2", got)
	}
}
