package scaling

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/topology/graph"
)

// Region eu with DE (3 relay servers) and FR (1), a reserve server at eu,
// a primary at eu; capacity 100 viewers each.
func testGraph(t testing.TB) *graph.Graph {
	t.Helper()
	var b graph.Builder
	b.AddLocation(graph.Location{ID: "eu"})
	b.AddLocation(graph.Location{ID: "DE", Parent: "eu"})
	b.AddLocation(graph.Location{ID: "FR", Parent: "eu"})
	b.AddLink(graph.Link{From: "DE", To: "eu", Cost: 1, Symmetric: true})
	b.AddLink(graph.Link{From: "FR", To: "eu", Cost: 1, Symmetric: true})
	b.AddServer(graph.Server{ID: "p", Location: "eu", Role: graph.RolePrimary, CapacityViewers: 1000})
	for i := range 3 {
		b.AddServer(graph.Server{ID: fmt.Sprint("de", i), Location: "DE", CapacityViewers: 100})
	}
	b.AddServer(graph.Server{ID: "fr0", Location: "FR", CapacityViewers: 100})
	b.AddServer(graph.Server{ID: "res0", Location: "eu", Role: graph.RoleReserve, CapacityViewers: 100})
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func cfg() Config {
	return Config{High: 0.8, Low: 0.3, Hold: 10 * time.Second, MinLifetime: 30 * time.Second, Horizon: 4 * time.Second, Window: 3, DrainTimeout: 20 * time.Second, Margin: 1, Settle: 10 * time.Second}
}

// spread turns a group total into samples, evenly over the open relays.
func spread(s *Scaler, stream int, total float64) []Sample {
	var out []Sample
	n := 0
	for k, r := range s.relays {
		if k[1] == stream && r.state != starting {
			n++
		}
	}
	for k, r := range s.relays {
		if k[1] == stream && r.state != starting {
			out = append(out, Sample{Server: k[0], Stream: stream, Viewers: total / float64(n)})
		}
	}
	return out
}

func apply(s *Scaler, ds []Decision) {
	for _, d := range ds {
		if d.Action == ActionOpen {
			s.Ready(d.Server, d.Stream)
		}
	}
}

func TestScaleUpDownByHand(t *testing.T) {
	g := testGraph(t)
	s := New(cfg(), g)
	s.SetStreamName(0, "final")
	de, _ := g.Vertex("DE")
	d, ok := s.OpenAt(at(0), 0, de, "demand")
	if !ok || d.Action != ActionOpen || g.Servers()[d.Server].Location != "DE" || !strings.Contains(d.Reason, "final") {
		t.Fatalf("OpenAt: %+v", d)
	}
	first := d.Server
	// The same stream name hashes to the same server in a fresh scaler.
	if d2, _ := New(cfg(), g).OpenAt(at(0), 0, de, "x"); d2.Server != first {
		t.Errorf("placement not deterministic")
	}
	s.Ready(first, 0)
	// Constant 90 viewers on one relay: 90 > 0.8 × 100 → ceil(90/80) - 1 = 1 more.
	var ds []Decision
	for _, x := range []float64{2, 4} {
		ds = s.Evaluate(at(x), spread(s, 0, 90), ds[:0])
		if x == 2 && len(ds) != 1 {
			t.Fatalf("t=%v: %v", x, ds)
		}
		apply(s, ds)
	}
	if s.Relays(0) != 2 {
		t.Fatalf("relays = %d, want 2", s.Relays(0))
	}
	// Load falls to 10: below 0.3 × 100 × 2 = 60, and 10 ≤ 80 × 1. Drain
	// comes only after the hold (10 s) and the minimum lifetime (30 s).
	var drained []Decision
	for x := 6.0; x <= 60 && len(drained) == 0; x += 2 {
		for _, d := range s.Evaluate(at(x), spread(s, 0, 10), nil) {
			if d.Action == ActionDrain {
				drained = append(drained, d)
				if x < 30 {
					t.Fatalf("drained at %v s, before the minimum lifetime", x)
				}
			} else {
				t.Fatalf("unexpected %v", d)
			}
		}
	}
	if len(drained) != 1 {
		t.Fatal("never drained")
	}
	// The draining relay reports 0 viewers: closed.
	victim := drained[0].Server
	var samples []Sample
	for k := range s.relays {
		v := 10.0
		if k[0] == victim {
			v = 0
		}
		samples = append(samples, Sample{Server: k[0], Stream: 0, Viewers: v})
	}
	ds = s.Evaluate(at(62), samples, nil)
	if len(ds) != 1 || ds[0].Action != ActionClose || ds[0].Server != victim {
		t.Fatalf("close: %v", ds)
	}
	if s.Relays(0) != 1 {
		t.Fatalf("relays = %d", s.Relays(0))
	}
}

func TestOverflowToReserve(t *testing.T) {
	g := testGraph(t)
	s := New(cfg(), g)
	de, _ := g.Vertex("DE")
	d, _ := s.OpenAt(at(0), 0, de, "demand")
	s.Ready(d.Server, 0)
	// 390 viewers → ceil(390/80) = 5 relays: DE×3, FR, then the reserve.
	ds := s.Evaluate(at(2), spread(s, 0, 390), nil)
	if len(ds) != 4 {
		t.Fatalf("opened %d, want 4: %v", len(ds), ds)
	}
	locs := map[string]int{}
	for _, d := range ds {
		locs[g.Servers()[d.Server].ID[:2]]++
	}
	if locs["de"] != 2 || locs["fr"] != 1 || locs["re"] != 1 {
		t.Fatalf("placement %v", locs)
	}
	last := ds[3]
	if g.Servers()[last.Server].Role != graph.RoleReserve || !strings.Contains(last.Reason, "reserve") {
		t.Fatalf("overflow: %v", last)
	}
	// Nothing left: a sixth relay cannot be placed, and OpenAt says so.
	apply(s, ds)
	if _, ok := s.OpenAt(at(3), 0, de, "demand"); ok {
		t.Fatal("opened beyond every pool")
	}
}

// Property: with constant load, whatever its level, the relay count stops
// changing and nothing is opened and then closed.
func TestConstantLoadSettles(t *testing.T) {
	g := testGraph(t)
	for _, total := range []float64{0, 5, 79, 81, 150, 250, 330} {
		s := New(cfg(), g)
		de, _ := g.Vertex("DE")
		d, _ := s.OpenAt(at(0), 0, de, "demand")
		s.Ready(d.Server, 0)
		counts := []int{}
		for x := 2.0; x <= 600; x += 2 {
			ds := s.Evaluate(at(x), spread(s, 0, total), nil)
			for _, d := range ds {
				if d.Action == ActionDrain && total > 0 {
					t.Fatalf("total %v: drained under constant load: %v", total, d)
				}
			}
			apply(s, ds)
			counts = append(counts, s.Relays(0))
		}
		tail := counts[len(counts)-100:]
		for _, c := range tail {
			if c != tail[0] {
				t.Fatalf("total %v: relay count still changing: %v", total, tail)
			}
		}
		t.Logf("total %v → %d relays", total, tail[0])
	}
}

func TestSetDownForgetsRelays(t *testing.T) {
	g := testGraph(t)
	s := New(cfg(), g)
	de, _ := g.Vertex("DE")
	d, _ := s.OpenAt(at(0), 0, de, "demand")
	s.SetDown(d.Server, true)
	if s.Relays(0) != 0 {
		t.Fatal("relay kept on a dead server")
	}
	d2, _ := s.OpenAt(at(1), 0, de, "demand")
	if d2.Server == d.Server {
		t.Fatal("dead server reused")
	}
}

// A draining relay is closed at DrainTimeout with RTMP viewers left, not
// with HLS/DASH viewers (they leave by content steering, or stay).
func TestDrainTimeoutSparesHTTPViewers(t *testing.T) {
	g := testGraph(t)
	s := New(cfg(), g)
	de, _ := g.Vertex("DE")
	d, _ := s.OpenAt(at(0), 0, de, "demand")
	s.Ready(d.Server, 0)
	for _, x := range []float64{2, 4} {
		apply(s, s.Evaluate(at(x), spread(s, 0, 90), nil))
	}
	var victim = -1
	x := 6.0
	for ; x <= 60 && victim < 0; x += 2 {
		for _, d := range s.Evaluate(at(x), spread(s, 0, 10), nil) {
			if d.Action == ActionDrain {
				victim = d.Server
			}
		}
	}
	if victim < 0 {
		t.Fatal("never drained")
	}
	samples := func(http float64) []Sample {
		var out []Sample
		for k := range s.relays {
			if k[0] == victim {
				out = append(out, Sample{Server: k[0], Stream: 0, Viewers: 3, HTTPViewers: http})
			} else {
				out = append(out, Sample{Server: k[0], Stream: 0, Viewers: 7})
			}
		}
		return out
	}
	// Well past the drain timeout (20 s) with HTTP viewers: kept.
	for end := x + 40; x <= end; x += 2 {
		for _, d := range s.Evaluate(at(x), samples(2), nil) {
			if d.Action == ActionClose {
				t.Fatalf("closed under HTTP viewers at %v s: %v", x, d)
			}
		}
	}
	// Only RTMP viewers left: closed (the timeout has long passed).
	ds := s.Evaluate(at(x), samples(0), nil)
	if len(ds) != 1 || ds[0].Action != ActionClose || ds[0].Server != victim || !strings.Contains(ds[0].Reason, "drain timeout") {
		t.Fatalf("close: %v", ds)
	}
}

// A region whose pool is full overflows to the reserve of another region;
// the relays it opened there count for it, so it does not open them again
// at every evaluation.
func TestOverflowRelaysCountForTheRegionThatAsked(t *testing.T) {
	var b graph.Builder
	b.AddLocation(graph.Location{ID: "eu"})
	b.AddLocation(graph.Location{ID: "na"})
	b.AddLink(graph.Link{From: "eu", To: "na", Cost: 5, Symmetric: true})
	b.AddServer(graph.Server{ID: "p", Location: "eu", Role: graph.RolePrimary, CapacityViewers: 1000})
	b.AddServer(graph.Server{ID: "eu0", Location: "eu", CapacityViewers: 100})
	for i := range 6 {
		b.AddServer(graph.Server{ID: fmt.Sprint("res", i), Location: "na", Role: graph.RoleReserve, CapacityViewers: 100})
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	s := New(cfg(), g)
	eu, _ := g.Vertex("eu")
	d, ok := s.OpenAt(time.Unix(0, 0), 0, eu, "test")
	if !ok {
		t.Fatal("no relay at eu")
	}
	s.Ready(d.Server, 0)
	opened := 0
	for i := range 4 {
		now := time.Unix(int64(2*i+2), 0)
		for _, x := range s.Evaluate(now, []Sample{{Server: d.Server, Stream: 0, Viewers: 250}}, nil) {
			if x.Action == ActionOpen {
				opened++
			}
		}
	}
	// 250 viewers at the high watermark 80 per relay: 4 relays, 3 of them
	// in the reserve, opened once.
	if opened != 3 || s.Relays(0) != 4 {
		t.Fatalf("opened %d overflow relays, %d relays in all; want 3 and 4", opened, s.Relays(0))
	}
}
