package sim

import (
	"container/heap"
	"math"
)

// The offline minimum under the lifetime rule. The packed minimum
// (oracle.go) counts, at every sample, the relays the oracle's placement
// needs, as if a relay could open and close from one sample to the next.
// No schedule meeting the goals can: a relay closed within oscillationAge
// of opening is a missed goal. lifetimeMinimum is the fewest relay-seconds
// that give every (stream, location) at least the oracle's packed relays
// at every sample when every relay, once opened, is counted until it is
// at least oscillationAge old (or the run ends, or its server goes down
// under it: relays lost with a server are not closed; at a sample where
// a location has fewer servers up than at the one before, any of its
// relays may end, which under-counts a little when only some of them go
// down: the minimum stays a minimum). With a lead, each
// relay is counted from lead samples before it first serves (it opens
// that long before it is needed, to be ready in time), and its age from
// then.
//
// It keeps the oracle's placement: it is the minimum for the oracle's
// choice of locations, not over every placement (one that served more
// viewers from fewer locations could need fewer relay-seconds at a
// higher stretch).
//
// The problem is a covering by intervals: choose relay lifetimes [o, c),
// c−o ≥ life unless c is the end or a loss, whose count covers n(t) at
// every t, of least total length. Its matrix has consecutive ones in every
// column (an interval matrix, totally unimodular), so the linear
// programme has an integral optimum, and differencing the rows makes it a
// min-cost flow: node t has supply n(t)−n(t−1), a relay serving [a, c) is
// an arc a→c costing c−a (+lead), a relay above the need at t is an arc
// t+1→t costing 0. Arcs of every allowed length are a mandatory arc a→a+ℓ
// into a second row of nodes, from which a relay extends one sample at a
// time or leaves.

// lifetimeMinimum is the least relay-samples covering n under the rule
// above: life the minimum lifetime in samples, lead the start-up lead in
// samples, loss[t] true where the location lost servers at sample t (a
// relay may end there at any age). loss may be nil.
func lifetimeMinimum(n []int32, loss []bool, life, lead int) int64 {
	T := len(n)
	if T == 0 {
		return 0
	}
	any := false
	for _, v := range n {
		if v > 0 {
			any = true
			break
		}
	}
	if !any {
		return 0
	}
	life = max(life, 1)
	lead = max(min(lead, life-1), 0)
	span := life - lead // samples a relay must serve (its age counts from lead before)
	// nodes: main 0..T, ext 0..T, source, sink.
	main := func(t int) int { return t }
	ext := func(t int) int { return T + 1 + t }
	src, snk := 2*(T+1), 2*(T+1)+1
	f := newFlow(2*(T+1) + 2)
	const inf = math.MaxInt32
	for a := 0; a < T; a++ {
		e := min(a+span, T)
		f.arc(main(a), ext(e), inf, int64(e-a+lead))
	}
	for t := 0; t < T; t++ {
		f.arc(ext(t), ext(t+1), inf, 1)
		f.arc(main(t+1), main(t), inf, 0)
	}
	for t := 0; t <= T; t++ {
		f.arc(ext(t), main(t), inf, 0)
	}
	for c := 1; c < T; c++ {
		if c < len(loss) && loss[c] {
			for a := max(0, c-span+1); a < c; a++ {
				f.arc(main(a), main(c), inf, int64(c-a+lead))
			}
		}
	}
	prev := int32(0)
	var total int64
	for t := 0; t <= T; t++ {
		cur := int32(0)
		if t < T {
			cur = n[t]
		}
		switch b := int64(cur - prev); {
		case b > 0:
			f.arc(src, main(t), b, 0)
			total += b
		case b < 0:
			f.arc(main(t), snk, -b, 0)
		}
		prev = cur
	}
	flow, cost := f.minCost(src, snk)
	if flow != total {
		return -1 // cannot happen: every supply reaches the end
	}
	return cost
}

// flow is a min-cost flow network (successive shortest paths with
// potentials; costs are non-negative).
type flow struct {
	head      []int
	to, next  []int
	cap       []int64
	cost      []int64
	pot, dist []int64
	prevArc   []int
}

func newFlow(n int) *flow {
	f := &flow{head: make([]int, n), pot: make([]int64, n), dist: make([]int64, n), prevArc: make([]int, n)}
	for i := range f.head {
		f.head[i] = -1
	}
	return f
}

func (f *flow) arc(u, v int, c, w int64) {
	f.to = append(f.to, v, u)
	f.cap = append(f.cap, c, 0)
	f.cost = append(f.cost, w, -w)
	f.next = append(f.next, f.head[u], f.head[v])
	f.head[u] = len(f.to) - 2
	f.head[v] = len(f.to) - 1
}

type distItem struct {
	node int
	d    int64
}

type distHeap []distItem

func (h distHeap) Len() int           { return len(h) }
func (h distHeap) Less(i, j int) bool { return h[i].d < h[j].d }
func (h distHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *distHeap) Push(x any)        { *h = append(*h, x.(distItem)) }
func (h *distHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (f *flow) minCost(s, t int) (int64, int64) {
	var flow, cost int64
	const unreached = math.MaxInt64
	for {
		for i := range f.dist {
			f.dist[i] = unreached
			f.prevArc[i] = -1
		}
		f.dist[s] = 0
		h := &distHeap{{s, 0}}
		for h.Len() > 0 {
			it := heap.Pop(h).(distItem)
			if it.d > f.dist[it.node] {
				continue
			}
			u := it.node
			for e := f.head[u]; e >= 0; e = f.next[e] {
				if f.cap[e] <= 0 {
					continue
				}
				v := f.to[e]
				nd := it.d + f.cost[e] + f.pot[u] - f.pot[v]
				if nd < f.dist[v] {
					f.dist[v] = nd
					f.prevArc[v] = e
					heap.Push(h, distItem{v, nd})
				}
			}
		}
		if f.dist[t] == unreached {
			return flow, cost
		}
		for i, d := range f.dist {
			f.pot[i] += min(d, f.dist[t]) // nodes beyond t (or unreached) by t's distance: reduced costs stay ≥ 0
		}
		push := int64(math.MaxInt64)
		for v := t; v != s; v = f.to[f.prevArc[v]^1] {
			push = min(push, f.cap[f.prevArc[v]])
		}
		for v := t; v != s; v = f.to[f.prevArc[v]^1] {
			e := f.prevArc[v]
			f.cap[e] -= push
			f.cap[e^1] += push
			cost += push * f.cost[e]
		}
		flow += push
	}
}
