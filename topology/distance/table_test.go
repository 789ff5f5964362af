package distance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/relaymesh/relaymesh/topology/graph"
)

func build(t testing.TB, locs []string, links []graph.Link, servers ...graph.Server) *graph.Graph {
	t.Helper()
	var b graph.Builder
	for _, id := range locs {
		b.AddLocation(graph.Location{ID: id})
	}
	for _, l := range links {
		b.AddLink(l)
	}
	for _, s := range servers {
		b.AddServer(s)
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestSmallGraphByHand(t *testing.T) {
	g := build(t, []string{"A", "B", "C", "D", "E"}, []graph.Link{
		{From: "A", To: "B", Cost: 1},
		{From: "B", To: "C", Cost: 2},
		{From: "A", To: "C", Cost: 5},
		{From: "C", To: "D", Cost: 1, Symmetric: true},
		{From: "D", To: "A", Cost: 10},
	}, graph.Server{ID: "s1", Location: "C"}, graph.Server{ID: "s2", Location: "D"}, graph.Server{ID: "s3", Location: "D"})
	dests := ServerLocations(g)
	if len(dests) != 2 {
		t.Fatalf("dests = %v", dests)
	}
	tb := Build(g, dests)
	v := func(id string) graph.VertexID { x, _ := g.Vertex(id); return x }
	c, d := tb.DestIndex(v("C")), tb.DestIndex(v("D"))
	inf := math.Inf(1)
	want := map[string][2]float64{
		"A": {3, 4}, // A→B→C = 1+2 beats A→C = 5
		"B": {2, 3},
		"C": {0, 1},
		"D": {1, 0},
		"E": {inf, inf}, // isolated
	}
	for id, w := range want {
		if got := tb.Dist(v(id), c); float64(got) != w[0] {
			t.Errorf("dist(%s→C) = %v, want %v", id, got, w[0])
		}
		if got := tb.Row(v(id))[d]; float64(got) != w[1] {
			t.Errorf("dist(%s→D) = %v, want %v", id, got, w[1])
		}
	}
	if tb.DestIndex(v("A")) != -1 || tb.DestIndex(99) != -1 || tb.Row(-1) != nil || tb.Dist(0, 7) != Inf {
		t.Error("out-of-range handling")
	}
}

// TestAgainstFloydWarshall compares random graphs with an O(n³) reference.
func TestAgainstFloydWarshall(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 30 {
		n := 2 + r.IntN(25)
		locs := make([]string, n)
		for i := range locs {
			locs[i] = fmt.Sprint("v", i)
		}
		ref := make([][]float64, n)
		for i := range ref {
			ref[i] = make([]float64, n)
			for j := range ref[i] {
				if i != j {
					ref[i][j] = math.Inf(1)
				}
			}
		}
		var links []graph.Link
		seen := map[[2]int]bool{}
		for range r.IntN(4 * n) {
			a, b := r.IntN(n), r.IntN(n)
			if a == b || seen[[2]int{a, b}] {
				continue
			}
			seen[[2]int{a, b}] = true
			c := float64(r.IntN(20)) / 2
			links = append(links, graph.Link{From: locs[a], To: locs[b], Cost: c})
			ref[a][b] = c
		}
		for k := range n {
			for i := range n {
				for j := range n {
					if ref[i][k]+ref[k][j] < ref[i][j] {
						ref[i][j] = ref[i][k] + ref[k][j]
					}
				}
			}
		}
		g := build(t, locs, links)
		var dests []graph.VertexID
		for j := range n {
			if r.IntN(3) == 0 {
				dests = append(dests, graph.VertexID(j))
			}
		}
		tb := Build(g, dests)
		for i := range n {
			for j, dv := range dests {
				if got := tb.Dist(graph.VertexID(i), j); float64(got) != ref[i][dv] {
					t.Fatalf("iter %d: dist(%d→%d) = %v, want %v", iter, i, dv, got, ref[i][dv])
				}
			}
		}
	}
}

func TestStoreRebuild(t *testing.T) {
	var s Store
	if s.Load() != nil {
		t.Fatal("zero store not empty")
	}
	g, err := graph.DevWorld()
	if err != nil {
		t.Fatal(err)
	}
	tb := s.Rebuild(g)
	if s.Load() != tb || tb.NumDests() != 4 { // primary and relay-eu share eu
		t.Fatalf("dests = %d", tb.NumDests())
	}
	// Every country of the world graph reaches every hub.
	for v := range tb.NumVertices() {
		for j, d := range tb.Row(graph.VertexID(v)) {
			if d == Inf {
				t.Fatalf("%s cannot reach %s", g.Location(graph.VertexID(v)).ID, g.Location(tb.Dest(j)).ID)
			}
		}
	}
}

// synthetic builds a random connected graph: a ring plus random links.
func synthetic(tb testing.TB, n, m, servers int) (*graph.Graph, []graph.VertexID) {
	var b graph.Builder
	for i := range n {
		b.AddLocation(graph.Location{ID: fmt.Sprint(i)})
	}
	r := rand.New(rand.NewPCG(3, 4))
	seen := make(map[[2]int]bool, m)
	for i := range n {
		j := (i + 1) % n
		seen[[2]int{i, j}] = true
		b.AddLink(graph.Link{From: fmt.Sprint(i), To: fmt.Sprint(j), Cost: 1 + r.Float64()*10})
	}
	for added := n; added < m; {
		i, j := r.IntN(n), r.IntN(n)
		if i == j || seen[[2]int{i, j}] {
			continue
		}
		seen[[2]int{i, j}] = true
		b.AddLink(graph.Link{From: fmt.Sprint(i), To: fmt.Sprint(j), Cost: 1 + r.Float64()*10})
		added++
	}
	g, err := b.Build()
	if err != nil {
		tb.Fatal(err)
	}
	dests := make([]graph.VertexID, servers)
	for i := range dests {
		dests[i] = graph.VertexID(i * (n / servers))
	}
	return g, dests
}

// BenchmarkBuild50k builds the table of a 50,000-vertex, 200,000-link graph
// for 1,000 server locations. It takes seconds per iteration; it runs only
// with -bench (and is skipped under -short).
func BenchmarkBuild50k(b *testing.B) {
	if testing.Short() {
		b.Skip("large benchmark skipped with -short")
	}
	g, dests := synthetic(b, 50_000, 200_000, 1_000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Build(g, dests)
	}
}

func BenchmarkBuildWorld(b *testing.B) {
	g, err := graph.DevWorld()
	if err != nil {
		b.Fatal(err)
	}
	dests := ServerLocations(g)
	b.ReportAllocs()
	for b.Loop() {
		Build(g, dests)
	}
}

func BenchmarkRowLookup(b *testing.B) {
	g, dests := synthetic(b, 5_000, 20_000, 100)
	tb := Build(g, dests)
	var s Store
	s.Store(tb)
	b.ReportAllocs()
	var sum float32
	i := 0
	for b.Loop() {
		row := s.Load().Row(graph.VertexID(i % 5000))
		sum += row[i%100]
		i++
	}
	if sum < 0 {
		fmt.Fprintln(os.Stderr, sum)
	}
}
