package distance

import "math"

// search is one Dijkstra run's reusable state: distances and a binary
// min-heap with lazy deletion.
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
	s.dist[dst] = 0
	s.heap = append(s.heap[:0], item{0, dst})
	for len(s.heap) > 0 {
		top := s.pop()
		if top.d > s.dist[top.v] {
			continue // stale entry
		}
		for k := rev.off[top.v]; k < rev.off[top.v+1]; k++ {
			u := rev.from[k]
			if nd := top.d + rev.cost[k]; nd < s.dist[u] {
				s.dist[u] = nd
				s.push(item{nd, u})
			}
		}
	}
}

func (s *search) push(it item) {
	h := append(s.heap, it)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
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
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1].d < h[c].d {
			c++
		}
		if h[c].d >= last.d {
			break
		}
		h[i] = h[c]
		i = c
	}
	if n > 0 {
		h[i] = last
	}
	s.heap = h
	return top
}
