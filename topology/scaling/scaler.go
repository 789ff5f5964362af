// Package scaling keeps enough relays per stream and region that relay
// load stays normal: it adds relays while the predicted load per relay is
// above a high watermark, drains one after the load has stayed below a low
// watermark for a hold time (never a relay younger than a minimum
// lifetime), overflows to a reserve pool when a location is full, and
// places a stream on a location's servers by jump consistent hash. Every
// decision carries a human-readable reason.
package scaling

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/jumphash"
)

// Config holds the scaling parameters. Zero fields take the defaults.
type Config struct {
	// High is the load per relay, as a fraction of its viewer capacity,
	// above which relays are added. The load compared with it includes
	// the growth predicted over the horizon (times Margin): that is the
	// headroom for growth while a relay starts, so High itself only
	// covers loads a sample old. Default 0.95.
	High float64
	// Low is the fraction below which, held for Hold, relays are drained
	// (down to the count that fills them half way between Low and High).
	// The gap to High is the hysteresis. Default 0.90 (High - 0.05).
	Low float64
	// Hold is how long the load must stay below Low before a drain, and
	// the pause between two drains of a group. Default 10 s.
	Hold time.Duration
	// Margin multiplies the growth predicted over the horizon in the load
	// a group provisions for while that growth steepens (the prediction
	// lags a ramp that steepens); on a steady ramp the growth is taken
	// as predicted. 1 provisions for the prediction alone. Default 1.35.
	Margin float64
	// Settle: a group drains no relay within this time of its latest
	// opening (viewers are still moving onto the new relays, and the room
	// they show is not yet room). Default 1 min, or MinLifetime when that
	// is shorter.
	Settle time.Duration
	// MinLifetime: no relay is drained before this age. Default 5 min (a
	// relay closed younger counts as an oscillation in the scorecard).
	MinLifetime time.Duration
	// Horizon is how far ahead load is predicted. Default 15 s (relay
	// start-up time plus a sample interval or two).
	Horizon time.Duration
	// Window is the number of samples the predictor fits. Default 6.
	Window int
	// DrainTimeout closes a draining relay even if viewers remain.
	// Default 30 s.
	DrainTimeout time.Duration
	// MaxOpenPerStep bounds the relays one group opens per evaluation.
	// Default 64.
	MaxOpenPerStep int
	// RetryAfter is how long a viewer turned away (no server could take
	// it) waits before asking again: the redirector's Retry-After. The
	// requests turned away over an evaluation round, times RetryAfter over
	// the round's length, estimate the viewers waiting (Unserved). Default
	// 5 s.
	RetryAfter time.Duration
	// Foresight replaces predictions with the true audience: the
	// simulator's diagnostic (foresight.go). Unset: none.
	Foresight Foresight
}

// DefaultHigh is the default high watermark (Config.High).
const DefaultHigh = 0.95

func (c *Config) defaults() {
	if c.High <= 0 {
		c.High = DefaultHigh
	}
	if c.Low <= 0 {
		c.Low = c.High - 0.05
	}
	if c.Hold <= 0 {
		c.Hold = 10 * time.Second
	}
	if c.Margin <= 0 {
		c.Margin = 1.35
	}
	if c.MinLifetime <= 0 {
		c.MinLifetime = 5 * time.Minute
	}
	if c.Settle <= 0 {
		// A minute, or the minimum lifetime when that is shorter (a mesh
		// tuned to scale in within seconds settles as fast).
		c.Settle = min(time.Minute, c.MinLifetime)
	}
	if c.Horizon <= 0 {
		c.Horizon = 15 * time.Second
	}
	if c.Window <= 0 {
		c.Window = 6
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 30 * time.Second
	}
	if c.MaxOpenPerStep <= 0 {
		c.MaxOpenPerStep = 64
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = 5 * time.Second
	}
}

// Action is what a decision asks for.
type Action uint8

// Actions.
const (
	ActionOpen  Action = iota + 1 // start a relay of Stream on Server
	ActionDrain                   // stop sending viewers to it; move its viewers away
	ActionClose                   // stop the relay
)

func (a Action) String() string {
	switch a {
	case ActionOpen:
		return "open"
	case ActionDrain:
		return "drain"
	case ActionClose:
		return "close"
	}
	return "none"
}

// Decision is one scaling step for the orchestrator to carry out.
type Decision struct {
	Action   Action
	Server   int // index in the graph's Servers
	Stream   int
	Location graph.VertexID
	Reason   string
}

func (d Decision) String() string { return d.Action.String() + ": " + d.Reason }

// Sample is a relay's report: viewers of one stream on one server.
type Sample struct {
	Server  int
	Stream  int
	Viewers float64
	// HTTPViewers is the part of Viewers that plays over HLS or DASH: a
	// draining relay is not closed under them, even past DrainTimeout (they
	// leave by content steering; a player without it has nowhere to go).
	HTTPViewers float64
	// Overdue: the server's next status was due and has not come (it may
	// be gone). Its viewers still count for its relay, but not in the
	// stream's audience as a whole: a server that died has its viewers
	// placed again elsewhere before it is marked down, and counting them
	// in both places would show an audience growing that is not.
	Overdue bool
}

type relayState uint8

const (
	starting relayState = iota
	ready
	draining
)

type relay struct {
	server, stream int
	// region is the group's: a relay a region opened in another region's
	// reserve (overflow) counts for the region that asked for it.
	region      graph.VertexID
	state       relayState
	opened      time.Time
	drainAt     time.Time
	viewers     float64
	httpViewers float64
}

type groupKey struct {
	stream int
	region graph.VertexID
}

type group struct {
	key        groupKey
	pred       *Predictor
	belowSince time.Time
	relays     []*relay
	// this round (prepare): the group's load, its predictor's derivatives,
	// the load predicted at the horizon, and the share of the predicted
	// growth the stream's audience leaves it (capGrowth)
	total, slope, accel, predicted, scale float64
	waiting                               float64 // of total: the region's viewers turned away
	// this round (shareGrowth): the region's viewers' share of the
	// stream's requests, the stream's audience's predicted growth, and
	// whether the group's growth was set from them
	share, streamGrowth float64
	byShare             bool
	// own predicts the region's own viewers under Foresight.RegionNow
	own *Predictor
}

// maxStreamPredictors bounds the per-stream audience predictors.
const maxStreamPredictors = 100000

// Scaler owns the set of relays and decides when to add and remove them.
// It is not safe for concurrent use; the orchestrator owns it.
type Scaler struct {
	cfg        Config
	g          *graph.Graph
	pools      []jumphash.Pool // per vertex: relay servers there
	reserve    map[graph.VertexID]*jumphash.Pool
	reserveAll jumphash.Pool
	dist       func(from, to graph.VertexID) float32
	resOrder   map[graph.VertexID][]graph.VertexID // per region: other regions' reserves, nearest first
	regionLocs map[graph.VertexID][]graph.VertexID
	capacity   []float64 // viewers (Inf: unlimited)
	capMbps    []float64 // Mbit/s (Inf: unlimited)
	bitrate    map[int]float64
	down       []bool
	relays     map[[2]int]*relay
	groups     map[groupKey]*group
	order      []*group // groups in creation order, for deterministic output
	names      map[int]string
	srvLoad    []float64
	srvPred    []*Predictor
	srvSeen    []bool
	// per stream: its whole audience (every sample of it, the primary's
	// included) and that audience's predictor
	strLoad map[int]float64
	strPred map[int]*Predictor
	// per stream: the horizon its growth is predicted over
	// (streamHorizons), from the relays' start-up times (SetStartup)
	strH    map[int]time.Duration
	startup startupStats
	// per stream, and per stream and region of the viewers: requests no
	// server could take since the last Evaluate
	unserved  map[int]float64
	unservedR map[groupKey]float64
	// per stream and region of the viewers: requests that found a server
	// since the last Evaluate, and their decaying rate (requests in the
	// last flowHalfLife or so): where the stream's new viewers are
	servedR  map[groupKey]float64
	flow     map[groupKey]*flowRate
	lastEval time.Time
	// waitShare turns the requests turned away over this round into the
	// viewers waiting (RetryAfter over the round's length)
	waitShare float64
}

// New returns a scaler for the servers of g.
func New(cfg Config, g *graph.Graph) *Scaler {
	cfg.defaults()
	n := len(g.Servers())
	s := &Scaler{
		cfg: cfg, g: g,
		pools:      make([]jumphash.Pool, g.NumVertices()),
		reserve:    map[graph.VertexID]*jumphash.Pool{},
		regionLocs: map[graph.VertexID][]graph.VertexID{},
		capacity:   make([]float64, n),
		capMbps:    make([]float64, n),
		bitrate:    map[int]float64{},
		down:       make([]bool, n),
		relays:     map[[2]int]*relay{},
		groups:     map[groupKey]*group{},
		names:      map[int]string{},
		srvLoad:    make([]float64, n),
		srvPred:    make([]*Predictor, n),
		srvSeen:    make([]bool, n),
		strLoad:    map[int]float64{},
		strPred:    map[int]*Predictor{},
		strH:       map[int]time.Duration{},
		unserved:   map[int]float64{},
		unservedR:  map[groupKey]float64{},
		servedR:    map[groupKey]float64{},
		flow:       map[groupKey]*flowRate{},
	}
	for i, sv := range g.Servers() {
		s.capacity[i] = float64(sv.CapacityViewers)
		if sv.CapacityViewers == 0 {
			s.capacity[i] = math.Inf(1)
		}
		s.capMbps[i] = sv.CapacityMbps
		if sv.CapacityMbps == 0 {
			s.capMbps[i] = math.Inf(1)
		}
		s.srvPred[i] = NewPredictor(cfg.Window)
		switch sv.Role {
		case graph.RoleRelay:
			if s.pools[sv.Vertex].Len() == 0 {
				r := g.Region(sv.Vertex)
				s.regionLocs[r] = append(s.regionLocs[r], sv.Vertex)
			}
			s.pools[sv.Vertex].Add(i)
		case graph.RoleReserve:
			r := g.Region(sv.Vertex)
			if s.reserve[r] == nil {
				s.reserve[r] = &jumphash.Pool{}
			}
			s.reserve[r].Add(i)
			s.reserveAll.Add(i)
		}
	}
	return s
}

// SetStreamName gives stream id a name, used as its hash key and in
// reasons. Unnamed streams are keyed by their number.
func (s *Scaler) SetStreamName(id int, name string) { s.names[id] = name }

func (s *Scaler) name(id int) string {
	if n, ok := s.names[id]; ok {
		return n
	}
	return fmt.Sprint("#", id)
}

func (s *Scaler) locID(v graph.VertexID) string { return s.g.Location(v).ID }

// SetDown marks a server gone (its relays are forgotten) or back.
func (s *Scaler) SetDown(server int, down bool) {
	s.down[server] = down
	if down {
		for k, r := range s.relays {
			if r.server == server {
				s.remove(k)
			}
		}
	}
}

// usable reports whether server can take a new relay of stream.
func (s *Scaler) usable(server, stream int) bool {
	if s.down[server] {
		return false
	}
	if _, busy := s.relays[[2]int{server, stream}]; busy {
		return false
	}
	return s.srvLoad[server] < s.cfg.High*s.Capacity(server, stream)
}

// SetBitrate records a stream's bitrate, so that a server's capacity for it
// is the smaller of its viewer capacity and its Mbit/s capacity over the
// bitrate.
func (s *Scaler) SetBitrate(stream int, mbps float64) {
	if mbps > 0 && !math.IsInf(mbps, 0) {
		s.bitrate[stream] = mbps
	}
}

// Capacity is how many viewers of stream a server holds: its viewer
// capacity, or its Mbit/s capacity over the stream's bitrate if smaller.
func (s *Scaler) Capacity(server, stream int) float64 {
	c := s.capacity[server]
	if b := s.bitrate[stream]; b > 0 {
		c = math.Min(c, s.capMbps[server]/b)
	}
	return c
}

// Free reports whether the pool at loc has a server that could take a new
// relay of stream.
func (s *Scaler) Free(stream int, loc graph.VertexID) bool {
	if loc < 0 || int(loc) >= len(s.pools) {
		return false
	}
	return s.pools[loc].PickFunc(s.name(stream), 4, func(m int) bool { return s.usable(m, stream) }) >= 0
}

// OpenInPool opens a relay of stream on a server of loc's own pool (no
// reserve overflow); ok is false when the pool has no free server.
func (s *Scaler) OpenInPool(now time.Time, stream int, loc graph.VertexID, why string) (Decision, bool) {
	if loc < 0 || int(loc) >= len(s.pools) {
		return Decision{}, false
	}
	m := s.pools[loc].PickFunc(s.name(stream), 4, func(m int) bool { return s.usable(m, stream) })
	if m < 0 {
		return Decision{}, false
	}
	reason := fmt.Sprintf("stream %s at %s: %s; server %s", s.name(stream), s.locID(loc), why, s.g.Servers()[m].ID)
	return s.add(now, m, stream, s.g.Region(loc), reason), true
}

// place picks a server for a new relay of stream at one of locs (in
// order), overflowing to the reserve pool of region, then to any reserve.
func (s *Scaler) place(stream int, region graph.VertexID, locs []graph.VertexID) (int, string) {
	name := s.name(stream)
	ok := func(m int) bool { return s.usable(m, stream) }
	for _, l := range locs {
		if m := s.pools[l].PickFunc(name, 4, ok); m >= 0 {
			return m, ""
		}
	}
	full := "no location pool has a free server"
	if len(locs) > 0 {
		full = fmt.Sprintf("the pool at %s is full", s.locID(locs[0]))
	}
	if p := s.reserve[region]; p != nil {
		if m := p.PickFunc(name, 4, ok); m >= 0 {
			return m, full + ": overflow to the reserve pool of " + s.locID(region)
		}
	}
	for _, r := range s.reserveOrder(region) {
		if m := s.reserve[r].PickFunc(name, 4, ok); m >= 0 {
			return m, full + ": overflow to the nearest reserve pool with room, " + s.locID(r)
		}
	}
	if m := s.reserveAll.PickFunc(name, 4, ok); m >= 0 {
		return m, full + ": overflow to the global reserve pool"
	}
	return -1, full + " and no reserve server is free"
}

// SetDistance gives the scaler the distance between two locations, so
// that a region whose own pools and reserve are full overflows to the
// reserve pool of the nearest other region first (without it, to any
// reserve server). The distance from a region is taken from its root
// location.
func (s *Scaler) SetDistance(dist func(from, to graph.VertexID) float32) {
	s.dist = dist
	s.resOrder = map[graph.VertexID][]graph.VertexID{}
}

// reserveOrder is the other regions with a reserve pool, nearest to region
// first (none without SetDistance).
func (s *Scaler) reserveOrder(region graph.VertexID) []graph.VertexID {
	if s.dist == nil {
		return nil
	}
	if o, ok := s.resOrder[region]; ok {
		return o
	}
	o := make([]graph.VertexID, 0, len(s.reserve))
	d := map[graph.VertexID]float32{}
	for r, p := range s.reserve {
		if r == region || p.Len() == 0 {
			continue
		}
		// The distance to a region's reserve is that to its nearest server.
		best := float32(math.Inf(1))
		for _, m := range p.Members() {
			best = min(best, s.dist(region, s.g.Servers()[m].Vertex))
		}
		if math.IsInf(float64(best), 1) {
			continue
		}
		o = append(o, r)
		d[r] = best
	}
	sort.Slice(o, func(i, j int) bool {
		if d[o[i]] != d[o[j]] {
			return d[o[i]] < d[o[j]]
		}
		return o[i] < o[j]
	})
	s.resOrder[region] = o
	return o
}

func (s *Scaler) group(stream int, region graph.VertexID) *group {
	k := groupKey{stream, region}
	g := s.groups[k]
	if g == nil {
		g = &group{key: k, pred: NewPredictor(s.cfg.Window)}
		s.groups[k] = g
		s.order = append(s.order, g)
	}
	return g
}

func (s *Scaler) add(now time.Time, server, stream int, region graph.VertexID, reason string) Decision {
	v := s.g.Servers()[server].Vertex
	r := &relay{server: server, stream: stream, region: region, state: starting, opened: now}
	s.relays[[2]int{server, stream}] = r
	g := s.group(stream, region)
	g.relays = append(g.relays, r)
	return Decision{Action: ActionOpen, Server: server, Stream: stream, Location: v, Reason: reason}
}

func (s *Scaler) remove(k [2]int) {
	r := s.relays[k]
	if r == nil {
		return
	}
	delete(s.relays, k)
	g := s.groups[groupKey{r.stream, r.region}]
	if g == nil {
		return
	}
	for i, x := range g.relays {
		if x == r {
			g.relays = append(g.relays[:i], g.relays[i+1:]...)
			break
		}
	}
}

// OpenAt opens a relay of stream at location loc (a demand decision): a
// server of loc's pool chosen by jump hash, or a reserve server when the
// pool is full. ok is false when no server can be found.
func (s *Scaler) OpenAt(now time.Time, stream int, loc graph.VertexID, why string) (Decision, bool) {
	if loc < 0 || int(loc) >= len(s.pools) {
		return Decision{}, false
	}
	m, note := s.place(stream, s.g.Region(loc), []graph.VertexID{loc})
	if m < 0 {
		return Decision{}, false
	}
	reason := fmt.Sprintf("stream %s at %s: %s", s.name(stream), s.locID(loc), why)
	if note != "" {
		reason += "; " + note
	}
	return s.add(now, m, stream, s.g.Region(loc), reason+fmt.Sprintf("; server %s", s.g.Servers()[m].ID)), true
}

// OpenOn opens a relay of stream on a given server (a relay adopted after
// a change of leader, or placed again on a server that came back). ok is
// false when the server is down or already has the relay.
func (s *Scaler) OpenOn(now time.Time, stream, server int, why string) (Decision, bool) {
	if server < 0 || server >= len(s.down) || s.down[server] {
		return Decision{}, false
	}
	if _, busy := s.relays[[2]int{server, stream}]; busy {
		return Decision{}, false
	}
	reason := fmt.Sprintf("stream %s on %s: %s", s.name(stream), s.g.Servers()[server].ID, why)
	return s.add(now, server, stream, s.g.Region(s.g.Servers()[server].Vertex), reason), true
}

// Unserved records n requests for stream that no server could take (the
// viewers wait): until the next Evaluate, the stream's audience served is
// not all of its audience (capGrowth).
func (s *Scaler) Unserved(stream int, n float64) {
	if n > 0 && !math.IsInf(n, 0) {
		s.unserved[stream] += n
	}
}

// UnservedAt is Unserved for requests from viewers at loc: they are also
// part of the load of loc's region (a group's load is its relays' viewers
// and its region's viewers waiting). A region whose relays are full sees
// its load rise while its viewers wait for a server, not as a burst when
// they all land on the relays that become ready.
func (s *Scaler) UnservedAt(stream int, loc graph.VertexID, n float64) {
	if !(n > 0) || math.IsInf(n, 0) {
		return
	}
	s.unserved[stream] += n
	if loc >= 0 && int(loc) < s.g.NumVertices() {
		s.unservedR[groupKey{stream, s.g.Region(loc)}] += n
	}
}

// ServedAt records n requests for stream from viewers at loc that found a
// server (the redirector's demand, less the requests turned away). Their
// rate per region of the viewers is where the stream's audience grows: a
// region's growth is its viewers' share of the stream's requests, times
// the growth of the stream's whole audience (shareGrowth), whatever
// region's relays serve them.
func (s *Scaler) ServedAt(stream int, loc graph.VertexID, n float64) {
	if !(n > 0) || math.IsInf(n, 0) || loc < 0 || int(loc) >= s.g.NumVertices() {
		return
	}
	s.servedR[groupKey{stream, s.g.Region(loc)}] += n
}

// flowRate is a decaying count of requests: each one counts 1 when it
// comes and half as much flowHalfLife later.
type flowRate struct {
	rate float64
	at   time.Time
}

// flowHalfLife is the half-life of the request rates per region of the
// viewers: a few sample intervals, so the share follows a surge as it
// comes and is not one round's noise.
const flowHalfLife = 6 * time.Second

// SetHorizon changes how far ahead load is predicted (the controller
// matches it to the relays' measured start-up time).
func (s *Scaler) SetHorizon(h time.Duration) {
	if h > 0 {
		s.cfg.Horizon = h
	}
}

// startupStats are the relays' start-up times (SetStartup), in seconds.
type startupStats struct {
	mean, spread, longest float64
	set                   bool
}

// SetStartup gives the scaler the relays' start-up times: their mean,
// their spread (half the mean absolute difference between two of them,
// which is the integral of F(1−F) over their distribution F) and the
// longest. From then on each stream's growth is predicted over its own
// horizon (streamHorizons) rather than the one Horizon, which stays the
// horizon of the servers' predicted loads (Predicted).
func (s *Scaler) SetStartup(mean, spread, longest time.Duration) {
	if mean <= 0 {
		return
	}
	s.startup = startupStats{mean: mean.Seconds(), spread: max(spread.Seconds(), 0),
		longest: max(longest.Seconds(), mean.Seconds()), set: true}
}

// horizon is the horizon stream's growth is predicted over.
func (s *Scaler) horizon(stream int) time.Duration {
	if h, ok := s.strH[stream]; ok {
		return h
	}
	return s.cfg.Horizon
}

// HorizonOf is the horizon stream's growth is predicted over in effect
// (Horizon until SetStartup, and for a stream without samples).
func (s *Scaler) HorizonOf(stream int) time.Duration { return s.horizon(stream) }

// startupZ: the relays opened for a growth are ready, together, by the
// mean start-up plus startupZ standard deviations of their lag.
const startupZ = 2

// streamHorizons sets every stream's horizon from the relays' start-up
// times and the relays its audience's growth needs per second. Relays
// opened one after another as a load grows are ready, together, a mean
// start-up after they open on average: the capacity ready lags the
// capacity opened by the mean start-up, and the count ready at a moment
// varies around that by a variance of rate × spread relays (rate: relays
// opened per second), a lag of sqrt(spread / rate) seconds for one
// standard deviation. So the horizon is the mean start-up plus startupZ
// times that, at most the longest start-up: a fast growth, for which many
// relays start at once, is provisioned about a mean start-up ahead (the
// relays that start late are covered by those that start early), a slow
// one, for which each relay must be ready on its own, up to the longest
// start-up ahead. With a fixed start-up (no spread) the horizon is that
// start-up. A horizon longer than the growth needs opens, at the end of a
// burst, relays for growth that does not come, and each lives the minimum
// lifetime.
func (s *Scaler) streamHorizons() {
	clear(s.strH)
	if !s.startup.set {
		return
	}
	capSum, capN := map[int]float64{}, map[int]float64{}
	for _, r := range s.relays {
		if r.state == draining {
			continue
		}
		if c := s.Capacity(r.server, r.stream); !math.IsInf(c, 1) && c > 0 {
			capSum[r.stream] += c
			capN[r.stream]++
		}
	}
	st := s.startup
	for id, sp := range s.strPred {
		h := st.longest
		if _, slope, _ := sp.Predict(0); slope > 0 && capN[id] > 0 {
			rate := slope / (s.cfg.High * capSum[id] / capN[id])
			h = min(h, st.mean+startupZ*math.Sqrt(st.spread/rate))
		}
		s.strH[id] = min(max(time.Duration(h*float64(time.Second)), 5*time.Second), 2*time.Minute)
	}
}

// High is the high watermark in effect.
func (s *Scaler) High() float64 { return s.cfg.High }

// Horizon is the prediction horizon in effect.
func (s *Scaler) Horizon() time.Duration { return s.cfg.Horizon }

// Ready records that a relay finished starting.
func (s *Scaler) Ready(server, stream int) {
	if r := s.relays[[2]int{server, stream}]; r != nil && r.state == starting {
		r.state = ready
	}
}

// Failed forgets a relay that could not start.
func (s *Scaler) Failed(server, stream int) { s.remove([2]int{server, stream}) }

// Relays returns the number of relays of stream (all states).
func (s *Scaler) Relays(stream int) int {
	n := 0
	for k := range s.relays {
		if k[1] == stream {
			n++
		}
	}
	return n
}

// Predicted returns the total viewers predicted for a server at the
// horizon, for placement's capacity check.
func (s *Scaler) Predicted(server int) float64 {
	p := s.predict(s.srvPred[server], s.cfg.Horizon)
	return p
}

// predict is p's load at the horizon, its upward curvature extrapolated
// no further than the present slope: over a horizon as long as a relay's
// start-up, the square of a step's kink would predict many times the load
// that comes (the slope at the latest sample already carries the
// acceleration seen so far).
func (s *Scaler) predict(p *Predictor, h time.Duration) float64 {
	load, slope, accel := p.Predict(h)
	if accel > 0 && p.Len() > 0 {
		load = math.Min(load, p.Last()+math.Max(slope, 0)*h.Seconds())
	}
	return load
}

// Evaluate takes one round of relay samples taken at now, updates the load
// predictions and appends the decisions: opens where the predicted load per
// relay is above the high watermark, a drain where it has stayed below the
// low watermark, closes of drained relays.
func (s *Scaler) Evaluate(now time.Time, samples []Sample, dst []Decision) []Decision {
	for i := range s.srvLoad {
		s.srvLoad[i], s.srvSeen[i] = 0, false
	}
	for _, r := range s.relays {
		r.viewers, r.httpViewers = 0, 0
	}
	clear(s.strLoad)
	for _, sm := range samples {
		if sm.Server < 0 || sm.Server >= len(s.srvLoad) || math.IsNaN(sm.Viewers) || sm.Viewers < 0 {
			continue
		}
		if sm.Overdue {
			s.strLoad[sm.Stream] += 0 // the stream still has samples
		} else {
			s.strLoad[sm.Stream] += sm.Viewers
		}
		s.srvLoad[sm.Server] += sm.Viewers
		s.srvSeen[sm.Server] = true
		if r := s.relays[[2]int{sm.Server, sm.Stream}]; r != nil {
			r.viewers = sm.Viewers
			if sm.HTTPViewers > 0 && !math.IsNaN(sm.HTTPViewers) {
				r.httpViewers = min(sm.HTTPViewers, sm.Viewers)
			}
		}
	}
	for i, seen := range s.srvSeen {
		if seen {
			s.srvPred[i].Add(now, s.srvLoad[i])
		}
	}
	// The stream's audience: the viewers served, plus those waiting (the
	// requests turned away this round, each waiting RetryAfter before it
	// asks again).
	round := 0.0
	if !s.lastEval.IsZero() {
		round = now.Sub(s.lastEval).Seconds()
	}
	s.lastEval = now
	// Each viewer turned away asks again every RetryAfter: the requests
	// turned away over the round, times RetryAfter over the round's length,
	// are the viewers waiting, whether the round is longer than RetryAfter
	// or shorter (the orchestrator evaluates every second, the redirector
	// answers Retry-After: 5).
	s.waitShare = 0
	if round > 0 {
		s.waitShare = s.cfg.RetryAfter.Seconds() / round
	}
	for id, v := range s.strLoad {
		p := s.strPred[id]
		if p == nil {
			if len(s.strPred) >= maxStreamPredictors {
				continue
			}
			p = NewPredictor(s.cfg.Window)
			s.strPred[id] = p
		}
		p.Add(now, v+s.unserved[id]*s.waitShare)
	}
	for id := range s.strPred {
		if _, ok := s.strLoad[id]; !ok {
			delete(s.strPred, id) // no samples: the stream has no relays left
		}
	}
	s.streamHorizons()
	for _, g := range s.order {
		s.prepare(now, g)
	}
	s.measureFlows(now)
	s.capGrowth(now)
	clear(s.unserved)
	clear(s.unservedR)
	clear(s.servedR)
	for _, g := range s.order {
		dst = s.evaluate(now, g, dst)
	}
	// Drop empty groups.
	kept := s.order[:0]
	for _, g := range s.order {
		if len(g.relays) > 0 {
			kept = append(kept, g)
		} else {
			delete(s.groups, g.key)
		}
	}
	for i := len(kept); i < len(s.order); i++ {
		s.order[i] = nil
	}
	s.order = kept
	return dst
}

// prepare records a group's load of this round in its predictor and
// predicts it at the horizon (before the stream's cap, capGrowth).
func (s *Scaler) prepare(now time.Time, g *group) {
	total := 0.0
	for _, r := range g.relays {
		total += r.viewers
	}
	// The region's viewers waiting for a server are its load too.
	g.waiting = s.unservedR[g.key] * s.waitShare
	total += g.waiting
	g.total = total
	g.pred.Add(now, total)
	h := s.horizon(g.key.stream)
	_, g.slope, g.accel = g.pred.Predict(h)
	pred := s.predictRise(g.pred, h)
	if sp := s.strPred[g.key.stream]; sp != nil && pred > total && s.predict(sp, h) <= sp.Last() {
		// The stream's audience as a whole is not growing: a region's load
		// that grows is viewers moving in from other regions (back from
		// where a failure or a full pool sent them), and relays opened for
		// more of that growth would outlive it. Predict no growth.
		pred = total
	}
	g.predicted, g.scale = pred, 1
	g.share, g.streamGrowth, g.byShare = 0, 0, false
}

// predictRise is predict, extrapolating upwards no faster than the load
// rose over the last two intervals: the quadratic fitted through the kink
// where a ramp starts has, at its end, about twice the ramp's slope, and
// relays opened for that load live at least MinLifetime.
func (s *Scaler) predictRise(p *Predictor, h time.Duration) float64 {
	_, slope, accel := p.Predict(h)
	pred := s.predict(p, h)
	if accel > 0 && p.Len() > 2 {
		if r := p.Rise(2); r < slope {
			pred = math.Min(pred, p.Last()+math.Max(r, 0)*h.Seconds())
		}
	}
	return pred
}

// measureFlows folds this round's requests per (stream, region of the
// viewers) into their decaying rates; the rates of streams without samples
// are forgotten.
func (s *Scaler) measureFlows(now time.Time) {
	for k := range s.servedR {
		if s.flow[k] == nil {
			if _, ok := s.strLoad[k.stream]; ok {
				s.flow[k] = &flowRate{at: now}
			}
		}
	}
	for k, f := range s.flow {
		if _, ok := s.strLoad[k.stream]; !ok {
			delete(s.flow, k)
			continue
		}
		if dt := now.Sub(f.at); dt > 0 {
			f.rate *= math.Exp2(-dt.Seconds() / flowHalfLife.Seconds())
		}
		f.rate += s.servedR[k]
		f.at = now
	}
}

// growthSlack: a region's load may grow up to this many times its
// viewers' share of the stream's growth before the rest is taken as
// viewers moving in from other regions (the share is measured on requests,
// moves included, and a region's relays fill unevenly).
const growthSlack = 1.5

// capGrowth scales, per stream, the growth its groups predict down to the
// growth its whole audience predicts, while every request of the stream
// found a server (then the audience summed over the servers is every
// viewer). Viewers who move between regions — onto a region's relays as
// they become ready after being served from another region, or back
// home after a failure — add to one region's load what they take from
// another's, so a region's load can rise much faster than the audience
// arrives; the stream's audience rises only with the viewers who arrive.
// While requests are turned away the audience served is capped by the
// relays that serve, not by the viewers, and the groups keep their own
// predictions.
func (s *Scaler) capGrowth(now time.Time) {
	sum := map[int]float64{}
	flows := map[int]float64{}
	for _, g := range s.order {
		sum[g.key.stream] += math.Max(0, g.predicted-g.total)
	}
	for k, f := range s.flow {
		flows[k.stream] += f.rate
	}
	for _, g := range s.order {
		id := g.key.stream
		sp := s.strPred[id]
		if sp == nil {
			continue
		}
		if flows[id] > 0 {
			s.shareGrowth(now, g, sp, flows[id])
			continue
		}
		if sum[id] <= 0 {
			continue
		}
		if str := s.streamGrowth(now, id, sp); str < sum[id] {
			g.scale = str / sum[id]
		}
	}
}

// shareGrowth sets the growth group g provisions for from where the
// stream's requests come from: its region's viewers' share of them (flows:
// the stream's request rate over every region), times the growth the
// stream's whole audience predicts. A region's load counts viewers of
// other regions that its relays serve while their own region's relays are
// full or starting (a status does not say where its viewers are from);
// they go home once their own relays serve, and relays opened for their
// growth live their minimum lifetime with room. So the guests are capacity
// in use (in the load now), and the growth is the region's own viewers':
// at least its share (its viewers may be served elsewhere, or wait, while
// its load does not grow), and the growth of its load up to growthSlack
// times that share.
func (s *Scaler) shareGrowth(now time.Time, g *group, sp *Predictor, flows float64) {
	str := s.streamGrowth(now, g.key.stream, sp)
	f := s.flow[g.key]
	share := 0.0
	if f != nil {
		share = f.rate / flows
	}
	g.share, g.streamGrowth = share, str
	mine := str * share
	own := g.predicted - g.total
	if own <= 0 && mine <= 0 {
		return // not growing: a fall stays predicted as such
	}
	growth := math.Max(mine, math.Min(math.Max(own, 0), growthSlack*mine))
	g.byShare = true
	if own > 0 {
		g.scale = growth / own
		return
	}
	g.predicted = g.total + growth
}

// steepenRatio: the growth steepens when the acceleration would raise the
// slope by more than this share of it over the horizon.
const steepenRatio = 0.05

// steepening reports whether a load rising at slope with accel steepens
// over horizon: then the prediction, fitted over the last samples, lags
// the ramp and the provisioned load takes Margin times the growth. On a
// steady ramp the prediction does not lag — a relay opened for the load
// at the horizon is ready, on average, before that load comes (the
// horizon is longer than the mean start-up time) — and the margin only
// adds relays that the end of the ramp leaves empty for their minimum
// lifetime.
func steepening(slope, accel float64, horizon time.Duration) bool {
	return slope > 0 && accel*horizon.Seconds() > steepenRatio*slope
}

func (s *Scaler) evaluate(now time.Time, g *group, dst []Decision) []Decision {
	capSum := 0.0
	var active []*relay
	nStarting := 0
	var newest time.Time
	for _, r := range g.relays {
		if r.state != draining {
			active = append(active, r)
			capSum += s.Capacity(r.server, r.stream)
		}
		if r.state == starting {
			nStarting++
		}
		if r.opened.After(newest) {
			newest = r.opened
		}
	}
	// Close drained relays (iterating over a copy: remove edits g.relays).
	for _, r := range append([]*relay(nil), g.relays...) {
		if r.state == draining && (r.viewers == 0 || (now.Sub(r.drainAt) >= s.cfg.DrainTimeout && r.httpViewers == 0)) {
			why := "drained"
			if r.viewers > 0 {
				why = fmt.Sprintf("drain timeout with %.0f viewers left", r.viewers)
			}
			dst = append(dst, Decision{Action: ActionClose, Server: r.server, Stream: r.stream,
				Location: s.g.Servers()[r.server].Vertex,
				Reason:   fmt.Sprintf("stream %s: relay on %s %s", s.name(r.stream), s.g.Servers()[r.server].ID, why)})
			s.remove([2]int{r.server, r.stream})
		}
	}
	total, slope, accel := g.total, g.slope, g.accel
	// The load to provision for: now, plus the growth predicted over the
	// horizon (at most the group's share of the stream's, capGrowth), times
	// Margin while the growth steepens (steepening).
	growth := math.Max(0, g.predicted-total) * g.scale
	pred := total + growth
	h := s.horizon(g.key.stream)
	margin := 1.0
	if steepening(slope, accel, h) {
		margin = s.cfg.Margin
	}
	want := total + margin*growth
	if s.cfg.Foresight.Region != nil {
		want = s.foreseen(now, g, h)
	}
	n := len(active)
	if n == 0 {
		return dst
	}
	capR := capSum / float64(n)
	if math.IsInf(capR, 1) {
		return dst
	}
	region := s.locID(g.key.region)
	high, low := s.cfg.High*capR, s.cfg.Low*capR
	switch {
	case want > high*float64(n):
		g.belowSince = time.Time{}
		need := min(int(math.Ceil(want/high))-n, s.cfg.MaxOpenPerStep)
		// Prefer the locations where the group's relays are busiest.
		sort.SliceStable(active, func(i, j int) bool {
			return active[i].viewers/s.Capacity(active[i].server, active[i].stream) > active[j].viewers/s.Capacity(active[j].server, active[j].stream)
		})
		var locs []graph.VertexID
		seen := map[graph.VertexID]bool{}
		for _, r := range active {
			if v := s.g.Servers()[r.server].Vertex; !seen[v] && s.pools[v].Len() > 0 {
				seen[v] = true
				locs = append(locs, v)
			}
		}
		for _, v := range s.regionLocs[g.key.region] {
			if !seen[v] {
				seen[v] = true
				locs = append(locs, v)
			}
		}
		for k := range need {
			m, note := s.place(g.key.stream, g.key.region, locs)
			if m < 0 {
				break
			}
			reason := fmt.Sprintf("stream %s in region %s: %.0f viewers now, %.0f predicted in %s (slope %+.1f/s, accel %+.2f/s²); %.0f with %.2g× the growth over %d relays is above the high watermark %.0f per relay: add relay %d of %d on %s",
				s.name(g.key.stream), region, total, pred, h, slope, accel, want, margin, n, high, k+1, need, s.g.Servers()[m].ID)
			if g.waiting >= 0.5 {
				reason += fmt.Sprintf(" (of the viewers now, %.0f wait for a server: they were turned away)", g.waiting)
			}
			switch {
			case g.byShare:
				reason += fmt.Sprintf(" (the growth is the region's viewers': %.0f%% of the stream's requests, of the growth its whole audience predicts, %.0f, at least, and the region's load's, %.0f, up to %.2g× that: viewers of other regions on its relays are capacity in use, not growth)",
					100*g.share, g.streamGrowth, g.predicted-total, growthSlack)
			case g.scale < 1:
				reason += fmt.Sprintf(" (the growth predicted from the region's load, %.0f, is scaled to its share of the stream's whole audience's, %.0f%%: viewers moving between regions are not growth)", g.predicted-total, 100*g.scale)
			}
			if note != "" {
				reason += " (" + note + ")"
			}
			dst = append(dst, s.add(now, m, g.key.stream, g.key.region, reason))
		}
	case want < low*float64(n) && want <= high*float64(n-1) && nStarting == 0 && now.Sub(newest) >= s.cfg.Settle:
		if g.belowSince.IsZero() {
			g.belowSince = now
		}
		if now.Sub(g.belowSince) < s.cfg.Hold {
			return dst
		}
		// Drain down to the count that puts the load half-way between the
		// watermarks (at least one relay while there are viewers); never
		// while a relay of the group starts (the load below Low is then the
		// starting relays' empty capacity, not a fall) nor within Settle of
		// the group's latest opening. A relay is drained only where the
		// other relays of its location can hold that location's viewers
		// below the high watermark: its viewers then stay near (and the
		// last relay of a location with viewers stays: it brings the
		// stream close to them). Reserve relays (overflow) go first, then
		// the locations with the most room, and in them the emptiest
		// relays.
		mid := (s.cfg.High + s.cfg.Low) / 2 * capR
		keep := int(math.Ceil(want / mid))
		falling := ""
		if p := g.predicted; p < total {
			// The load is falling: drain down to the count that puts the
			// load predicted at the horizon half-way between the
			// watermarks, as long as the relays kept hold the present load
			// below the high watermark (the next relays drain a hold time
			// later: without this, a fall is followed a hold time and a
			// half-way margin behind).
			if k := max(int(math.Ceil(math.Max(p, 0)/mid)), int(math.Ceil(total/high))); k < keep {
				keep = k
				falling = fmt.Sprintf(" (falling to %.0f in %s)", p, h)
			}
		}
		drain := n - keep
		// A location's relays are counted apart by role: placement sends a
		// viewer to a reserve server only when no regular one can take it,
		// so the viewers of a regular relay go to the other regular relays
		// (of its location, as the nearest), not to a reserve there.
		type lk struct {
			v       graph.VertexID
			reserve bool
		}
		key := func(r *relay) lk {
			sv := s.g.Servers()[r.server]
			return lk{sv.Vertex, sv.Role == graph.RoleReserve}
		}
		locViewers := map[lk]float64{}
		locCap := map[lk]float64{}
		for _, r := range active {
			locViewers[key(r)] += r.viewers
			locCap[key(r)] += s.Capacity(r.server, r.stream)
		}
		use := func(r *relay) float64 {
			return locViewers[key(r)] / locCap[key(r)]
		}
		sort.SliceStable(active, func(i, j int) bool {
			if ri, rj := key(active[i]).reserve, key(active[j]).reserve; ri != rj {
				return ri // reserve relays (overflow) first
			}
			if ui, uj := use(active[i]), use(active[j]); ui != uj {
				return ui < uj
			}
			return active[i].viewers < active[j].viewers
		})
		for _, r := range active {
			if drain <= 0 {
				break
			}
			loc := s.g.Servers()[r.server].Vertex
			k := key(r)
			c := s.Capacity(r.server, r.stream)
			if r.state != ready || now.Sub(r.opened) < s.cfg.MinLifetime || locViewers[k] > s.cfg.High*(locCap[k]-c) {
				continue
			}
			locCap[k] -= c
			drain--
			r.state, r.drainAt = draining, now
			dst = append(dst, Decision{Action: ActionDrain, Server: r.server, Stream: r.stream, Location: loc,
				Reason: fmt.Sprintf("stream %s in region %s: %.0f viewers (%.0f predicted) over %d relays stayed below the low watermark %.0f per relay for %s: drain %s (%.0f viewers), keeping %d%s",
					s.name(g.key.stream), region, total, pred, n, low, s.cfg.Hold, s.g.Servers()[r.server].ID, r.viewers, keep, falling)})
		}
		g.belowSince = now // the next drain waits another hold time
	default:
		g.belowSince = time.Time{}
	}
	return dst
}
