// Package jumphash places keys (streams) on the members of a pool (the
// servers of a location) with Lamping and Veach's jump consistent hash:
// growing a pool from n to n+1 members moves only about 1/(n+1) of the keys,
// all to the new member. Jump hash alone can only drop the last member; a
// Pool keeps removed members as dead slots and re-hashes keys that land on
// one, so removing any member moves only the keys it held.
package jumphash

// Hash maps key to a bucket in [0, buckets) (Lamping & Veach, "A Fast,
// Minimal Memory, Consistent Hash Algorithm", 2014). buckets ≤ 0 gives -1.
func Hash(key uint64, buckets int) int {
	if buckets <= 0 {
		return -1
	}
	b, j := int64(-1), int64(0)
	for j < int64(buckets) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// Key hashes a string (FNV-1a, 64 bit) mixed with a replica number, so the
// k-th copy of a stream gets an independent key.
func Key(s string, replica int) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return mix(h + uint64(replica)*0x9e3779b97f4a7c15)
}

// mix is the splitmix64 finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Pool is an ordered set of members with stable slots. The zero Pool is
// empty and ready to use. It is not safe for concurrent use.
type Pool struct {
	slots []int // member per slot, -1 when removed
	alive int
}

// Add appends member m (any int the caller uses as an id) in a new slot.
func (p *Pool) Add(m int) {
	p.slots = append(p.slots, m)
	p.alive++
}

// Remove frees the slot of member m. Trailing free slots are dropped, so
// removing the newest member undoes its Add exactly.
func (p *Pool) Remove(m int) {
	for i, s := range p.slots {
		if s == m {
			p.slots[i] = -1
			p.alive--
			break
		}
	}
	for len(p.slots) > 0 && p.slots[len(p.slots)-1] < 0 {
		p.slots = p.slots[:len(p.slots)-1]
	}
}

// Len is the number of members.
func (p *Pool) Len() int { return p.alive }

// Members returns the members in slot order (allocates).
func (p *Pool) Members() []int {
	out := make([]int, 0, p.alive)
	for _, s := range p.slots {
		if s >= 0 {
			out = append(out, s)
		}
	}
	return out
}

// Pick returns the member for key, or -1 for an empty pool. A key that
// lands on a free slot is re-hashed (bounded), then probes linearly.
func (p *Pool) Pick(key uint64) int {
	if p.alive == 0 {
		return -1
	}
	n := len(p.slots)
	for range 32 {
		if s := p.slots[Hash(key, n)]; s >= 0 {
			return s
		}
		key = mix(key + 1)
	}
	for i := Hash(key, n); ; i = (i + 1) % n {
		if p.slots[i] >= 0 {
			return p.slots[i]
		}
	}
}

// PickFunc returns the first member accepted by ok, trying the keys of
// successive replicas Key(name, 0), Key(name, 1), … up to tries times, then
// every member in slot order; -1 when none is accepted.
func (p *Pool) PickFunc(name string, tries int, ok func(member int) bool) int {
	for k := range tries {
		if m := p.Pick(Key(name, k)); m >= 0 && ok(m) {
			return m
		}
	}
	for _, s := range p.slots {
		if s >= 0 && ok(s) {
			return s
		}
	}
	return -1
}
