package scaling

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/topology/graph"
)

// Two regions, eu (DE) and na (US), four relay servers each of 100
// viewers, the primary at eu.
func twoRegions(t testing.TB) *graph.Graph {
	t.Helper()
	var b graph.Builder
	for _, l := range []graph.Location{{ID: "eu"}, {ID: "na"}, {ID: "DE", Parent: "eu"}, {ID: "US", Parent: "na"}} {
		b.AddLocation(l)
	}
	b.AddLink(graph.Link{From: "DE", To: "eu", Cost: 1, Symmetric: true})
	b.AddLink(graph.Link{From: "US", To: "na", Cost: 1, Symmetric: true})
	b.AddLink(graph.Link{From: "eu", To: "na", Cost: 10, Symmetric: true})
	b.AddServer(graph.Server{ID: "p", Location: "eu", Role: graph.RolePrimary, CapacityViewers: 1000})
	for i := range 4 {
		b.AddServer(graph.Server{ID: fmt.Sprint("de", i), Location: "DE", CapacityViewers: 100})
		b.AddServer(graph.Server{ID: fmt.Sprint("us", i), Location: "US", CapacityViewers: 100})
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// growthRig has one ready relay of stream 0 in DE and one in US; step
// reports their loads (and the primary's) and returns the opens.
type growthRig struct {
	t      *testing.T
	s      *Scaler
	de, us int
	prim   int
}

func newGrowthRig(t *testing.T) *growthRig {
	g := twoRegions(t)
	s := New(cfg(), g)
	s.SetStreamName(0, "final")
	de, _ := g.Vertex("DE")
	us, _ := g.Vertex("US")
	d1, ok1 := s.OpenAt(at(0), 0, de, "demand")
	d2, ok2 := s.OpenAt(at(0), 0, us, "demand")
	if !ok1 || !ok2 {
		t.Fatal("OpenAt failed")
	}
	s.Ready(d1.Server, 0)
	s.Ready(d2.Server, 0)
	return &growthRig{t: t, s: s, de: d1.Server, us: d2.Server, prim: g.Primary()}
}

func (r *growthRig) step(x, de, us float64, overdueUS bool) []Decision {
	var opens []Decision
	for _, d := range r.s.Evaluate(at(x), []Sample{
		{Server: r.prim, Stream: 0, Viewers: 10},
		{Server: r.de, Stream: 0, Viewers: de},
		{Server: r.us, Stream: 0, Viewers: us, Overdue: overdueUS},
	}, nil) {
		if d.Action == ActionOpen {
			opens = append(opens, d)
		}
	}
	return opens
}

// Viewers moving from one region to another are not growth: the region
// they move to provisions for the stream's growth (here 1 viewer/s), not
// for its own load's (5 viewers/s), so its relay at 70 of 100 (below the
// high watermark 80 with 4 s of the stream's growth) gets no company. The
// same region's load rising with the stream's audience opens a relay.
func TestMovesBetweenRegionsAreNotGrowth(t *testing.T) {
	r := newGrowthRig(t)
	for i, de := range []float64{50, 60, 70} {
		us := 70 - 8*float64(i) // the stream's audience: +2 per 2 s
		if opens := r.step(float64(2*i+2), de, us, false); len(opens) > 0 {
			t.Fatalf("viewers moving in from na opened %v", opens)
		}
	}
	r = newGrowthRig(t)
	var opens []Decision
	for i, de := range []float64{50, 60, 70} {
		opens = r.step(float64(2*i+2), de, 70, false)
	}
	if len(opens) != 1 || !strings.Contains(opens[0].Reason, "region eu") {
		t.Fatalf("growth of the audience in eu: opens %v, want one in eu", opens)
	}
}

// A server whose status is overdue (it may have died, its viewers placed
// again elsewhere) leaves the stream's audience: the viewers landing in eu
// are counted once, the stream is not growing, and eu's relay at 70 (below
// the high watermark 80) gets no company for the jump taken as growth.
func TestOverdueStatusLeavesTheStreamAudience(t *testing.T) {
	for _, overdue := range []bool{false, true} {
		r := newGrowthRig(t)
		r.step(2, 50, 60, false)
		r.step(4, 50, 60, false)
		opens := r.step(6, 70, 60, overdue) // 20 of US's viewers already in eu
		switch {
		case overdue && len(opens) != 0:
			t.Errorf("overdue: opens %v, want none", opens)
		case !overdue && len(opens) != 1:
			t.Errorf("counted twice: opens %v, want the jump taken for growth (one)", opens)
		}
	}
}

// Viewers turned away (Unserved) are part of the stream's audience: while
// they grow, a region whose relays fill grows with them even though the
// viewers served, summed over the stream, stay flat.
func TestWaitingViewersAreAudience(t *testing.T) {
	for _, waiting := range []bool{false, true} {
		r := newGrowthRig(t)
		r.s.cfg.RetryAfter = 2 * time.Second // every turned-away viewer asks once per round
		var opens []Decision
		for i, de := range []float64{50, 60, 70} {
			if waiting {
				r.s.Unserved(0, 20*float64(i))
			}
			opens = r.step(float64(2*i+2), de, 70-10*float64(i), false)
		}
		if waiting != (len(opens) > 0) {
			t.Errorf("waiting %v: opens %v", waiting, opens)
		}
	}
}

// A falling load drains to its predicted level: 75 viewers on three relays
// falling by 5 per second are 55 in the horizon (4 s), which one relay
// holds half-way between the watermarks (55 of 100), and one relay holds
// the 75 of now below High (80): two drain at once, not one (ceil(75 / 55)
// would keep two).
func TestFallingLoadDrainsToItsPrediction(t *testing.T) {
	g := testGraph(t)
	c := cfg()
	c.Hold = 2 * time.Second
	s := New(c, g)
	s.SetStreamName(0, "final")
	de, _ := g.Vertex("DE")
	for range 3 {
		d, ok := s.OpenInPool(at(0), 0, de, "test")
		if !ok {
			t.Fatal("OpenInPool")
		}
		s.Ready(d.Server, 0)
	}
	var drains []Decision
	for x := 2.0; x <= 44; x += 2 {
		load := 200.0
		switch {
		case x == 40:
			load = 95
		case x == 42:
			load = 85
		case x == 44:
			load = 75
		}
		for _, d := range s.Evaluate(at(x), spread(s, 0, load), nil) {
			switch d.Action {
			case ActionDrain:
				if x < 44 {
					t.Fatalf("drain at %v s: %v", x, d)
				}
				drains = append(drains, d)
			case ActionOpen:
				t.Fatalf("open at %v s: %v", x, d)
			}
		}
	}
	if len(drains) != 2 || !strings.Contains(drains[0].Reason, "falling to 55") {
		t.Fatalf("drains %v, want two, falling to 55", drains)
	}
}

// Viewers turned away count in the load of their own region: DE's relay
// is full (80, the high watermark) and DE's viewers wait for a server, 20
// more every round; eu's load is its relay's viewers and those waiting,
// so eu grows and opens a relay, in eu. Counted only in the stream's
// audience, eu's load stays at its relay's 80 and nothing opens there.
func TestWaitingViewersAreTheirRegionsLoad(t *testing.T) {
	for _, regional := range []bool{false, true} {
		r := newGrowthRig(t)
		r.s.cfg.RetryAfter = 2 * time.Second // every turned-away viewer asks once per round
		de, _ := r.s.g.Vertex("DE")
		var opens []Decision
		for i := range 3 {
			if regional {
				r.s.UnservedAt(0, de, 20*float64(i))
			} else {
				r.s.Unserved(0, 20*float64(i))
			}
			opens = append(opens, r.step(float64(2*i+2), 80, 50, false)...)
		}
		switch {
		case regional && (len(opens) == 0 || !strings.Contains(opens[0].Reason, "region eu")):
			t.Errorf("DE's viewers waiting: opens %v, want one in eu", opens)
		case !regional && len(opens) != 0:
			t.Errorf("waiting counted in the stream only: opens %v, want none", opens)
		}
	}
}

// The requests turned away over a round, times RetryAfter over the round,
// are the viewers waiting, also when the round is shorter than RetryAfter
// (the orchestrator evaluates every second, a viewer turned away asks again
// after 5 s): 60 viewers waiting ask 12 times a second, and eu's load is
// its relay's 80 and those 60 (counted once a round, it would be 92).
func TestWaitingViewersRetryingSlowly(t *testing.T) {
	r := newGrowthRig(t)
	r.s.cfg.RetryAfter = 5 * time.Second
	r.s.cfg.Horizon = time.Second
	de, _ := r.s.g.Vertex("DE")
	var opens []Decision
	for i := range 4 {
		if i > 0 {
			r.s.UnservedAt(0, de, 12)
		}
		opens = append(opens, r.step(float64(i+1), 80, 50, false)...)
	}
	if len(opens) == 0 || !strings.Contains(opens[0].Reason, "140 viewers now") {
		t.Fatalf("opens %v, want them for 140 viewers (80 served, 60 waiting)", opens)
	}
}

// groupGrowth is the growth group (stream 0, the region of loc) provisions
// for this round (before Margin).
func groupGrowth(t *testing.T, s *Scaler, loc string) float64 {
	t.Helper()
	v, _ := s.g.Vertex(loc)
	g := s.groups[groupKey{0, s.g.Region(v)}]
	if g == nil {
		t.Fatalf("no group in the region of %s", loc)
	}
	return math.Max(0, g.predicted-g.total) * g.scale
}

// A region's growth is its own viewers': its share of the stream's
// requests (ServedAt, by the viewers' location) times the growth of the
// stream's whole audience, at least, and its load's own growth up to
// growthSlack times that. The stream's audience grows by 5 viewers/s
// (20 over the 4 s horizon) in every case.
func TestRegionGrowthIsItsViewersShare(t *testing.T) {
	for _, c := range []struct {
		name         string
		de, us       [3]float64 // the relays' viewers at 2, 4 and 6 s
		reqDE, reqUS float64    // requests per round from DE and US
		growEU       float64    // the growth eu and na provision for at 6 s
		growNA       float64
	}{
		// DE's relay is full, its new viewers are served in na: na's load
		// grows by 20 over the horizon with guests, eu's stays flat. The
		// growth is eu's (every request is from DE), none is na's.
		{"guests", [3]float64{78, 78, 78}, [3]float64{50, 60, 70}, 10, 0, 20, 0},
		// Half the requests from each region (10 each): eu's load grows 14
		// over the horizon, within 1.5× its share (10), and is taken as it
		// is; na's does not grow and takes its share.
		{"within the slack", [3]float64{50, 57, 64}, [3]float64{50, 53, 56}, 10, 10, 14, 10},
		// eu's load grows 24 over the horizon while the audience grows 20
		// (viewers moving in from na): at most 1.5× its share, 15.
		{"beyond the slack", [3]float64{50, 62, 74}, [3]float64{50, 48, 46}, 10, 10, 15, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newGrowthRig(t)
			de, _ := r.s.g.Vertex("DE")
			us, _ := r.s.g.Vertex("US")
			for i := range 3 {
				r.s.ServedAt(0, de, c.reqDE)
				r.s.ServedAt(0, us, c.reqUS)
				opens := r.step(float64(2*i+2), c.de[i], c.us[i], false)
				for _, d := range opens {
					if c.name == "guests" && strings.Contains(d.Reason, "region na") {
						t.Errorf("na opened for DE's viewers on its relay: %v", d)
					}
				}
			}
			if g := groupGrowth(t, r.s, "DE"); math.Abs(g-c.growEU) > 0.01 {
				t.Errorf("eu provisions for %.2f of growth, want %v", g, c.growEU)
			}
			if g := groupGrowth(t, r.s, "US"); math.Abs(g-c.growNA) > 0.01 {
				t.Errorf("na provisions for %.2f of growth, want %v", g, c.growNA)
			}
		})
	}
}

// Without requests reported (ServedAt), the groups keep their own growth,
// scaled to the stream's (TestMovesBetweenRegionsAreNotGrowth); the rates
// of a stream that has no samples any more are forgotten.
func TestRequestRatesForgotten(t *testing.T) {
	r := newGrowthRig(t)
	de, _ := r.s.g.Vertex("DE")
	r.s.ServedAt(0, de, 10)
	r.s.ServedAt(0, de, math.Inf(1)) // ignored
	r.s.ServedAt(0, -1, 10)          // ignored
	r.step(2, 50, 50, false)
	if f := r.s.flow[groupKey{0, r.s.g.Region(de)}]; f == nil || f.rate != 10 {
		t.Fatalf("rate %+v, want 10", f)
	}
	r.s.ServedAt(0, de, 10)
	r.step(8, 50, 50, false) // 6 s later: 10 halved, plus 10
	if f := r.s.flow[groupKey{0, r.s.g.Region(de)}]; math.Abs(f.rate-15) > 1e-9 {
		t.Fatalf("rate %v after a half-life, want 15", f.rate)
	}
	r.s.Evaluate(at(10), nil, nil)
	if len(r.s.flow) != 0 {
		t.Fatalf("rates of a stream without samples kept: %v", r.s.flow)
	}
}

// A stream's horizon follows its growth (streamHorizons): the mean
// start-up plus twice sqrt(spread / relays needed per second), at most the
// longest start-up; the mean alone without spread; Horizon before any
// start-up is known.
func TestStreamHorizonFollowsTheGrowthRate(t *testing.T) {
	for _, c := range []struct {
		name         string
		slope        float64 // viewers per second
		mean, spread time.Duration
		set          bool
		want         time.Duration
	}{
		{"no start-ups measured", 80, 0, 0, false, 4 * time.Second},
		// 80 viewers/s over relays of 80 (0.8 × 100) is one relay a second.
		{"fast growth", 80, 10 * time.Second, 2500 * time.Millisecond, true, 10*time.Second + time.Duration(2*math.Sqrt(2.5)*float64(time.Second))},
		{"slow growth: the longest start-up", 0.8, 10 * time.Second, 2500 * time.Millisecond, true, 20 * time.Second},
		{"no spread: the start-up", 0.8, 10 * time.Second, 0, true, 10 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newGrowthRig(t)
			if c.set {
				r.s.SetStartup(c.mean, c.spread, 20*time.Second)
			}
			for x := 0.0; x <= 6; x += 2 {
				r.step(x, 10+c.slope*x, 10, false)
			}
			if got := r.s.HorizonOf(0); (got - c.want).Abs() > 10*time.Millisecond {
				t.Errorf("horizon %v, want %v", got, c.want)
			}
		})
	}
}
