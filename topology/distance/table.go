// Package distance precomputes the cost of the cheapest path from every
// vertex of a location graph to every location that has servers, so that
// placing a viewer is a table read rather than a graph search.
//
// The destination set is small and changes rarely; a Table is built off the
// hot path (Build, Store.Rebuild) and published with an atomic pointer swap.
package distance

import (
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/relaymesh/relaymesh/topology/graph"
)

// Inf is the distance to an unreachable destination.
var Inf = float32(math.Inf(1))

// Table holds dist(v → destination) for every vertex v and every
// destination, row-major by source vertex. It is immutable.
type Table struct {
	n      int
	dests  []graph.VertexID
	destOf []int32
	d      []float32
}

// ServerLocations returns the sorted, distinct vertices that have at least
// one server: the usual destination set.
func ServerLocations(g *graph.Graph) []graph.VertexID {
	seen := make(map[graph.VertexID]bool)
	var out []graph.VertexID
	for _, s := range g.Servers() {
		if !seen[s.Vertex] {
			seen[s.Vertex] = true
			out = append(out, s.Vertex)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// csr is the reversed graph in compressed sparse row form: for vertex u,
// in[off[u]:off[u+1]] are the vertices with an edge into u.
type csr struct {
	off  []int32
	from []int32
	cost []float64
}

func reversed(g *graph.Graph) csr {
	n := g.NumVertices()
	edges := g.Edges()
	c := csr{off: make([]int32, n+1), from: make([]int32, len(edges)), cost: make([]float64, len(edges))}
	for _, e := range edges {
		c.off[e.To+1]++
	}
	for i := 1; i <= n; i++ {
		c.off[i] += c.off[i-1]
	}
	pos := make([]int32, n)
	copy(pos, c.off[:n])
	for _, e := range edges {
		p := pos[e.To]
		pos[e.To]++
		c.from[p] = int32(e.From)
		c.cost[p] = e.Cost
	}
	return c
}

// Build computes the table for the given destinations (duplicates and
// out-of-range vertices are ignored) with one Dijkstra per destination on
// the reversed graph, spread over GOMAXPROCS goroutines.
func Build(g *graph.Graph, dests []graph.VertexID) *Table {
	n := g.NumVertices()
	t := &Table{n: n, destOf: make([]int32, n)}
	for i := range t.destOf {
		t.destOf[i] = -1
	}
	for _, v := range dests {
		if v >= 0 && int(v) < n && t.destOf[v] < 0 {
			t.destOf[v] = int32(len(t.dests))
			t.dests = append(t.dests, v)
		}
	}
	nd := len(t.dests)
	t.d = make([]float32, n*nd)
	if nd == 0 {
		return t
	}
	rev := reversed(g)
	// Workers take batches of destinations and compute their columns into
	// a local buffer, then write them row by row: a batch of 16 float32
	// fills one cache line per row instead of touching a line per entry.
	const batch = 16
	workers := min(runtime.GOMAXPROCS(0), (nd+batch-1)/batch)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newSearch(n)
			cols := make([]float32, batch*n)
			for {
				j0 := int(next.Add(batch) - batch)
				if j0 >= nd {
					return
				}
				k := min(batch, nd-j0)
				for c := range k {
					s.run(&rev, int32(t.dests[j0+c]))
					col := cols[c*n : c*n+n]
					for v, dv := range s.dist {
						col[v] = float32(dv)
					}
				}
				for v := range n {
					row := t.d[v*nd+j0 : v*nd+j0+k]
					for c := range row {
						row[c] = cols[c*n+v]
					}
				}
			}
		}()
	}
	wg.Wait()
	return t
}

// NumVertices is the number of source vertices.
func (t *Table) NumVertices() int { return t.n }

// NumDests is the number of destinations.
func (t *Table) NumDests() int { return len(t.dests) }

// Dest returns the vertex of destination index j.
func (t *Table) Dest(j int) graph.VertexID { return t.dests[j] }

// DestIndex returns the destination index of vertex v, or -1 when v is not
// a destination (or out of range).
func (t *Table) DestIndex(v graph.VertexID) int {
	if v < 0 || int(v) >= t.n {
		return -1
	}
	return int(t.destOf[v])
}

// Row returns dist(v → destination j) for every j, indexed by destination
// index. It returns nil for a vertex out of range. The slice must not be
// modified.
func (t *Table) Row(v graph.VertexID) []float32 {
	if v < 0 || int(v) >= t.n {
		return nil
	}
	nd := len(t.dests)
	return t.d[int(v)*nd : int(v)*nd+nd : int(v)*nd+nd]
}

// Dist returns dist(v → destination j); Inf when unreachable or out of range.
func (t *Table) Dist(v graph.VertexID, j int) float32 {
	if v < 0 || int(v) >= t.n || j < 0 || j >= len(t.dests) {
		return Inf
	}
	return t.d[int(v)*len(t.dests)+j]
}

// Store publishes the current table to readers with an atomic pointer.
// The zero Store holds no table.
type Store struct{ p atomic.Pointer[Table] }

// Load returns the current table (nil before the first Store or Rebuild).
func (s *Store) Load() *Table { return s.p.Load() }

// Store publishes t.
func (s *Store) Store(t *Table) { s.p.Store(t) }

// Rebuild builds a table for the server locations of g and publishes it.
// Readers keep using the old table until the swap.
func (s *Store) Rebuild(g *graph.Graph) *Table {
	t := Build(g, ServerLocations(g))
	s.p.Store(t)
	return t
}
