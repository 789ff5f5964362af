package sim

import (
	"math"
	"sort"
	"time"

	"github.com/relaymesh/relaymesh/topology/distance"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/scaling"
)

// The capacity-aware oracle: at every sample interval, the moment's
// viewers (watching or waiting) are placed over every server that is up,
// as if each carried every stream, within the servers' viewer and Mbit/s
// capacities. The placement is greedy on the objective: (audience,
// location) pairs in increasing stretch (then distance) each take as many
// viewers as the audience still has and the location still holds. That is
// not always the exact optimum of the assignment problem, but with one
// cost per (audience, location) and capacities per location it is close,
// and it never beats what any controller could do: it has no start-up
// delays, no load reports and no stickiness. The relays its placement
// needs — per (stream, location), the viewers left once the primary there
// is full, over one server's capacity at the scaling high watermark,
// rounded up — summed over time are the offline minimum of relay-seconds.
//
// The watermark: a controller keeps every relay below High × capacity (the
// margin for loads a sample old; its headroom for growth is in the load it
// provisions for), so the same placement at the watermark is reported
// beside the minimum at 100 % (RelaySecondsPacked, the goal's): the
// controller's relays at the watermark alone cost 1/High of the packed
// minimum (1.05× at the default 0.95).

type oraclePair struct {
	aud     int
	dest    int
	stretch float64
}

type oracleLoc struct {
	servers []int   // servers at the location (primary first)
	perSrv  float64 // largest viewer capacity of its relay/reserve servers (Inf: unlimited)
	perKbps float64 // largest kbit/s capacity (Inf: unlimited)
}

type oracle struct {
	pairs  []oraclePair
	locs   []oracleLoc
	remV   []float64
	remK   []float64
	need   []float64
	assign [][]float64 // per stream, per dest
	hist   stretchHist
	// waiting viewer-seconds the oracle could not place, and relay-seconds
	// its placement needs.
	waitingVS, relaySeconds float64
	// relaySecondsPacked: the same relays packed to 100 % of capacity.
	packedSeconds float64
	high          float64 // the scaling high watermark the minimum packs to
	// the last sample's mean stretch and relays, for the timeline
	lastStretch, lastRelays float64
	// series: per stream and location (s*len(locs)+j), the packed relays
	// at every sample; loss: per location, the samples where it had fewer
	// live servers than at the one before; up: its live servers at the
	// last sample; dt the seconds a sample accounts (lifetime.go).
	series [][]int32
	loss   [][]bool
	up     []int
	dt     float64
}

func newOracle(r *run) *oracle {
	o := &oracle{locs: make([]oracleLoc, r.table.NumDests()), high: r.sc.Scaling.High}
	if o.high <= 0 || o.high > 1 {
		o.high = scaling.DefaultHigh
	}
	prim := r.g.Primary()
	for i, s := range r.g.Servers() {
		j := r.table.DestIndex(s.Vertex)
		if j < 0 {
			continue
		}
		l := &o.locs[j]
		if i == prim {
			l.servers = append([]int{i}, l.servers...)
			continue
		}
		l.servers = append(l.servers, i)
		cv, ck := math.Inf(1), math.Inf(1)
		if s.CapacityViewers > 0 {
			cv = float64(s.CapacityViewers)
		}
		if s.CapacityMbps > 0 {
			ck = s.CapacityMbps * 1000
		}
		l.perSrv, l.perKbps = max(l.perSrv, cv), max(l.perKbps, ck)
	}
	for ai, a := range r.aud {
		if a.best == distance.Inf {
			continue
		}
		for j, d := range r.table.Row(a.vertex) {
			if d == distance.Inf || len(o.locs[j].servers) == 0 {
				continue
			}
			o.pairs = append(o.pairs, oraclePair{aud: ai, dest: j, stretch: float64(max(d, 1) / max(a.best, 1))})
		}
	}
	sort.SliceStable(o.pairs, func(x, y int) bool { return o.pairs[x].stretch < o.pairs[y].stretch })
	o.remV, o.remK = make([]float64, len(o.locs)), make([]float64, len(o.locs))
	o.need = make([]float64, len(r.aud))
	for range r.byStrm {
		o.assign = append(o.assign, make([]float64, len(o.locs)))
	}
	o.series = make([][]int32, len(r.byStrm)*len(o.locs))
	o.loss, o.up = make([][]bool, len(o.locs)), make([]int, len(o.locs))
	for j, l := range o.locs {
		o.up[j] = len(l.servers)
	}
	return o
}

func capOf(s graph.Server) (float64, float64) {
	cv, ck := math.Inf(1), math.Inf(1)
	if s.CapacityViewers > 0 {
		cv = float64(s.CapacityViewers)
	}
	if s.CapacityMbps > 0 {
		ck = s.CapacityMbps * 1000
	}
	return cv, ck
}

// sample places the moment's viewers and accounts dt seconds of them.
func (o *oracle) sample(r *run, dt float64) {
	o.dt = dt
	for j, l := range o.locs {
		o.remV[j], o.remK[j] = 0, 0
		up := 0
		for _, i := range l.servers {
			if r.dead[i] {
				continue
			}
			up++
			cv, ck := capOf(r.g.Servers()[i])
			o.remV[j] += cv
			o.remK[j] += ck
		}
		o.loss[j] = append(o.loss[j], up < o.up[j])
		o.up[j] = up
	}
	for ai, a := range r.aud {
		o.need[ai] = float64(a.watch + a.waiting)
	}
	for s := range o.assign {
		clear(o.assign[s])
	}
	sum, tot := 0.0, 0.0
	for _, p := range o.pairs {
		n := o.need[p.aud]
		if n <= 0 {
			continue
		}
		a := r.aud[p.aud]
		kbps := float64(r.strKbps[a.stream])
		take := min(n, o.remV[p.dest])
		if kbps > 0 {
			take = min(take, math.Floor(o.remK[p.dest]/kbps))
		}
		if take <= 0 {
			continue
		}
		o.need[p.aud] -= take
		o.remV[p.dest] -= take
		o.remK[p.dest] -= take * kbps
		o.assign[a.stream][p.dest] += take
		o.hist.add(p.stretch, take*dt)
		sum += p.stretch * take
		tot += take
	}
	o.lastStretch = 0
	if tot > 0 {
		o.lastStretch = sum / tot
	}
	for _, n := range o.need {
		o.waitingVS += max(n, 0) * dt
	}
	prim := r.g.Primary()
	relays, packed := 0.0, 0.0
	for j, l := range o.locs {
		primV, primK := 0.0, 0.0
		if len(l.servers) > 0 && l.servers[0] == prim && !r.dead[prim] {
			primV, primK = capOf(r.g.Servers()[prim])
		}
		for s := range o.assign {
			k := s*len(o.locs) + j
			o.series[k] = append(o.series[k], 0)
			n := o.assign[s][j]
			if n <= 0 {
				continue
			}
			kbps := float64(r.strKbps[s])
			onPrim := min(n, primV)
			if kbps > 0 {
				onPrim = min(onPrim, math.Floor(primK/kbps))
			}
			primV -= onPrim
			primK -= onPrim * kbps
			if rest := n - onPrim; rest > 0 {
				per := l.perSrv
				if kbps > 0 {
					per = min(per, math.Floor(l.perKbps/kbps))
				}
				p := 1.0
				if math.IsInf(per, 1) || per <= 0 {
					relays++
				} else {
					relays += math.Ceil(rest / math.Max(1, math.Floor(o.high*per)))
					p = math.Ceil(rest / per)
				}
				packed += p
				o.series[k][len(o.series[k])-1] = int32(p)
			}
		}
	}
	o.relaySeconds += relays * dt
	o.packedSeconds += packed * dt
	o.lastRelays = relays
}

// lifetimeSeconds is the packed minimum under the lifetime rule
// (lifetime.go): every relay counted until it is at least life old, and,
// with lead, from lead before it first serves.
func (o *oracle) lifetimeSeconds(life, lead time.Duration) float64 {
	if o.dt <= 0 {
		return 0
	}
	lifeN := int(math.Ceil(life.Seconds()/o.dt - 1e-9))
	leadN := int(math.Floor(lead.Seconds()/o.dt + 1e-9))
	var total int64
	for k, n := range o.series {
		total += lifetimeMinimum(n, o.loss[k%len(o.locs)], lifeN, leadN)
	}
	return float64(total) * o.dt
}
