package sim

import (
	"math/rand/v2"
	"testing"
)

// bruteLifetime tries every relay count x(t) ≥ n(t) up to top: the opens
// are x's rises, the closes its falls, closed first-in first-out (which
// lets the oldest relays go first: any schedule that works closes that
// way too), and a relay opened at o may close at c ≥ o+life−lead, or at the
// end, or at a loss. Its cost is Σx plus lead per open.
func bruteLifetime(n []int32, loss []bool, life, lead int, top int32) int64 {
	T := len(n)
	x := make([]int32, T)
	best := int64(-1)
	var rec func(t int)
	rec = func(t int) {
		if t == T {
			var opens []int // open times, one per relay, in order
			closes := 0
			cost := int64(0)
			prev := int32(0)
			for c := 0; c < T; c++ {
				cost += int64(x[c])
				for k := prev; k < x[c]; k++ {
					opens = append(opens, c)
					cost += int64(lead)
				}
				for k := x[c]; k < prev; k++ {
					o := opens[closes]
					closes++
					if c-o < life-lead && !(loss != nil && loss[c]) {
						return
					}
				}
				prev = x[c]
			}
			if best < 0 || cost < best {
				best = cost
			}
			return
		}
		for v := n[t]; v <= top; v++ {
			x[t] = v
			rec(t + 1)
		}
	}
	rec(0)
	return best
}

func TestLifetimeMinimumBrute(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		T := 1 + rng.IntN(8)
		n := make([]int32, T)
		var top int32
		for j := range n {
			n[j] = int32(rng.IntN(3))
			top = max(top, n[j])
		}
		var loss []bool
		if i%3 == 0 {
			loss = make([]bool, T)
			loss[rng.IntN(T)] = true
		}
		life := 1 + rng.IntN(5)
		lead := 0
		if i%2 == 1 {
			lead = rng.IntN(life)
		}
		got := lifetimeMinimum(n, loss, life, lead)
		want := bruteLifetime(n, loss, life, lead, top)
		if got != want {
			t.Fatalf("n %v loss %v life %d lead %d: got %d, want %d", n, loss, life, lead, got, want)
		}
	}
}

func TestLifetimeMinimumCases(t *testing.T) {
	for _, c := range []struct {
		n          []int32
		life, lead int
		want       int64
	}{
		{[]int32{1, 1, 1}, 5, 0, 3},             // to the end: no minimum there
		{[]int32{1, 0, 0, 0, 0, 0}, 3, 0, 3},    // closed at age 3
		{[]int32{1, 0, 1, 0, 0, 0, 0}, 3, 0, 3}, // one relay across the gap
		{[]int32{1, 2, 1, 1, 1, 0, 0}, 3, 0, 7}, // the older relay closes first, at 3
		{[]int32{0, 0, 1, 0, 0, 0}, 3, 1, 3},    // opened one sample ahead
		{nil, 3, 0, 0},
	} {
		if got := lifetimeMinimum(c.n, nil, c.life, c.lead); got != c.want {
			t.Errorf("%v life %d lead %d: %d, want %d", c.n, c.life, c.lead, got, c.want)
		}
	}
}
