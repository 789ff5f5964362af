package jumphash

import (
	"fmt"
	"math"
	"testing"
)

func TestHashRangeAndBalance(t *testing.T) {
	const keys, n = 100_000, 10
	counts := make([]int, n)
	for k := range keys {
		b := Hash(Key(fmt.Sprint(k), 0), n)
		if b < 0 || b >= n {
			t.Fatalf("bucket %d", b)
		}
		counts[b]++
	}
	for b, c := range counts {
		if math.Abs(float64(c)/keys-0.1) > 0.01 {
			t.Errorf("bucket %d holds %d of %d keys", b, c, keys)
		}
	}
	if Hash(1, 0) != -1 || Hash(1, 1) != 0 {
		t.Error("edge cases")
	}
}

// Growing from 10 to 11 members moves about 1/11 of the keys, all to the
// new member; removing a middle member moves only its keys.
func TestMinimalMovement(t *testing.T) {
	const keys = 50_000
	var p Pool
	for m := range 10 {
		p.Add(100 + m)
	}
	before := make([]int, keys)
	for k := range before {
		before[k] = p.Pick(Key(fmt.Sprint("stream-", k), 0))
	}
	p.Add(110)
	moved := 0
	after := make([]int, keys)
	for k := range after {
		after[k] = p.Pick(Key(fmt.Sprint("stream-", k), 0))
		if after[k] != before[k] {
			moved++
			if after[k] != 110 {
				t.Fatalf("key %d moved from %d to old member %d", k, before[k], after[k])
			}
		}
	}
	if f := float64(moved) / keys; math.Abs(f-1.0/11) > 0.01 {
		t.Errorf("add moved %.4f of the keys, want about %.4f", f, 1.0/11)
	}
	p.Remove(103)
	moved = 0
	for k := range after {
		now := p.Pick(Key(fmt.Sprint("stream-", k), 0))
		if now == 103 {
			t.Fatal("removed member still picked")
		}
		if now != after[k] {
			moved++
			if after[k] != 103 {
				t.Fatalf("key %d on %d moved although only 103 left", k, after[k])
			}
		}
	}
	if f := float64(moved) / keys; math.Abs(f-1.0/11) > 0.01 {
		t.Errorf("remove moved %.4f of the keys, want about %.4f", f, 1.0/11)
	}
	// Removing the newest member undoes its Add.
	var q Pool
	for m := range 5 {
		q.Add(m)
	}
	base := make([]int, 1000)
	for k := range base {
		base[k] = q.Pick(uint64(k) * 7919)
	}
	q.Add(5)
	q.Remove(5)
	for k := range base {
		if q.Pick(uint64(k)*7919) != base[k] {
			t.Fatal("add+remove of the last member changed placement")
		}
	}
}

func TestPickFunc(t *testing.T) {
	var p Pool
	if p.Pick(1) != -1 || p.PickFunc("x", 3, func(int) bool { return true }) != -1 {
		t.Fatal("empty pool")
	}
	for m := range 4 {
		p.Add(m)
	}
	if got := p.PickFunc("x", 3, func(m int) bool { return m == 2 }); got != 2 {
		t.Fatalf("got %d", got)
	}
	if got := p.PickFunc("x", 3, func(int) bool { return false }); got != -1 {
		t.Fatalf("got %d", got)
	}
	if got := len(p.Members()); got != 4 {
		t.Fatal(got)
	}
}
