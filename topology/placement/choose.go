package placement

import (
	"github.com/relaymesh/relaymesh/topology/distance"
	"github.com/relaymesh/relaymesh/topology/graph"
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
)

var reasonText = [...]string{
	ReasonNearest:     "nearest server carrying the stream",
	ReasonTie:         "weighted random among the nearest servers carrying the stream",
	ReasonReserve:     "regular servers full: overflow to the reserve pool",
	ReasonUnreachable: "no server carrying the stream is reachable: the primary",
	ReasonSticky:      "sticky: the viewer's assignment token is still good",
	ReasonFull:        "every server that could take the viewer is at capacity",
	ReasonUnknown:     "unknown stream or location: the primary",
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
	for _, c := range cs {
		nearest = min(nearest, row[w.servers[c].dest])
	}
	if res, ok := w.pick(row, cs, kbps, false, r, m.cfg.TieTolerance); ok {
		res.Nearest = nearest
		return res
	}
	if res, ok := w.pick(row, cs, kbps, true, r, m.cfg.TieTolerance); ok {
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
// limit; otherwise it chooses afresh. Pass a zero Claims when there is no
// valid token.
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
				return Result{Server: id, Dist: d, Ties: 1, Reason: ReasonSticky}
			}
		}
	}
	return m.Choose(v, s, r)
}
