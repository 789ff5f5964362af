package placement

import (
	"github.com/relaymesh/relaymesh/topology/distance"
	"github.com/relaymesh/relaymesh/topology/graph"
	"math"
)

// Rand is the random source for tie-breaking (math/rand/v2's *Rand fits).
// Choices made concurrently need a source safe for that, or one each.
type Rand interface{ Float64() float64 }

// Reason says why a choice came out as it did.
type Reason uint8

// Reasons of a Result.
const (
	ReasonNearest     Reason = iota + 1 // the only candidate at the minimal distance
	ReasonTie                           // several at the minimal distance: weighted random pick
	ReasonReserve                       // regular servers full: overflow to the reserve pool
	ReasonUnreachable                   // no carrier reachable from the viewer: the primary
	ReasonSticky                        // the viewer's token names a server that can keep it
	ReasonFull                          // no server has headroom: retry later
	ReasonUnknown                       // unknown stream or vertex: the primary
	ReasonDisplaced                     // a nearer server is down: a reserve carrier nearer than the regular choice
)

var reasonText = [...]string{
	ReasonNearest:     "nearest server carrying the stream",
	ReasonTie:         "weighted random among the nearest servers carrying the stream",
	ReasonReserve:     "regular servers full: overflow to the reserve pool",
	ReasonUnreachable: "no server carrying the stream is reachable: the primary",
	ReasonSticky:      "sticky: the viewer's assignment token is still good",
	ReasonFull:        "every server that could take the viewer is at capacity",
	ReasonUnknown:     "unknown stream or location: the primary",
	ReasonDisplaced:   "a server nearer to the viewer is down: a reserve server nearer than any regular one with room",
}

func (r Reason) String() string {
	if int(r) < len(reasonText) && reasonText[r] != "" {
		return reasonText[r]
	}
	return "no reason"
}

// Result is one placement decision.
type Result struct {
	Server ServerID // NoServer with ReasonFull
	Dist   float32  // graph distance from the viewer to the server
	Ties   int      // candidates at the minimal distance
	Reason Reason
	// Nearest is the distance to the nearest server carrying the stream
	// whatever its load (the primary included): what the viewer would get
	// if capacity were no object. It feeds the demand bonus.
	Nearest float32
}

// eligible reports whether server i can take one more viewer of a stream
// with bitrate kbps, and its headroom in (0, 1].
func (v *view) eligible(i ServerID, kbps int64) (float64, bool) {
	l := &v.load[i]
	if l.state.Load() != stateUp {
		return 0, false
	}
	info := &v.servers[i]
	head := 1.0
	if info.cap > 0 {
		n := l.viewers.Load() + (l.assigned.Load()+1)*(v.peers-1)
		if n >= info.cap || l.predicted.Load() >= info.cap {
			return 0, false
		}
		head = 1 - float64(n)/float64(info.cap)
	}
	if info.capKbps > 0 {
		k := l.kbps.Load()
		if k+kbps > info.capKbps {
			return 0, false
		}
		head = min(head, 1-float64(k)/float64(info.capKbps))
	}
	return max(head, 1e-9), true
}

// Choose picks the server for a viewer at vertex v who wants stream s.
// It allocates nothing. It does not account the viewer: call AddViewers
// when the viewer is actually sent there.
func (m *Mesh) Choose(v graph.VertexID, s StreamID, r Rand) Result {
	w := m.view.Load()
	row := w.table.Row(v)
	if row == nil || s < 0 || int(s) >= len(w.carriers) {
		if w.primary == NoServer {
			return Result{Server: NoServer, Dist: distance.Inf, Reason: ReasonFull}
		}
		if _, ok := w.eligible(w.primary, 0); !ok {
			return Result{Server: NoServer, Dist: distance.Inf, Reason: ReasonFull}
		}
		return Result{Server: w.primary, Dist: distance.Inf, Reason: ReasonUnknown}
	}
	cs := w.carriers[s]
	kbps := w.kbps[s]
	nearest := distance.Inf
	if w.primary != NoServer {
		nearest = row[w.servers[w.primary].dest]
	}
	gs := w.groups[s]
	for _, g := range gs {
		nearest = min(nearest, row[g.dest])
	}
	pick := w.pick
	if len(gs) <= maxGroups && len(cs) >= 4*len(gs) {
		pick = func(row []float32, _ []ServerID, kbps int64, reserve bool, r Rand, tol float64) (Result, bool) {
			return w.pickGrouped(row, gs, kbps, reserve, r, tol)
		}
	}
	if res, ok := pick(row, cs, kbps, false, r, m.cfg.TieTolerance); ok {
		res.Nearest = nearest
		// A viewer displaced by a server that is down (one nearer than the
		// regular choice): the reserve pool is there for that, and a
		// reserve carrier nearer than the regular choice takes it.
		if w.downs.Load() > 0 && w.downNearer(row, res.Dist) {
			if rr, ok := pick(row, cs, kbps, true, r, m.cfg.TieTolerance); ok && rr.Dist < res.Dist {
				rr.Reason, rr.Nearest = ReasonDisplaced, nearest
				return rr
			}
		}
		return res
	}
	if res, ok := pick(row, cs, kbps, true, r, m.cfg.TieTolerance); ok {
		res.Reason, res.Nearest = ReasonReserve, nearest
		return res
	}
	return Result{Server: NoServer, Dist: distance.Inf, Reason: ReasonFull, Nearest: nearest}
}

// pick chooses among the eligible candidates of one tier: regular carriers
// and the primary, or reserve carriers. One pass: the minimal distance so
// far, with weighted reservoir sampling among the candidates at it (each
// tied candidate replaces the pick with probability weight / total weight).
func (w *view) pick(row []float32, cs []ServerID, kbps int64, reserve bool, r Rand, tol float64) (Result, bool) {
	best := distance.Inf
	chosen := NoServer
	total, ties := 0.0, 0
	tol32 := float32(tol)
	for i := -1; i < len(cs); i++ {
		c := w.primary
		if i >= 0 {
			c = cs[i]
		} else if reserve || c == NoServer {
			continue
		}
		info := &w.servers[c]
		if (info.role == graph.RoleReserve) != reserve {
			continue
		}
		d := row[info.dest]
		if d > best+best*tol32 && chosen != NoServer {
			continue // farther than the best so far: skip the load check
		}
		head, ok := w.eligible(c, kbps)
		if !ok {
			continue
		}
		wt := info.weight * head
		switch {
		case chosen == NoServer || (d < best && (best == distance.Inf || d < best-best*tol32)):
			best, chosen, total, ties = d, c, wt, 1
		default: // a tie
			total += wt
			ties++
			if r.Float64()*total < wt {
				chosen = c
			}
		}
	}
	if chosen == NoServer {
		return Result{}, false
	}
	if best == distance.Inf {
		// Nothing reachable: the primary if it can take the viewer.
		if reserve || w.primary == NoServer {
			return Result{}, false
		}
		if _, ok := w.eligible(w.primary, kbps); !ok {
			return Result{}, false
		}
		return Result{Server: w.primary, Dist: best, Ties: 1, Reason: ReasonUnreachable}, true
	}
	reason := ReasonNearest
	if ties > 1 {
		reason = ReasonTie
	}
	return Result{Server: chosen, Dist: row[w.servers[chosen].dest], Ties: ties, Reason: reason}, true
}

// ChooseSticky keeps a viewer on the server its verified token names when
// that server is up, not draining, carries the stream and is below its hard
// limit; otherwise it chooses afresh. A provisional token keeps the viewer
// only while no nearer carrier can take it. Pass a zero Claims when there
// is no valid token.
func (m *Mesh) ChooseSticky(v graph.VertexID, s StreamID, c Claims, r Rand) Result {
	w := m.view.Load()
	if c.Server != "" && s >= 0 && int(s) < len(w.names) && c.Stream == w.names[s] {
		if id, ok := w.byID[c.Server]; ok && w.load[id].state.Load() == stateUp && w.carries(id, s) {
			info := &w.servers[id]
			if info.hard == 0 || w.load[id].viewers.Load() < info.hard {
				d := distance.Inf
				if row := w.table.Row(v); row != nil {
					d = row[info.dest]
				}
				if c.Provisional {
					if res := m.Choose(v, s, r); res.Server != NoServer && res.Dist < d {
						return res
					}
				}
				return Result{Server: id, Dist: d, Ties: 1, Reason: ReasonSticky}
			}
		}
	}
	return m.Choose(v, s, r)
}

// destGroup is the carriers of a stream at one location (destination index
// of the distance table): a choice looks at locations nearest first and at
// the servers of only the locations it needs, so its cost follows the
// number of locations carrying the stream, not of carriers.
type destGroup struct {
	dest    int32
	servers []ServerID
}

// maxGroups: with more locations carrying a stream, or fewer than four
// carriers per location on average, choices take the single pass over
// every carrier (pick), which is then as fast.
const maxGroups = 64

// groupsOf groups carriers by location, in order of first appearance.
func (v *view) groupsOf(cs []ServerID) []destGroup {
	var gs []destGroup
	for _, c := range cs {
		d := v.servers[c].dest
		found := false
		for i := range gs {
			if gs[i].dest == d {
				gs[i].servers = append(gs[i].servers, c)
				found = true
				break
			}
		}
		if !found {
			gs = append(gs, destGroup{dest: d, servers: []ServerID{c}})
		}
	}
	return gs
}

// pickGrouped is pick over carriers grouped by location: the nearest
// locations not yet ruled out (all those within the tie tolerance of the
// nearest, the primary's among them) are examined; if one of their servers
// is eligible, the choice is among those, weighted by weight × headroom;
// otherwise they are ruled out and the next nearest are examined.
func (w *view) pickGrouped(row []float32, gs []destGroup, kbps int64, reserve bool, r Rand, tol float64) (Result, bool) {
	var out uint64 // groups ruled out; bit 63 stands for the primary
	const primBit = uint64(1) << 63
	prim := w.primary
	if reserve || prim == NoServer {
		out |= primBit
	}
	tol32 := float32(tol)
	for {
		best := float32(math.Inf(1))
		any := false
		for i, g := range gs {
			if out&(1<<i) == 0 {
				best, any = min(best, row[g.dest]), true
			}
		}
		if out&primBit == 0 {
			best, any = min(best, row[w.servers[prim].dest]), true
		}
		if !any {
			return Result{}, false
		}
		within := func(d float32) bool { return d <= best+best*tol32 || d == best }
		// Pass 1: total weight of the eligible servers at the nearest
		// locations.
		total, ties := 0.0, 0
		for i, g := range gs {
			if out&(1<<i) != 0 || !within(row[g.dest]) {
				continue
			}
			for _, c := range g.servers {
				if (w.servers[c].role == graph.RoleReserve) != reserve {
					continue
				}
				if head, ok := w.eligible(c, kbps); ok {
					total += w.servers[c].weight * head
					ties++
				}
			}
		}
		primOK := false
		if out&primBit == 0 && within(row[w.servers[prim].dest]) && w.servers[prim].role != graph.RoleReserve {
			if head, ok := w.eligible(prim, kbps); ok {
				total += w.servers[prim].weight * head
				ties++
				primOK = true
			}
		}
		if ties == 0 {
			for i, g := range gs {
				if within(row[g.dest]) {
					out |= 1 << i
				}
			}
			if out&primBit == 0 && within(row[w.servers[prim].dest]) {
				out |= primBit
			}
			continue
		}
		if best == distance.Inf {
			// Nothing reachable: the primary if it can take the viewer.
			if reserve || prim == NoServer {
				return Result{}, false
			}
			if _, ok := w.eligible(prim, kbps); !ok {
				return Result{}, false
			}
			return Result{Server: prim, Dist: best, Ties: 1, Reason: ReasonUnreachable}, true
		}
		// Pass 2: the server at the drawn point of the cumulative weight.
		// Loads may move between the passes (other choices in flight): the
		// last eligible server seen is the fallback.
		x := r.Float64() * total
		chosen := NoServer
		acc := 0.0
		if primOK {
			if head, ok := w.eligible(prim, kbps); ok {
				chosen = prim
				acc += w.servers[prim].weight * head
			}
		}
	scan:
		for i, g := range gs {
			if acc > x && chosen != NoServer {
				break
			}
			if out&(1<<i) != 0 || !within(row[g.dest]) {
				continue
			}
			for _, c := range g.servers {
				if (w.servers[c].role == graph.RoleReserve) != reserve {
					continue
				}
				if head, ok := w.eligible(c, kbps); ok {
					chosen = c
					acc += w.servers[c].weight * head
					if acc > x {
						break scan
					}
				}
			}
		}
		if chosen == NoServer {
			continue
		}
		reason := ReasonNearest
		if ties > 1 {
			reason = ReasonTie
		}
		return Result{Server: chosen, Dist: row[w.servers[chosen].dest], Ties: ties, Reason: reason}, true
	}
}
