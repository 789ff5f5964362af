// Package controller is the one place where the mesh's relay decisions are
// taken: it turns events (demand batches, relay statuses, a relay ready,
// failed or silent, the end of a stream, clock ticks) into decisions (open,
// drain or close relay X of stream S at location L with parent P, and
// why). It runs the demand bonus (topology/demand) and the per-region
// scaler (topology/scaling) and keeps the relays of every stream with
// their parent and state.
//
// It is pure: no bus, no HTTP, no clock of its own — time comes in with
// every event. The orchestrator drives it from the bus and the simulator
// (loadtest/sim) from a scenario, so both run the same decisions. It is
// not safe for concurrent use: one goroutine owns it.
package controller

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/relaymesh/relaymesh/topology/demand"
	"github.com/relaymesh/relaymesh/topology/distance"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/scaling"
)

// Config tunes a controller. Zero fields take the documented defaults.
type Config struct {
	// Demand and Scaling are the topology parameters (docs/topology.md).
	Demand  demand.Config
	Scaling scaling.Config
	// FanOut is how many relays of one stream may pull from one server
	// (primary or relay) before the next relay goes to another parent.
	// Default 4.
	FanOut int
	// StatusTTL: a relay silent for longer is marked down at the next
	// tick. Default 10 s.
	StatusTTL time.Duration
	// MaxStreams bounds the streams tracked. Default 10,000.
	MaxStreams int
	// EndGrace is how long after the primary reports a stream unpublished
	// its relays are closed and its demand forgotten, unless it is
	// published again meanwhile (a publisher reconnecting). Default 30 s.
	EndGrace time.Duration
	// Replace is how long after its last demand a stream still counts as
	// watched, so that a relay coming back after dying is placed again for
	// the streams it carried. Default the demand half-life (60 s).
	Replace time.Duration
	// Pressure is the share of one relay's worth of viewers (High ×
	// capacity) that, served farther away while a location's relays are
	// full, opens one more relay there (docs/topology.md, "Pressure").
	// Default 0.5.
	Pressure float64
}

func (c *Config) defaults() {
	if c.FanOut <= 0 {
		c.FanOut = 4
	}
	if c.StatusTTL <= 0 {
		c.StatusTTL = 10 * time.Second
	}
	if c.MaxStreams <= 0 {
		c.MaxStreams = 10000
	}
	if c.EndGrace <= 0 {
		c.EndGrace = 30 * time.Second
	}
	if c.Pressure <= 0 || c.Pressure > 1 {
		c.Pressure = 0.5
	}
	if c.Replace <= 0 {
		c.Replace = c.Demand.HalfLife
		if c.EndGrace <= 0 {
			c.EndGrace = 30 * time.Second
		}
		if c.Replace <= 0 {
			c.Replace = time.Minute
		}
	}
}

// Action is what a decision does.
type Action uint8

// Actions. Open, Drain and Close ask the caller to act on a relay; Ready,
// Failed and Down record what happened to one (the caller persists them).
const (
	Open   Action = iota + 1 // start relay Server of Stream, pulling from Parent
	Drain                    // send no new viewers to it; move its viewers away
	Close                    // stop the relay
	Ready                    // the relay serves
	Failed                   // the relay could not start and is forgotten
	Down                     // the server went silent; its relays are forgotten
	Forget                   // the stream ended: its relays are closed, its demand forgotten
)

func (a Action) String() string {
	switch a {
	case Open:
		return "open"
	case Drain:
		return "drain"
	case Close:
		return "close"
	case Ready:
		return "ready"
	case Failed:
		return "failed"
	case Down:
		return "down"
	case Forget:
		return "forget"
	}
	return "none"
}

// Decision is one step for the caller to carry out or record.
type Decision struct {
	Action   Action
	Stream   int // stream id; -1 for Down
	Server   int // index in the graph's Servers
	Location graph.VertexID
	Parent   int // Open: server index the relay pulls from
	Reason   string
}

func (d Decision) String() string { return d.Action.String() + ": " + d.Reason }

// State is a relay's state.
type State uint8

// Relay states.
const (
	Opening State = iota + 1
	Serving
	Draining
)

func (s State) String() string {
	switch s {
	case Opening:
		return "opening"
	case Serving:
		return "ready"
	case Draining:
		return "draining"
	}
	return "none"
}

// Relay is one relay of a stream as the controller knows it.
type Relay struct {
	Server int
	Parent int
	State  State
	Since  time.Time
}

// Load is what a server reports for one stream it carries.
type Load struct {
	Stream  string
	Viewers float64 // every protocol
	Mbps    float64 // sent to those viewers; with Viewers, the stream's bitrate
	// HTTPViewers is the part of Viewers on HLS or DASH: a draining relay
	// is not closed under them (they have no connection to move).
	HTTPViewers float64
}

type stream struct {
	id         int
	name       string
	relays     map[int]*Relay
	lastDemand time.Time
	bitrate    float64 // Mbit/s per viewer, from the first status reporting it
	// near caches, per vertex, the distance to the nearest committed
	// carrier (opening or serving); valid while nearGen == gen.
	near    []float32
	nearGen uint64
	gen     uint64
}

// Controller holds the decision state of the mesh.
type Controller struct {
	cfg     Config
	g       *graph.Graph
	table   *distance.Table
	tracker *demand.Tracker
	scaler  *scaling.Scaler
	byName  map[string]*stream
	byID    []*stream
	seen    []time.Time // per server: last status
	period  []float64   // per server: its status interval, seconds (EWMA of the gaps; 0: not known yet)
	jitter  []float64   // per server: the gaps' mean deviation from period, seconds (EWMA)
	loads   [][]Load    // per server: last status's streams
	down    []bool
	carried []map[int]float64 // per server down: stream → viewers it had
	back    []map[int]float64 // per server back (within Replace): what it carried when it went down
	backAt  []time.Time
	dec     []demand.Decision
	sdec    []scaling.Decision
	samples []scaling.Sample
	destOf  []int   // per server: destination index of its location
	near    [][]int // per vertex: the nearest relay-pool destinations, nearest first (small graphs)
	nearBuf []int   // nearPools' buffer on large graphs
	pool    []bool  // per destination: has relay servers
	poolSrv [][]int // per destination: its relay servers
	press   map[[2]int]*pressureCell
	locs    map[[2]int]*locLoad // (stream, dest) → load and capacity of its relays there
	free    map[[2]int]bool     // (stream, dest) → its pool has a free server (this tick)
	lnHalf  float64
	autoH   bool    // the horizon follows the measured start-up time
	startup float64 // EWMA of relay start-up times, seconds (0: none yet)
	// the last startupWindow start-up times, seconds (a ring; nStartups
	// counts every one measured)
	startups  []float64
	sorted    []float64 // scratch for foldStartup
	nStartups int
	ended     map[int]time.Time // stream id → when it was reported unpublished
}

// New returns a controller for the servers of g.
func New(cfg Config, g *graph.Graph) *Controller {
	cfg.defaults()
	table := distance.Build(g, distance.ServerLocations(g))
	n := len(g.Servers())
	c := &Controller{cfg: cfg, g: g, table: table,
		tracker: demand.New(cfg.Demand, g, table),
		scaler:  scaling.New(cfg.Scaling, g),
		byName:  map[string]*stream{},
		seen:    make([]time.Time, n), period: make([]float64, n), jitter: make([]float64, n), loads: make([][]Load, n), down: make([]bool, n),
		carried: make([]map[int]float64, n), back: make([]map[int]float64, n), backAt: make([]time.Time, n), destOf: make([]int, n), ended: map[int]time.Time{}}
	for i, s := range g.Servers() {
		c.destOf[i] = table.DestIndex(s.Vertex)
	}
	c.scaler.SetDistance(func(from, to graph.VertexID) float32 {
		if j := table.DestIndex(to); j >= 0 {
			return table.Dist(from, j)
		}
		return distance.Inf
	})
	c.autoH = cfg.Scaling.Horizon <= 0
	c.initPressure()
	return c
}

// Graph returns the graph the controller works on.
func (c *Controller) Graph() *graph.Graph { return c.g }

// Table returns the distance table to the server locations.
func (c *Controller) Table() *distance.Table { return c.table }

// Stream returns the id of the stream named name, creating it; ok is false
// at the MaxStreams bound.
func (c *Controller) Stream(name string) (int, bool) {
	if s := c.byName[name]; s != nil {
		return s.id, true
	}
	if len(c.byID) >= c.cfg.MaxStreams {
		return -1, false
	}
	s := &stream{id: len(c.byID), name: name, relays: map[int]*Relay{}}
	c.byName[name] = s
	c.byID = append(c.byID, s)
	c.scaler.SetStreamName(s.id, name)
	return s.id, true
}

// Lookup returns the id of a known stream.
func (c *Controller) Lookup(name string) (int, bool) {
	if s := c.byName[name]; s != nil {
		return s.id, true
	}
	return -1, false
}

// Name returns a stream's name.
func (c *Controller) Name(id int) string {
	if id < 0 || id >= len(c.byID) {
		return ""
	}
	return c.byID[id].name
}

// Streams returns the number of streams known.
func (c *Controller) Streams() int { return len(c.byID) }

// Relays returns the relays of stream id sorted by server.
func (c *Controller) Relays(id int) []Relay {
	if id < 0 || id >= len(c.byID) {
		return nil
	}
	out := make([]Relay, 0, len(c.byID[id].relays))
	for _, r := range c.byID[id].relays {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Server < out[j].Server })
	return out
}

// Carries reports whether server has a relay of any stream.
func (c *Controller) Carries(server int) bool {
	for _, s := range c.byID {
		if _, ok := s.relays[server]; ok {
			return true
		}
	}
	return false
}

// IsDown reports whether the server is marked down.
func (c *Controller) IsDown(server int) bool { return c.down[server] }

// Predicted is the load predicted for a server at the scaling horizon
// (placement's capacity check: Mesh.SetPredicted).
func (c *Controller) Predicted(server int) float64 { return c.scaler.Predicted(server) }

// Bonus returns the current demand bonus of stream id at location v.
func (c *Controller) Bonus(now time.Time, id int, v graph.VertexID) float64 {
	return c.tracker.Bonus(now, id, v)
}

// EachBonus calls fn for the bonuses of stream id holding at least min
// (what a leader saves for the next).
func (c *Controller) EachBonus(now time.Time, id int, min float64, fn func(v graph.VertexID, value float64, at time.Time)) {
	c.tracker.Each(now, id, min, fn)
}

// RestoreBonus adds a saved bonus (see demand.Tracker.Restore).
func (c *Controller) RestoreBonus(id int, v graph.VertexID, value float64, at time.Time) {
	c.tracker.Restore(id, v, value, at)
}

// Threshold is the demand threshold in effect.
func (c *Controller) Threshold() float64 {
	if t := c.cfg.Demand.Threshold; t > 0 {
		return t
	}
	return demand.DefaultThreshold
}

func (c *Controller) srvID(i int) string { return c.g.Servers()[i].ID }

// committed is the distance from v to the nearest relay of s that is
// opening or serving (the primary included): a starting relay counts as a
// carrier for the demand rule, so the bonus does not open a second relay
// farther away while the first is starting.
func (c *Controller) committed(s *stream, v graph.VertexID) float32 {
	if c.g.NumVertices() > maxNearCache {
		return c.committedNow(s, v)
	}
	if s.near == nil || s.nearGen != s.gen {
		if s.near == nil {
			s.near = make([]float32, c.g.NumVertices())
		}
		for i := range s.near {
			s.near[i] = -1
		}
		s.nearGen = s.gen
	}
	if int(v) >= len(s.near) {
		return distance.Inf
	}
	if d := s.near[v]; d >= 0 {
		return d
	}
	d := c.committedNow(s, v)
	s.near[v] = d
	return d
}

// maxNearCache: on larger graphs the per-stream, per-vertex cache of
// committed distances is not kept (it would take 4 bytes per vertex and
// stream).
const maxNearCache = 1 << 16

// committedNow computes committed without the cache.
func (c *Controller) committedNow(s *stream, v graph.VertexID) float32 {
	d := distance.Inf
	if p := c.g.Primary(); p >= 0 && c.destOf[p] >= 0 {
		d = c.table.Dist(v, c.destOf[p])
	}
	for srv, r := range s.relays {
		if r.State == Draining || c.destOf[srv] < 0 {
			continue
		}
		d = min(d, c.table.Dist(v, c.destOf[srv]))
	}
	return d
}

// Demand takes n requests for stream id from vertex v; nearest is the
// distance to the server the viewers were given (distance.Inf when none
// could take them). It appends the relays to open.
func (c *Controller) Demand(now time.Time, id int, v graph.VertexID, n float64, nearest float32, dst []Decision) []Decision {
	return c.demand(now, id, v, n, 0, nearest, dst)
}

// demand is Demand with full of the n requests turned away (no server
// could take them). Those viewers wait and ask again: the scaler counts
// them as waiting in their region (Scaler.UnservedAt), and they are no
// pressure at their location (each retry would count again).
func (c *Controller) demand(now time.Time, id int, v graph.VertexID, n, full float64, nearest float32, dst []Decision) []Decision {
	if id < 0 || id >= len(c.byID) || v < 0 || int(v) >= c.g.NumVertices() {
		return dst
	}
	s := c.byID[id]
	s.lastDemand = now
	served := min(nearest, c.committed(s, v))
	c.dec = c.tracker.ObserveN(now, id, v, n, served, c.dec[:0])
	for _, d := range c.dec {
		sd, ok := c.scaler.OpenAt(now, id, d.Location, d.Reason)
		if !ok {
			c.tracker.SetHosted(id, d.Location, false)
			continue
		}
		dst = c.open(now, s, sd, dst)
	}
	// Where the stream's viewers are: a region's growth is its viewers'
	// share of the requests (the scaler's ServedAt), whichever region's
	// relays serve them.
	c.scaler.ServedAt(id, v, n-full)
	return c.pressure(now, s, v, n-full, dst)
}

// open records a new relay and appends its Open decision.
func (c *Controller) open(now time.Time, s *stream, d scaling.Decision, dst []Decision) []Decision {
	if _, ok := s.relays[d.Server]; ok {
		return dst
	}
	p := c.parent(d.Server, s)
	s.relays[d.Server] = &Relay{Server: d.Server, Parent: p, State: Opening, Since: now}
	s.gen++
	if j := c.destOf[d.Server]; j >= 0 {
		k := [2]int{s.id, j}
		l := c.locs[k]
		if l == nil {
			l = &locLoad{}
			c.locs[k] = l
		}
		cp := c.scaler.Capacity(d.Server, s.id)
		l.capacity += cp
		l.perRelay = max(l.perRelay, cp)
	}
	c.tracker.SetHosted(s.id, c.g.Servers()[d.Server].Vertex, true)
	return append(dst, Decision{Action: Open, Stream: s.id, Server: d.Server, Location: d.Location, Parent: p, Reason: d.Reason})
}

// parent chooses where a new relay of s on server srv pulls from: the
// primary while it has fan-out room, else the nearest serving relay of s
// with room, else the primary anyway.
func (c *Controller) parent(srv int, s *stream) int {
	prim := c.g.Primary()
	children := map[int]int{}
	for _, r := range s.relays {
		children[r.Parent]++
	}
	if children[prim] < c.cfg.FanOut {
		return prim
	}
	v := c.g.Servers()[srv].Vertex
	best, bestD := prim, float32(math.Inf(1))
	ids := make([]int, 0, len(s.relays))
	for id := range s.relays {
		ids = append(ids, id)
	}
	sort.Ints(ids) // deterministic among equal distances
	for _, id := range ids {
		r := s.relays[id]
		if id == srv || r.State != Serving || c.down[id] || children[id] >= c.cfg.FanOut || c.destOf[id] < 0 {
			continue
		}
		if d := c.table.Dist(v, c.destOf[id]); d < bestD {
			best, bestD = id, d
		}
	}
	return best
}

// Gone marks relay server down now, for why: its process is known to be
// gone (its bus connection closed and its listener refuses), so the
// controller need not wait for its statuses to stop for StatusTTL. A
// status of it later brings it back, as after a silence.
func (c *Controller) Gone(server int, why string, dst []Decision) []Decision {
	if server < 0 || server >= len(c.seen) || c.down[server] || c.g.Servers()[server].Role == graph.RolePrimary {
		return dst
	}
	return c.markDown(server, why, dst)
}

// markDown takes server i out: the streams it carried (remembered to place
// it again when it is back), its loads, its capacity.
func (c *Controller) markDown(i int, why string, dst []Decision) []Decision {
	c.down[i] = true
	carried := map[int]float64{}
	for _, s := range c.byID {
		if _, ok := s.relays[i]; ok {
			carried[s.id] = c.viewers(i, s.name)
			c.remove(s, i)
		}
	}
	c.carried[i] = carried
	c.loads[i] = c.loads[i][:0]
	c.scaler.SetDown(i, true)
	return append(dst, Decision{Action: Down, Stream: -1, Server: i, Location: c.g.Servers()[i].Vertex, Parent: -1, Reason: why})
}

// Status records a server's report at now with the viewers of each stream
// it carries. A server that was down is back: it is placed again for the
// streams it carried when it went silent, if they still have viewers and
// demand (Config.Replace).
func (c *Controller) Status(now time.Time, server int, loads []Load, dst []Decision) []Decision {
	if server < 0 || server >= len(c.seen) {
		return dst
	}
	if prev := c.seen[server]; !prev.IsZero() && !c.down[server] {
		if gap := now.Sub(prev).Seconds(); gap > 0 {
			if c.period[server] == 0 {
				c.period[server] = gap
			} else {
				c.jitter[server] = 0.75*c.jitter[server] + 0.25*math.Abs(gap-c.period[server])
				c.period[server] = 0.8*c.period[server] + 0.2*gap
			}
		}
	}
	c.seen[server] = now
	c.loads[server] = append(c.loads[server][:0], loads...)
	for _, l := range loads {
		if l.Viewers > 0 && l.Mbps > 0 {
			if s := c.byName[l.Stream]; s != nil && s.bitrate == 0 {
				// The first report fixes the bitrate (capacity in Mbit/s
				// over bitrate is a relay's capacity in viewers).
				s.bitrate = l.Mbps / l.Viewers
				c.scaler.SetBitrate(s.id, s.bitrate)
			}
		}
	}
	if !c.down[server] {
		return dst
	}
	c.down[server] = false
	c.scaler.SetDown(server, false)
	carried := c.carried[server]
	c.carried[server] = nil
	c.back[server], c.backAt[server] = carried, now
	ids := make([]int, 0, len(carried))
	for id := range carried {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		s := c.byID[id]
		if carried[id] <= 0 || s.lastDemand.IsZero() || now.Sub(s.lastDemand) > c.cfg.Replace {
			continue
		}
		if _, ok := s.relays[server]; ok {
			continue
		}
		load, room, lost := c.returning(now, s, server)
		if load+lost <= c.high()*room {
			continue // the relays there already hold what its servers carried
		}
		why := fmt.Sprintf("server %s is back; it carried the stream with %.0f viewers when it went silent and the stream had demand %s ago; its location's servers that went down carried %.0f, its relays hold %.0f and have room for %.0f below the high watermark",
			c.srvID(server), carried[id], now.Sub(s.lastDemand).Round(time.Second), lost, load, c.high()*room-load)
		sd, ok := c.scaler.OpenOn(now, id, server, why)
		if !ok {
			continue
		}
		dst = c.open(now, s, sd, dst)
	}
	return dst
}

// returning sums, at the location of server (coming back), the viewers of
// s its relays hold and their capacity (opening ones included: the
// servers back before it), and the viewers of s that the location's
// servers carried when they went down (those still down, and those back
// within Replace). A server back is placed again for s only while the
// location's relays cannot hold what its servers carried: after a region's
// outage as many relays return as its viewers need, not every server that
// had a relay of the stream (relays that return live the minimum lifetime).
func (c *Controller) returning(now time.Time, s *stream, server int) (load, room, lost float64) {
	j := c.destOf[server]
	if j < 0 {
		return 0, 0, math.Inf(1)
	}
	for srv, r := range s.relays {
		if c.destOf[srv] != j || r.State == Draining {
			continue
		}
		load += c.viewers(srv, s.name)
		room += c.scaler.Capacity(srv, s.id)
	}
	for srv := range c.g.Servers() {
		if c.destOf[srv] != j {
			continue
		}
		switch {
		case c.down[srv] && c.carried[srv] != nil:
			lost += c.carried[srv][s.id]
		case c.back[srv] != nil && now.Sub(c.backAt[srv]) <= c.cfg.Replace:
			lost += c.back[srv][s.id]
		}
	}
	return load, room, lost
}

// Ready records that relay server of stream id serves.
func (c *Controller) Ready(now time.Time, server, id int, dst []Decision) []Decision {
	if id < 0 || id >= len(c.byID) {
		return dst
	}
	s := c.byID[id]
	r := s.relays[server]
	if r == nil || r.State != Opening {
		return dst
	}
	c.measureStartup(now.Sub(r.Since))
	r.State, r.Since = Serving, now
	s.gen++
	c.scaler.Ready(server, id)
	return append(dst, Decision{Action: Ready, Stream: id, Server: server, Location: c.g.Servers()[server].Vertex, Parent: r.Parent,
		Reason: fmt.Sprintf("relay of %s on %s serves", s.name, c.srvID(server))})
}

// measureStartup folds one relay's start-up time into the average and,
// unless Scaling.Horizon is set, matches the predictor's horizons to it:
// the load a new relay must take is the load when it is ready. The
// servers' predicted loads (placement's capacity check) look 1.2 × the
// running average + 2 s ahead (between 5 s and 2 min); each stream's
// growth looks as far ahead as the relays opened for it take to be ready
// together (Scaler.SetStartup: from the mean, spread and longest of the
// last startupWindow start-ups and the stream's growth rate).
func (c *Controller) measureStartup(d time.Duration) {
	if d < 0 {
		return
	}
	if c.startup == 0 {
		c.startup = d.Seconds()
	} else {
		c.startup = 0.8*c.startup + 0.2*d.Seconds()
	}
	if c.autoH {
		h := time.Duration((1.2*c.startup + 2) * float64(time.Second))
		c.scaler.SetHorizon(min(max(h, 5*time.Second), 2*time.Minute))
		c.scaler.SetStartup(c.foldStartup(d.Seconds()))
	}
}

// startupWindow is how many of the latest start-up times the streams'
// horizons are taken from: many, so that the order a burst of relays
// becomes ready in (the fast ones first) does not sway their mean.
const startupWindow = 128

// foldStartup adds one start-up time (seconds) to the window and returns
// the window's mean, spread (half the mean absolute difference of two
// start-ups) and longest, for Scaler.SetStartup.
func (c *Controller) foldStartup(d float64) (mean, spread, longest time.Duration) {
	if len(c.startups) < startupWindow {
		c.startups = append(c.startups, d)
	} else {
		c.startups[c.nStartups%startupWindow] = d
	}
	c.nStartups++
	xs := append(c.sorted[:0], c.startups...)
	slices.Sort(xs)
	c.sorted = xs
	n := float64(len(xs))
	sum, diff := 0.0, 0.0
	for i, x := range xs {
		sum += x
		diff += x * (2*float64(i) - n + 1) // Σ over pairs of the larger minus the smaller
	}
	sec := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	if len(xs) > 1 {
		spread = sec(diff / (n * (n - 1) / 2) / 2)
	}
	return sec(sum / n), spread, sec(xs[len(xs)-1])
}

// Horizon is the scaler's prediction horizon in effect.
func (c *Controller) Horizon() time.Duration { return c.scaler.Horizon() }

// Failed records that relay server of stream id could not start.
func (c *Controller) Failed(now time.Time, server, id int, why string, dst []Decision) []Decision {
	if id < 0 || id >= len(c.byID) {
		return dst
	}
	s := c.byID[id]
	r := s.relays[server]
	if r == nil || r.State != Opening {
		return dst
	}
	c.remove(s, server)
	c.scaler.Failed(server, id)
	return append(dst, Decision{Action: Failed, Stream: id, Server: server, Location: c.g.Servers()[server].Vertex, Parent: r.Parent, Reason: why})
}

// remove forgets a relay and unmarks its location when no relay of the
// stream remains there.
func (c *Controller) remove(s *stream, srv int) {
	delete(s.relays, srv)
	s.gen++
	v := c.g.Servers()[srv].Vertex
	for id := range s.relays {
		if c.g.Servers()[id].Vertex == v {
			return
		}
	}
	c.tracker.SetHosted(s.id, v, false)
}

// Adopt takes over an existing relay (a new leader restoring the
// placements): the scaler accounts it and its location gathers no more
// bonus. ok is false when the server cannot take it.
func (c *Controller) Adopt(now time.Time, server, id, parent int, state State, since time.Time) bool {
	if id < 0 || id >= len(c.byID) || server < 0 || server >= len(c.seen) {
		return false
	}
	s := c.byID[id]
	if _, ok := c.scaler.OpenOn(now, id, server, "restored"); !ok {
		return false
	}
	if parent < 0 {
		parent = c.g.Primary()
	}
	s.relays[server] = &Relay{Server: server, Parent: parent, State: state, Since: since}
	s.gen++
	c.tracker.SetHosted(id, c.g.Servers()[server].Vertex, true)
	if state != Opening {
		c.scaler.Ready(server, id)
	}
	return true
}

// End closes every relay of stream id and forgets its demand (the stream
// ended on the primary).
func (c *Controller) End(now time.Time, id int, why string, dst []Decision) []Decision {
	if id < 0 || id >= len(c.byID) {
		return dst
	}
	s := c.byID[id]
	srvs := make([]int, 0, len(s.relays))
	for srv := range s.relays {
		srvs = append(srvs, srv)
	}
	sort.Ints(srvs)
	for _, srv := range srvs {
		dst = append(dst, Decision{Action: Close, Stream: id, Server: srv, Location: c.g.Servers()[srv].Vertex, Parent: s.relays[srv].Parent, Reason: why})
		c.scaler.Failed(srv, id) // the scaler forgets the relay
		c.remove(s, srv)
	}
	c.tracker.Forget(id)
	s.lastDemand = time.Time{}
	return append(dst, Decision{Action: Forget, Stream: id, Server: -1, Location: -1, Parent: -1, Reason: why})
}

// Tick closes the relays of streams ended for EndGrace, marks the servers
// silent for StatusTTL down, then runs the scaler on the last reported
// loads and appends its decisions.
func (c *Controller) Tick(now time.Time, dst []Decision) []Decision {
	if len(c.ended) > 0 {
		ids := make([]int, 0, len(c.ended))
		for id := range c.ended {
			ids = append(ids, id)
		}
		sort.Ints(ids)
		for _, id := range ids {
			at := c.ended[id]
			if now.Sub(at) < c.cfg.EndGrace {
				continue
			}
			delete(c.ended, id)
			dst = c.End(now, id, "the stream ended on the primary "+now.Sub(at).Round(time.Second).String()+" ago", dst)
		}
	}
	for i, sv := range c.g.Servers() {
		if sv.Role == graph.RolePrimary || c.down[i] {
			continue
		}
		if c.seen[i].IsZero() && !c.Carries(i) {
			continue // never seen and carries nothing: nothing to do yet
		}
		if !c.seen[i].IsZero() && now.Sub(c.seen[i]) < c.cfg.StatusTTL {
			continue
		}
		dst = c.markDown(i, "no status for "+c.cfg.StatusTTL.String(), dst)
	}
	c.measureLocations()
	c.samples = c.samples[:0]
	prim := c.g.Primary()
	// A relay's children (relays pulling the stream from it) count against
	// its capacity like viewers: each is one more copy of the stream sent.
	children := map[int]float64{}
	for _, s := range c.byID {
		clear(children)
		for _, r := range s.relays {
			children[r.Parent]++
		}
		if prim >= 0 && !c.seen[prim].IsZero() {
			c.samples = append(c.samples, scaling.Sample{Server: prim, Stream: s.id, Viewers: c.viewers(prim, s.name) + children[prim], Overdue: c.overdue(now, prim)})
		}
		srvs := make([]int, 0, len(s.relays))
		for srv := range s.relays {
			srvs = append(srvs, srv)
		}
		sort.Ints(srvs)
		for _, srv := range srvs {
			if c.seen[srv].IsZero() {
				continue
			}
			l := c.load(srv, s.name)
			c.samples = append(c.samples, scaling.Sample{Server: srv, Stream: s.id, Viewers: l.Viewers + children[srv], HTTPViewers: l.HTTPViewers, Overdue: c.overdue(now, srv)})
		}
	}
	c.sdec = c.scaler.Evaluate(now, c.samples, c.sdec[:0])
	for _, d := range c.sdec {
		if d.Stream < 0 || d.Stream >= len(c.byID) {
			continue
		}
		s := c.byID[d.Stream]
		switch d.Action {
		case scaling.ActionOpen:
			dst = c.open(now, s, d, dst)
		case scaling.ActionDrain:
			if r := s.relays[d.Server]; r != nil {
				r.State, r.Since = Draining, now
				s.gen++
				dst = append(dst, Decision{Action: Drain, Stream: s.id, Server: d.Server, Location: d.Location, Parent: r.Parent, Reason: d.Reason})
			}
		case scaling.ActionClose:
			if r := s.relays[d.Server]; r != nil {
				dst = append(dst, Decision{Action: Close, Stream: s.id, Server: d.Server, Location: d.Location, Parent: r.Parent, Reason: d.Reason})
				c.remove(s, d.Server)
			}
		}
	}
	return dst
}

// overdue reports whether server's next status was due at now and has not
// come: its last one is older than its usual interval by more than its
// statuses' usual lateness (overdueJitters times their mean deviation,
// as TCP's retransmission timeout allows for the round trip's variance).
// Its viewers may be placed again elsewhere already (a server that died is
// marked down only after StatusTTL), so the scaler leaves them out of the
// stream's audience as a whole.
//
// Without the allowance a status that came a little late was missing:
// where the ticks run at the statuses' own interval their phases can lock
// with every tick just after a status is due, and a live server's viewers
// flickered out of the stream's audience round after round (a relay
// filled in one burst was then never seen growing). Statuses that come
// like clockwork (the simulator's) are overdue the moment they are due.
func (c *Controller) overdue(now time.Time, server int) bool {
	p := c.period[server]
	return p > 0 && now.Sub(c.seen[server]).Seconds() >= p+overdueJitters*c.jitter[server]
}

// overdueJitters is how many mean deviations of its interval a status may
// be late (RFC 6298's K).
const overdueJitters = 4

// viewers is what server last reported for the stream named name.
func (c *Controller) viewers(server int, name string) float64 {
	return c.load(server, name).Viewers
}

// load is what server last reported of stream name.
func (c *Controller) load(server int, name string) Load {
	for _, l := range c.loads[server] {
		if l.Stream == name {
			return l
		}
	}
	return Load{}
}
