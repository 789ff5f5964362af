// Package demand decides where to open relays from viewer requests: the
// demand bonus. Each request for stream s from vertex v adds
// K / max(dist(v, L), Floor) to bonus[s][L] for every location L that could
// host s but does not and is nearer to v than the server v was given (an
// unreachable L gets nothing). Bonuses decay
// exponentially with a half-life, applied lazily from the time of the last
// update. When bonus[s][L] reaches Threshold the Tracker emits a decision to
// open a relay for s at L and resets the bonus.
package demand

import (
	"fmt"
	"math"
	"time"

	"github.com/relaymesh/relaymesh/topology/distance"
	"github.com/relaymesh/relaymesh/topology/graph"
)

// Config holds the demand parameters. Zero fields take the defaults.
type Config struct {
	// K is the bonus a single request adds at distance Floor or less.
	// Default 1.
	K float64
	// Threshold is the bonus at which a relay is opened. Default 50: with
	// K = 1, fifty nearby requests within about a half-life, or more from
	// farther away.
	Threshold float64
	// HalfLife is the time in which an untouched bonus halves. Default 60 s.
	HalfLife time.Duration
	// Floor is the smallest distance used in K/distance, so a viewer at the
	// location itself adds K/Floor rather than infinity. Default 1.
	Floor float64
	// DefaultCap is the most streams the tracker opens at one location
	// (counting those hosted there); 0 means no limit.
	DefaultCap int
	// Caps overrides DefaultCap per location id.
	Caps map[string]int
	// MaxStreams bounds the streams tracked. Default 100,000.
	MaxStreams int
}

// DefaultThreshold is Config.Threshold's default.
const DefaultThreshold = 50

func (c *Config) defaults() {
	if c.K <= 0 {
		c.K = 1
	}
	if c.Threshold <= 0 {
		c.Threshold = DefaultThreshold
	}
	if c.HalfLife <= 0 {
		c.HalfLife = time.Minute
	}
	if c.Floor <= 0 {
		c.Floor = 1
	}
	if c.MaxStreams <= 0 {
		c.MaxStreams = 100_000
	}
}

// Decision is "open a relay for Stream at Location".
type Decision struct {
	Stream   int
	Location graph.VertexID
	Bonus    float64
	Reason   string
}

type cell struct {
	value float64
	at    int64 // unix nanoseconds of the last update
}

type stream struct {
	cells  []cell
	hosted []bool
}

// Tracker accumulates demand bonuses. It is not safe for concurrent use:
// the orchestrator owns it and feeds it requests in order.
type Tracker struct {
	cfg       Config
	g         *graph.Graph
	table     *distance.Table
	candidate []bool // per destination: has relay servers and is not the primary's location
	caps      []int  // per destination, 0 = unlimited
	open      []int  // per destination: streams hosted there
	streams   []*stream
	lnHalf    float64 // ln 2 / half-life in ns
}

// New returns a tracker for the locations of table (usually the server
// locations of g) that have relay servers.
func New(cfg Config, g *graph.Graph, table *distance.Table) *Tracker {
	cfg.defaults()
	t := &Tracker{cfg: cfg, lnHalf: math.Ln2 / float64(cfg.HalfLife)}
	t.setTable(g, table)
	return t
}

func (t *Tracker) setTable(g *graph.Graph, table *distance.Table) {
	nd := table.NumDests()
	t.g, t.table = g, table
	t.candidate = make([]bool, nd)
	t.caps = make([]int, nd)
	for _, s := range g.Servers() {
		if j := table.DestIndex(s.Vertex); j >= 0 && s.Role == graph.RoleRelay {
			t.candidate[j] = true
		}
	}
	if p := g.Primary(); p >= 0 {
		if j := table.DestIndex(g.Servers()[p].Vertex); j >= 0 {
			t.candidate[j] = false // the primary hosts every stream there
		}
	}
	for j := range nd {
		t.caps[j] = t.cfg.DefaultCap
		if c, ok := t.cfg.Caps[g.Location(table.Dest(j)).ID]; ok {
			t.caps[j] = c
		}
	}
}

// SetTable switches to a new graph and table, keeping the bonuses and hosted
// marks of locations present in both.
func (t *Tracker) SetTable(g *graph.Graph, table *distance.Table) {
	oldTable, oldG := t.table, t.g
	old := t.streams
	t.setTable(g, table)
	t.open = make([]int, table.NumDests())
	t.streams = make([]*stream, len(old))
	for s, st := range old {
		if st == nil {
			continue
		}
		ns := t.stream(s)
		for j := range st.cells {
			id := oldG.Location(oldTable.Dest(j)).ID
			v, ok := g.Vertex(id)
			if !ok {
				continue
			}
			if k := table.DestIndex(v); k >= 0 {
				ns.cells[k] = st.cells[j]
				if st.hosted[j] {
					ns.hosted[k] = true
					t.open[k]++
				}
			}
		}
	}
}

func (t *Tracker) stream(s int) *stream {
	if s >= len(t.streams) {
		t.streams = append(t.streams, make([]*stream, s+1-len(t.streams))...)
	}
	st := t.streams[s]
	if st == nil {
		nd := t.table.NumDests()
		st = &stream{cells: make([]cell, nd), hosted: make([]bool, nd)}
		t.streams[s] = st
		if len(t.open) != nd {
			t.open = make([]int, nd)
		}
	}
	return st
}

func (t *Tracker) decay(c cell, now int64) float64 {
	if c.value == 0 || now <= c.at {
		return c.value
	}
	return c.value * math.Exp(-float64(now-c.at)*t.lnHalf)
}

// Observe records one request for stream s (a dense id ≥ 0 below
// MaxStreams) from vertex v at time now, and appends to dst a decision for
// every location whose bonus crossed the threshold. Such a location is
// marked hosted until SetHosted says otherwise.
//
// served is the distance from v to the server the viewer was given
// (distance.Inf when none could take it): only locations nearer than that
// gather bonus, since a relay farther away than the viewer's server would
// serve nobody better. Pass distance.Inf for the plain rule.
func (t *Tracker) Observe(now time.Time, s int, v graph.VertexID, served float32, dst []Decision) []Decision {
	return t.ObserveN(now, s, v, 1, served, dst)
}

// ObserveN records n simultaneous requests (a batch of retries, say): the
// bonus grows by n·K/distance, and each location yields at most one
// decision.
func (t *Tracker) ObserveN(now time.Time, s int, v graph.VertexID, n float64, served float32, dst []Decision) []Decision {
	row := t.table.Row(v)
	if row == nil || s < 0 || s >= t.cfg.MaxStreams || !(n > 0) || math.IsInf(n, 0) {
		return dst
	}
	k := n * t.cfg.K
	st := t.stream(s)
	ns := now.UnixNano()
	for j, d := range row {
		if d == distance.Inf || d >= served || !t.candidate[j] || st.hosted[j] || (t.caps[j] > 0 && t.open[j] >= t.caps[j]) {
			continue
		}
		c := &st.cells[j]
		c.value = t.decay(*c, ns) + k/math.Max(float64(d), t.cfg.Floor)
		c.at = ns
		if c.value >= t.cfg.Threshold {
			loc := t.table.Dest(j)
			dst = append(dst, Decision{
				Stream: s, Location: loc, Bonus: c.value,
				Reason: fmt.Sprintf("demand bonus %.1f at %s reached the threshold %.1f (last request from %s at distance %.2f)",
					c.value, t.g.Location(loc).ID, t.cfg.Threshold, t.g.Location(v).ID, d),
			})
			c.value = 0
			st.hosted[j] = true
			t.open[j]++
		}
	}
	return dst
}

// Bonus returns the current (decayed) bonus of stream s at location v.
func (t *Tracker) Bonus(now time.Time, s int, v graph.VertexID) float64 {
	j := t.table.DestIndex(v)
	if j < 0 || s < 0 || s >= len(t.streams) || t.streams[s] == nil {
		return 0
	}
	return t.decay(t.streams[s].cells[j], now.UnixNano())
}

// Each calls fn for every location of stream s that gathers bonus and
// holds at least min of it at now, with the bonus as of its last update
// (value at at; it decays from there): what a leader saves for the next.
func (t *Tracker) Each(now time.Time, s int, min float64, fn func(v graph.VertexID, value float64, at time.Time)) {
	if s < 0 || s >= len(t.streams) || t.streams[s] == nil {
		return
	}
	st := t.streams[s]
	ns := now.UnixNano()
	for j, c := range st.cells {
		if c.value == 0 || st.hosted[j] || t.decay(c, ns) < min {
			continue
		}
		fn(t.table.Dest(j), c.value, time.Unix(0, c.at))
	}
}

// Restore adds to stream s at location v a bonus that was value at time
// at (saved by an earlier leader); it decays from then on like any other.
// Locations that gather no bonus, or host s, are left alone.
func (t *Tracker) Restore(s int, v graph.VertexID, value float64, at time.Time) {
	j := t.table.DestIndex(v)
	if j < 0 || s < 0 || s >= t.cfg.MaxStreams || !t.candidate[j] || !(value > 0) || math.IsInf(value, 0) {
		return
	}
	st := t.stream(s)
	if st.hosted[j] {
		return
	}
	c := &st.cells[j]
	ns := at.UnixNano()
	if ns >= c.at {
		c.value = t.decay(*c, ns) + value
		c.at = ns
	} else {
		c.value += t.decay(cell{value: value, at: ns}, c.at)
	}
}

// SetHosted records that stream s is (or is no longer) hosted at location
// v, e.g. when a relay opens, fails to open or closes. A hosted location
// gathers no bonus for s.
func (t *Tracker) SetHosted(s int, v graph.VertexID, hosted bool) {
	j := t.table.DestIndex(v)
	if j < 0 || s < 0 || s >= t.cfg.MaxStreams {
		return
	}
	st := t.stream(s)
	if st.hosted[j] == hosted {
		return
	}
	st.hosted[j] = hosted
	if hosted {
		t.open[j]++
	} else {
		t.open[j]--
		st.cells[j] = cell{}
	}
}

// Forget drops the state of a stream that ended.
func (t *Tracker) Forget(s int) {
	if s < 0 || s >= len(t.streams) || t.streams[s] == nil {
		return
	}
	for j, h := range t.streams[s].hosted {
		if h {
			t.open[j]--
		}
	}
	t.streams[s] = nil
}

// String describes a decision.
func (d Decision) String() string { return d.Reason }
