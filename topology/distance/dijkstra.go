package distance

import "math"

// search is one Dijkstra run's reusable state: distances and a 4-ary
// min-heap with lazy deletion (stale entries are skipped when popped).
type search struct {
	dist []float64
	heap []item
}

type item struct {
	d float64
	v int32
}

func newSearch(n int) *search {
	return &search{dist: make([]float64, n), heap: make([]item, 0, 1024)}
}

// run fills s.dist with the cost of the cheapest path from every vertex to
// dst, following the reversed edges of rev out of dst.
func (s *search) run(rev *csr, dst int32) {
	inf := math.Inf(1)
	for i := range s.dist {
		s.dist[i] = inf
	}
	dist := s.dist
	off, from, cost := rev.off, rev.from, rev.cost
	dist[dst] = 0
	s.heap = append(s.heap[:0], item{0, dst})
	for len(s.heap) > 0 {
		top := s.pop()
		if top.d > dist[top.v] {
			continue // stale entry
		}
		for k := off[top.v]; k < off[top.v+1]; k++ {
			u := from[k]
			if nd := top.d + cost[k]; nd < dist[u] {
				dist[u] = nd
				s.push(item{nd, u})
			}
		}
	}
}

func (s *search) push(it item) {
	h := append(s.heap, it)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if h[p].d <= it.d {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = it
	s.heap = h
}

func (s *search) pop() item {
	h := s.heap
	top := h[0]
	last := h[len(h)-1]
	h = h[:len(h)-1]
	n := len(h)
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for j := c + 1; j < c+4 && j < n; j++ {
			if h[j].d < h[m].d {
				m = j
			}
		}
		if h[m].d >= last.d {
			break
		}
		h[i] = h[m]
		i = m
	}
	if n > 0 {
		h[i] = last
	}
	s.heap = h
	return top
}
