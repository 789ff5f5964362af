package sim

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/relaymesh/relaymesh/topology/controller"
	"github.com/relaymesh/relaymesh/topology/demand"
	"github.com/relaymesh/relaymesh/topology/distance"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/placement"
)

// Options tune a run.
type Options struct {
	// Scale multiplies every viewer count of the scenario. Default 1.
	Scale float64
	// Seed overrides the scenario's seed when non-zero.
	Seed uint64
	// ScaleCapacity multiplies every server's capacity by Scale too, so a
	// run at a tenth of the viewers is the same problem in small: as many
	// relays, each a tenth the size. The demand threshold (a count of
	// requests: the scenario's demand.threshold, default 50) is scaled
	// with them, so the first relays open at the same share of the crowd.
	ScaleCapacity bool
	// Policy is the decider: the controller (default) or a baseline.
	Policy Policy
	// Progress, when set, is called about once per second of wall time.
	Progress func(Progress)
	// Logger receives every decision at debug level. Default: none.
	Logger *slog.Logger
	// Timeline, when set, receives a sample of the mesh per region at every
	// sample interval (for the HTML report).
	Timeline *Timeline
	// Journal, when set, receives every event given to the controller and
	// the decisions that came back (as the orchestrator's Config.Journal).
	Journal func(controller.Event, []controller.Decision)
	// Foresight gives the controller the scenario's true audience in place
	// of its predictions (scaling.Foresight), to tell how much of a run's
	// excess is the prediction's: "" (none, the controller as it runs),
	// ForesightStream, ForesightRegion or ForesightRegionNow. Only with
	// PolicyController.
	Foresight string
}

// The modes of Options.Foresight.
const (
	// ForesightStream: each stream's whole audience at the horizon is
	// known; the controller splits its growth over the regions as usual.
	ForesightStream = "stream"
	// ForesightRegion: the audience of each (stream, region of the
	// viewers) at the horizon is known, and each region's relays are
	// provisioned for exactly that.
	ForesightRegion = "region"
	// ForesightRegionNow: the audience of each (stream, region of the
	// viewers) now is known, as relays that counted their viewers by the
	// viewers' location would report it; a predictor per region
	// extrapolates it over the horizon.
	ForesightRegionNow = "region-now"
)

// Progress is a snapshot of a running simulation.
type Progress struct {
	SimTime, Duration time.Duration
	Viewers           int64
	Relays            int
}

// epoch is the virtual clock's origin.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// Epoch is the virtual clock's origin (time 0 of a scenario).
func Epoch() time.Time { return epoch }

type holding struct {
	server placement.ServerID
	n      int64
	prov   int64 // of n, viewers with a provisional token (a nearer relay was starting)
}

type audience struct {
	spec    *Audience
	vertex  graph.VertexID
	stream  placement.StreamID
	best    float32 // distance to the nearest location with servers
	watch   int64
	waiting int64
	churn   float64   // fractional churn carried to the next tick
	on      []holding // servers holding this audience's viewers
	idx     map[placement.ServerID]int
	commit  float32 // distance to the nearest relay starting or serving (valid while cgen == run.gen+1)
	cgen    uint64
}

func (a *audience) add(s placement.ServerID, n int64) {
	i, ok := a.idx[s]
	if !ok {
		i = len(a.on)
		a.idx[s] = i
		a.on = append(a.on, holding{server: s})
	}
	a.on[i].n += n
	a.watch += n
}

type relayKey struct {
	server placement.ServerID
	stream placement.StreamID
}

type pendingOpen struct {
	key   relayKey
	ready time.Time
}

type relayInfo struct {
	opened   time.Time
	draining bool
}

type run struct {
	sc      *Scenario
	opt     Options
	log     *slog.Logger
	g       *graph.Graph
	mesh    *placement.Mesh   // redirector 0, also used for static lookups
	meshes  []*placement.Mesh // one view per redirector
	rr      int               // round-robin over redirectors
	actual  []int64           // true viewers per server
	kbps    []int64           // true kbit/s per server
	strKbps []int64           // bitrate per stream
	table   *distance.Table
	pol     policy
	names   []string // stream names
	rng     *rand.Rand
	aud     []*audience
	byStrm  [][]*audience
	relays  map[relayKey]*relayInfo // decided (starting, serving or draining)
	pending []pendingOpen
	dead    []bool
	failAt  []bool // failures started
	failEnd []bool // failures ended
	killed  [][]int
	ds      []controller.Decision
	loads   [][]controller.Load
	gen     uint64 // changes whenever r.relays does
	hist    stretchHist
	oracle  *oracle
	sum     Summary
}

// Run simulates the scenario and returns its summary. It stops early with
// ctx's error when ctx is cancelled.
func Run(ctx context.Context, sc *Scenario, opt Options) (*Summary, error) {
	if opt.Scale == 0 {
		opt.Scale = 1
	}
	if math.IsNaN(opt.Scale) || opt.Scale < 0 || opt.Scale > 1000 {
		return nil, fmt.Errorf("scale %v out of range (0, 1000]", opt.Scale)
	}
	if opt.Policy == "" {
		opt.Policy = PolicyController
	}
	seed := sc.Seed
	if opt.Seed != 0 {
		seed = opt.Seed
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := sc.graph
	if opt.ScaleCapacity && opt.Scale != 1 {
		var err error
		if g, err = sc.scaledGraph(opt.Scale); err != nil {
			return nil, err
		}
	}
	r := &run{
		sc: sc, opt: opt, log: log, g: g,
		mesh:   placement.New(g, placement.Config{Peers: sc.Redirectors}),
		rng:    rand.New(rand.NewPCG(seed, seed^0x5eed)),
		relays: map[relayKey]*relayInfo{},
	}
	if opt.Foresight != "" && opt.Policy != PolicyController {
		return nil, fmt.Errorf("foresight is a diagnostic of the controller, not of policy %q", opt.Policy)
	}
	switch opt.Policy {
	case PolicyController:
		cfg := scaledConfig(sc, opt)
		switch opt.Foresight {
		case "":
		case ForesightStream:
			cfg.Scaling.Foresight.Audience = r.trueAudience
		case ForesightRegion:
			cfg.Scaling.Foresight.Region = r.trueRegionAudience
		case ForesightRegionNow:
			cfg.Scaling.Foresight.Region, cfg.Scaling.Foresight.RegionNow = r.trueRegionAudience, true
		default:
			return nil, fmt.Errorf("unknown foresight %q (want %s, %s or %s)", opt.Foresight, ForesightStream, ForesightRegion, ForesightRegionNow)
		}
		r.pol = controllerPolicy{controller.New(cfg, g)}
	case PolicyStatic:
		r.pol = &staticPolicy{newBaseline(g, sc)}
	case PolicyLoadOnly:
		r.pol = newLoadOnly(g, sc)
	default:
		return nil, fmt.Errorf("unknown policy %q (want controller, static or load-only)", opt.Policy)
	}
	r.meshes = []*placement.Mesh{r.mesh}
	for range sc.Redirectors - 1 {
		r.meshes = append(r.meshes, placement.New(g, placement.Config{Peers: sc.Redirectors}))
	}
	n := len(g.Servers())
	r.actual, r.kbps, r.dead = make([]int64, n), make([]int64, n), make([]bool, n)
	r.loads = make([][]controller.Load, n)
	r.failAt, r.failEnd, r.killed = make([]bool, len(sc.Failures)), make([]bool, len(sc.Failures)), make([][]int, len(sc.Failures))
	r.table = r.mesh.Table()
	for _, s := range sc.Streams {
		for _, m := range r.meshes {
			if _, err := m.AddStream(s.ID, s.BitrateMbps); err != nil {
				return nil, err
			}
		}
		r.strKbps = append(r.strKbps, int64(s.BitrateMbps*1000))
		r.names = append(r.names, s.ID)
		r.byStrm = append(r.byStrm, nil)
	}
	for i := range sc.Audience {
		a := &sc.Audience[i]
		v, _ := g.Vertex(a.Location)
		s, _ := r.mesh.Stream(a.Stream)
		best := distance.Inf
		for _, d := range r.table.Row(v) {
			best = min(best, d)
		}
		au := &audience{spec: a, vertex: v, stream: s, best: best, idx: map[placement.ServerID]int{}}
		r.aud = append(r.aud, au)
		r.byStrm[s] = append(r.byStrm[s], au)
	}
	r.oracle = newOracle(r)
	if err := r.loop(ctx); err != nil {
		return nil, err
	}
	r.sum.Scenario, r.sum.Seed, r.sum.Scale, r.sum.Policy = sc.Name, seed, opt.Scale, string(opt.Policy)
	r.sum.Foresight = opt.Foresight
	return &r.sum, nil
}

func (r *run) loop(ctx context.Context) error {
	sc := r.sc
	ticks := int(sc.Duration / sc.Tick)
	sampleEvery := max(1, int(sc.SampleInterval/sc.Tick))
	dt := sc.Tick.Seconds()
	start := time.Now()
	nextProgress := start.Add(time.Second)
	for i := 0; i <= ticks; i++ {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if r.opt.Progress != nil && time.Now().After(nextProgress) {
				nextProgress = time.Now().Add(time.Second)
				r.opt.Progress(Progress{SimTime: time.Duration(i) * sc.Tick, Duration: sc.Duration, Viewers: r.viewers(), Relays: len(r.relays)})
			}
		}
		t := time.Duration(i) * sc.Tick
		now := epoch.Add(t)
		r.failures(now, t)
		r.activate(now)
		for _, a := range r.aud {
			r.audienceStep(now, t, a)
			r.expire(now, a)
		}
		if i%sampleEvery == 0 {
			r.sample(now)
			r.oracle.sample(r, float64(sampleEvery)*dt)
			if r.opt.Timeline != nil {
				r.opt.Timeline.record(r, t.Seconds())
			}
		}
		r.stats(dt)
	}
	r.finish(epoch.Add(time.Duration(ticks) * sc.Tick))
	r.sum.WallSeconds = time.Since(start).Seconds()
	if r.sum.WallSeconds > 0 {
		r.sum.DecisionsPerSecond = math.Round(float64(r.sum.Requests) / r.sum.WallSeconds)
	}
	return nil
}

func (r *run) viewers() int64 {
	var n int64
	for _, a := range r.aud {
		n += a.watch
	}
	return n
}

// apply gives the policy one event and carries out its decisions.
func (r *run) apply(now time.Time, e controller.Event) {
	e.Time = now
	r.ds = r.pol.apply(e, r.ds[:0])
	if r.opt.Journal != nil {
		r.opt.Journal(e, append([]controller.Decision(nil), r.ds...))
	}
	if len(r.ds) == 0 {
		return
	}
	ds := append([]controller.Decision(nil), r.ds...) // acting may apply further events
	for _, d := range ds {
		r.act(now, e.Kind, d)
	}
}

func (r *run) act(now time.Time, cause controller.Kind, d controller.Decision) {
	if d.Action != controller.Down && d.Action != controller.Forget && d.Stream < 0 {
		return
	}
	k := relayKey{placement.ServerID(d.Server), placement.StreamID(d.Stream)}
	r.log.Debug(d.Action.String(), "t", now.Sub(epoch), "reason", d.Reason)
	switch d.Action {
	case controller.Open:
		r.open(now, cause, k)
	case controller.Ready:
		if !r.dead[k.server] {
			for _, m := range r.meshes {
				m.Open(k.server, k.stream)
			}
			r.provisional(now, k)
		}
	case controller.Failed:
		r.closeRelay(now, k, false)
	case controller.Drain:
		if info := r.relays[k]; info != nil {
			info.draining = true
			r.gen++
		}
		r.closeAll(k)
		r.evict(now, k.server, k.stream)
	case controller.Close:
		r.closeAll(k)
		r.evict(now, k.server, k.stream)
		r.closeRelay(now, k, true)
	case controller.Down:
		for s := range r.byStrm {
			r.closeRelay(now, relayKey{k.server, placement.StreamID(s)}, false)
		}
	}
}

// scaledConfig is the controller configuration of sc for a run with opt:
// ControllerConfig, with the demand threshold scaled like the viewers
// when the run scales the servers too (Options.ScaleCapacity).
func scaledConfig(sc *Scenario, opt Options) controller.Config {
	cfg := ControllerConfig(sc)
	if opt.ScaleCapacity && opt.Scale != 1 {
		t := cfg.Demand.Threshold
		if t <= 0 {
			t = demand.DefaultThreshold
		}
		cfg.Demand.Threshold = t * opt.Scale
	}
	return cfg
}

// startup draws a relay's start-up time.
func (r *run) startup() time.Duration {
	lo, hi := r.sc.RelayStartup, r.sc.RelayStartupMax
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.rng.Int64N(int64(hi-lo)+1))
}

func (r *run) open(now time.Time, cause controller.Kind, k relayKey) {
	if r.relays[k] != nil {
		return
	}
	r.relays[k] = &relayInfo{opened: now}
	r.gen++
	r.pending = append(r.pending, pendingOpen{key: k, ready: now.Add(r.startup())})
	r.sum.RelaysOpened++
	if cause == controller.EvDemand {
		r.sum.RelaysOpenedByDemand++
	}
	if r.mesh.Server(k.server).Role == graph.RoleReserve {
		r.sum.RelaysOpenedInReserve++
	}
	r.sum.RelaysPeak = max(r.sum.RelaysPeak, len(r.relays))
}

// closeRelay forgets a relay; closed (rather than failed or lost) relays
// count in the lifetime histogram.
func (r *run) closeRelay(now time.Time, k relayKey, closed bool) {
	info := r.relays[k]
	if info == nil {
		return
	}
	delete(r.relays, k)
	r.gen++
	if !closed {
		r.sum.RelaysLost++
		return
	}
	r.sum.RelaysClosed++
	r.sum.Lifetimes.add(now.Sub(info.opened), false)
	if now.Sub(info.opened) < oscillationAge {
		r.sum.Oscillations++
	}
}

// finish accounts the relays still open at the end.
func (r *run) finish(end time.Time) {
	for _, info := range r.relays {
		r.sum.Lifetimes.add(end.Sub(info.opened), true)
	}
	r.sum.RelaysAtEnd = len(r.relays)
	r.sum.SimSeconds = r.sc.Duration.Seconds()
	r.sum.MeanDistanceStretch, r.sum.P99DistanceStretch = r.hist.mean(), r.hist.quantile(0.99)
	r.sum.OracleMeanStretch, r.sum.OracleP99Stretch = r.oracle.hist.mean(), r.oracle.hist.quantile(0.99)
	r.sum.OracleViewerSecondsWaiting = math.Round(r.oracle.waitingVS)
	r.sum.RelaySecondsMinimum = math.Round(r.oracle.relaySeconds)
	r.sum.RelaySecondsPacked = math.Round(r.oracle.packedSeconds)
	r.sum.RelaySecondsLifetime = math.Round(r.oracle.lifetimeSeconds(oscillationAge, 0))
	r.sum.RelaySecondsLifetimeStartup = math.Round(r.oracle.lifetimeSeconds(oscillationAge, r.sc.RelayStartup))
	r.sum.ViewersMoved = r.sum.ViewersMigrated + r.sum.ViewersReplaced + r.sum.ViewersShed + r.sum.ViewersLost + r.sum.ViewersMovedNearer
	r.sum.Score = score(r.hist.sum, r.hist.tot, r.sum.ViewerSecondsWaiting)
	r.sum.OracleScore = score(r.oracle.hist.sum, r.oracle.hist.tot, r.oracle.waitingVS)
	r.sum.derive()
}

// failures starts and ends the scenario's failures at t.
func (r *run) failures(now time.Time, t time.Duration) {
	for i, f := range r.sc.Failures {
		if !r.failAt[i] && t >= f.At {
			r.failAt[i] = true
			var srvs []int
			switch {
			case f.Region != "":
				reg, _ := r.g.Vertex(f.Region)
				for j, s := range r.g.Servers() {
					if s.Role != graph.RolePrimary && r.g.Region(s.Vertex) == reg {
						srvs = append(srvs, j)
					}
				}
			case f.Server == "busiest":
				best := -1
				for j, n := range r.actual {
					if r.g.Servers()[j].Role != graph.RolePrimary && !r.dead[j] && (best < 0 || n > r.actual[best]) {
						best = j
					}
				}
				if best >= 0 {
					srvs = append(srvs, best)
				}
			default:
				for j, s := range r.g.Servers() {
					if s.ID == f.Server {
						srvs = append(srvs, j)
					}
				}
			}
			r.killed[i] = srvs
			for _, j := range srvs {
				r.kill(now, j)
			}
			if f.Region == "" {
				// A relay process that dies: its bus connection closes
				// and its listener refuses, and the orchestrator marks
				// it down at once (docs/operations.md). A region cut off
				// says nothing: its servers go silent for the status TTL.
				for _, j := range srvs {
					r.apply(now, controller.Event{Kind: controller.EvGone, Server: j, Why: "its process is gone"})
				}
			}
		}
		if r.failAt[i] && !r.failEnd[i] && f.For > 0 && t >= f.At+f.For {
			r.failEnd[i] = true
			for _, j := range r.killed[i] {
				r.dead[j] = false
				for _, m := range r.meshes {
					m.SetUp(placement.ServerID(j), true)
				}
			}
		}
	}
}

// kill stops a server: its viewers lose it and are placed again; it sends
// no more statuses (the controller finds out after the status TTL, or at
// once for a process that dies: failures).
func (r *run) kill(now time.Time, j int) {
	if r.dead[j] {
		return
	}
	r.dead[j] = true
	id := placement.ServerID(j)
	for _, m := range r.meshes {
		m.SetUp(id, false)
	}
	for s := range r.byStrm {
		k := relayKey{id, placement.StreamID(s)}
		r.closeAll(k)
		for _, a := range r.byStrm[s] {
			i, ok := a.idx[id]
			if !ok || a.on[i].n == 0 {
				continue
			}
			n := a.on[i].n
			a.on[i].n = 0
			a.watch -= n
			r.leave(id, k.stream, n)
			r.sum.ViewersLost += n
			a.waiting += n
			r.place(now, a, n, placement.Claims{})
		}
	}
}

// activate starts serving the relays whose start-up delay has passed (a
// relay on a dead server fails).
func (r *run) activate(now time.Time) {
	var due []pendingOpen
	kept := r.pending[:0]
	for _, p := range r.pending {
		if now.Before(p.ready) {
			kept = append(kept, p)
			continue
		}
		due = append(due, p)
	}
	r.pending = kept
	for _, p := range due {
		if r.relays[p.key] == nil {
			continue
		}
		e := controller.Event{Kind: controller.EvReady, Stream: r.names[p.key.stream], Server: int(p.key.server)}
		if r.dead[p.key.server] {
			e.Kind, e.Why = controller.EvFailed, "server down"
		}
		r.apply(now, e)
	}
}

// audienceStep moves an audience toward its target size: departures leave
// proportionally from the servers holding it, arrivals (and viewers still
// waiting) ask placement one by one. With churn, a share of the viewers
// leaves and as many new ones arrive.
func (r *run) audienceStep(now time.Time, t time.Duration, a *audience) {
	target := int64(math.Round(a.spec.at(t) * r.opt.Scale))
	if a.spec.Churn > 0 && a.watch > 0 {
		a.churn += float64(a.watch) * a.spec.Churn * r.sc.Tick.Minutes()
		if k := int64(a.churn); k > 0 {
			a.churn -= float64(k)
			r.depart(a, min(k, a.watch))
			r.sum.ViewersChurned += min(k, a.watch)
		}
	}
	have := a.watch + a.waiting
	switch {
	case target > have:
		a.waiting += target - have
	case target < have:
		leave := have - target
		w := min(leave, a.waiting)
		a.waiting -= w
		r.depart(a, leave-w)
	}
	r.place(now, a, a.waiting, placement.Claims{})
	r.sum.ViewerSecondsWaiting += float64(a.waiting) * r.sc.Tick.Seconds()
}

func (r *run) demand(now time.Time, a *audience, n float64, nearest float32) {
	r.demandFull(now, a, n, nearest, 0)
}

// demandFull reports n requests of a, full of which found no server.
func (r *run) demandFull(now time.Time, a *audience, n float64, nearest float32, full float64) {
	near := float64(nearest)
	if nearest == distance.Inf {
		near = -1
	}
	r.apply(now, controller.Event{Kind: controller.EvDemand, Stream: r.names[a.stream], Vertex: a.vertex, N: n, Nearest: near, Full: full})
}

// place asks placement for n viewers of a; those that get no server wait.
func (r *run) place(now time.Time, a *audience, n int64, claims placement.Claims) {
	for n > 0 {
		m := r.meshes[r.rr%len(r.meshes)]
		r.rr++
		res := m.ChooseSticky(a.vertex, a.stream, claims, r.rng)
		r.sum.Requests++
		if res.Server == placement.NoServer {
			// Everyone still waiting gets the same answer this tick; they all
			// count as requests for the demand bonus.
			r.sum.RequestsRejected += n
			r.demandFull(now, a, float64(n), res.Nearest, float64(n))
			return
		}
		m.AddViewers(res.Server, a.stream, 1)
		r.account(res.Server, a.stream, 1)
		a.add(res.Server, 1)
		if r.sc.ProvisionalTokens {
			// As the redirector signs them: provisional when a relay of the
			// stream nearer than the server given is starting, or a server
			// nearer than it is down (the viewer is displaced).
			if d := r.dist(a, res.Server); d > r.committed(a) || m.DownNearer(a.vertex, d) {
				a.on[a.idx[res.Server]].prov++
			}
		}
		a.waiting--
		n--
		r.demand(now, a, 1, res.Nearest)
	}
}

// dist is the distance from a's location to a server.
func (r *run) dist(a *audience, s placement.ServerID) float32 {
	return r.table.Dist(a.vertex, r.table.DestIndex(r.mesh.Server(s).Vertex))
}

// committed is the distance from a to the nearest relay of its stream
// that is starting or serving (or the primary).
func (r *run) committed(a *audience) float32 {
	if a.cgen == r.gen+1 {
		return a.commit
	}
	d := distance.Inf
	if p := r.mesh.Primary(); p != placement.NoServer {
		d = r.dist(a, p)
	}
	for k, info := range r.relays {
		if k.stream == a.stream && !info.draining && !r.dead[k.server] {
			d = min(d, r.dist(a, k.server))
		}
	}
	a.commit, a.cgen = d, r.gen+1
	return d
}

// provHolding is a holding of viewers with provisional tokens.
type provHolding struct {
	a       *audience
	i       int
	stretch float32
}

// provisional moves the viewers of k's stream whose provisional tokens
// held them farther than a carrier that can now take them: relay k serves,
// and every viewer of the stream with a provisional token asks again (its
// token held it only until a nearer carrier had room), the viewers
// farthest from their best location first. A viewer moves when the
// redirector's fresh choice is nearer than its server, as many as that
// choice has room for.
func (r *run) provisional(now time.Time, k relayKey) {
	s := k.stream
	var hs []provHolding
	for _, a := range r.byStrm[s] {
		for i := range a.on {
			h := &a.on[i]
			h.prov = min(h.prov, h.n)
			if h.prov > 0 {
				hs = append(hs, provHolding{a, i, max(r.dist(a, h.server), 1) / max(a.best, 1)})
			}
		}
	}
	sort.SliceStable(hs, func(x, y int) bool { return hs[x].stretch > hs[y].stretch })
	for _, p := range hs {
		a := p.a
		h := &a.on[p.i]
		if h.prov = min(h.prov, h.n); h.prov == 0 {
			continue
		}
		m := r.meshes[r.rr%len(r.meshes)]
		res := m.Choose(a.vertex, s, r.rng)
		if res.Server == placement.NoServer || res.Server == h.server || res.Dist >= r.dist(a, h.server) {
			continue
		}
		n := min(h.prov, r.room(relayKey{res.Server, s}))
		if n <= 0 {
			continue
		}
		h.n -= n
		h.prov -= n
		a.watch -= n
		r.leave(h.server, s, n)
		a.waiting += n
		before := a.waiting - n
		r.place(now, a, n, placement.Claims{})
		if moved := n - (a.waiting - before); moved > 0 {
			r.sum.ViewersMovedNearer += moved
		}
	}
}

// room is how many more viewers of k's stream k's server takes.
func (r *run) room(k relayKey) int64 {
	s := r.mesh.Server(k.server)
	room := int64(math.MaxInt64)
	if s.CapacityViewers > 0 {
		room = int64(s.CapacityViewers) - r.actual[k.server]
	}
	if b := r.strKbps[k.stream]; s.CapacityMbps > 0 && b > 0 {
		room = min(room, (int64(s.CapacityMbps*1000)-r.kbps[k.server])/b)
	}
	return max(room, 0)
}

// expire models sticky tokens running out: each tick a share tick/TTL of
// the viewers comes back without a valid token and is placed afresh.
// Viewers already at the best distance for their location would get the
// same distance again and are not simulated (that keeps long runs fast).
func (r *run) expire(now time.Time, a *audience) {
	share := r.sc.Tick.Seconds() / r.sc.TokenTTL.Seconds()
	for i := range a.on {
		h := &a.on[i]
		if h.n == 0 {
			continue
		}
		d := r.table.Dist(a.vertex, r.table.DestIndex(r.mesh.Server(h.server).Vertex))
		if d <= a.best {
			continue
		}
		x := float64(h.n) * share
		k := int64(x)
		if r.rng.Float64() < x-float64(k) {
			k++
		}
		if k == 0 {
			continue
		}
		h.n -= k
		a.watch -= k
		r.leave(h.server, a.stream, k)
		a.waiting += k
		before := a.waiting - k
		r.place(now, a, k, placement.Claims{})
		if moved := k - (a.waiting - before); moved > 0 {
			r.sum.ViewersReplaced += moved
		}
	}
}

// account records n viewers of stream s arriving on (or, negative,
// leaving) a server in the true load.
func (r *run) account(id placement.ServerID, s placement.StreamID, n int64) {
	r.actual[id] += n
	r.kbps[id] += n * r.strKbps[s]
}

// leave takes n viewers of s off a server: in the true load and in every
// redirector's view (viewers that leave free their place at once).
func (r *run) leave(id placement.ServerID, s placement.StreamID, n int64) {
	r.account(id, s, -n)
	for _, m := range r.meshes {
		m.AddViewers(id, s, -n)
	}
}

func (r *run) closeAll(k relayKey) {
	for _, m := range r.meshes {
		m.Close(k.server, k.stream)
	}
}

func (r *run) depart(a *audience, n int64) {
	if n <= 0 || a.watch == 0 {
		return
	}
	total := a.watch
	left := n
	for i := range a.on {
		h := &a.on[i]
		k := n * h.n / total
		h.n -= k
		a.watch -= k
		left -= k
		r.leave(h.server, a.stream, k)
	}
	for left > 0 { // the remainder, at random among the holders
		h := &a.on[r.rng.IntN(len(a.on))]
		if h.n == 0 {
			continue
		}
		h.n--
		a.watch--
		left--
		r.leave(h.server, a.stream, 1)
	}
}

// evict takes every viewer of stream s off server and places them again
// (their token names a server that no longer carries the stream).
func (r *run) evict(now time.Time, server placement.ServerID, s placement.StreamID) {
	id := r.mesh.Server(server).ID
	for _, a := range r.byStrm[s] {
		i, ok := a.idx[server]
		if !ok || a.on[i].n == 0 {
			continue
		}
		n := a.on[i].n
		a.on[i].n = 0
		a.watch -= n
		r.leave(server, s, n)
		r.sum.ViewersMigrated += n
		a.waiting += n
		r.place(now, a, n, placement.Claims{Server: id, Stream: r.mesh.StreamName(s)})
	}
}

// shed moves viewers off servers above their hard limit: their tokens no
// longer hold them there (they come back and are placed elsewhere).
func (r *run) shed(now time.Time) {
	for i, n := range r.actual {
		id := placement.ServerID(i)
		hard := int64(r.mesh.Server(id).HardViewers)
		if hard == 0 || n <= hard {
			continue
		}
		excess := n - hard
		for _, a := range r.aud {
			j, ok := a.idx[id]
			if !ok || a.on[j].n == 0 || excess == 0 {
				continue
			}
			k := min(a.on[j].n, excess)
			excess -= k
			a.on[j].n -= k
			a.watch -= k
			r.leave(id, a.stream, k)
			r.sum.ViewersShed += k
			a.waiting += k
			r.place(now, a, k, placement.Claims{})
		}
	}
}

func (r *run) regionOf(server placement.ServerID) graph.VertexID {
	return r.g.Region(r.mesh.Server(server).Vertex)
}

// sample is a round of load reports: every live server sends its status
// (viewers per stream), then the policy ticks.
func (r *run) sample(now time.Time) {
	for i := range r.loads {
		r.loads[i] = r.loads[i][:0]
	}
	for _, a := range r.aud {
		name := r.names[a.stream]
		for _, h := range a.on {
			if h.n == 0 {
				continue
			}
			ls := r.loads[h.server]
			mbps := float64(h.n*r.strKbps[a.stream]) / 1000
			found := false
			for j := range ls {
				if ls[j].Stream == name {
					ls[j].Viewers += float64(h.n)
					ls[j].Mbps += mbps
					found = true
				}
			}
			if !found {
				r.loads[h.server] = append(ls, controller.Load{Stream: name, Viewers: float64(h.n), Mbps: mbps})
			}
		}
	}
	for i := range r.loads {
		if r.dead[i] {
			continue
		}
		sort.Slice(r.loads[i], func(x, y int) bool { return r.loads[i][x].Stream < r.loads[i][y].Stream })
		r.apply(now, controller.Event{Kind: controller.EvStatus, Server: i, Loads: r.loads[i]})
	}
	r.apply(now, controller.Event{Kind: controller.EvTick})
	r.shed(now)
	// Every redirector learns the true load and the prediction.
	for id := range r.actual {
		p := int64(r.pol.predicted(id))
		for _, m := range r.meshes {
			m.SetPredicted(placement.ServerID(id), p)
			m.SetLoad(placement.ServerID(id), r.actual[id], float64(r.kbps[id])/1000)
		}
	}
}

// stats accounts one tick: peak viewers, utilisation, over-capacity time,
// relay-seconds and the distance stretch of every watching viewer.
func (r *run) stats(dt float64) {
	r.sum.ViewersPeak = max(r.sum.ViewersPeak, r.viewers())
	r.sum.RelaySeconds += float64(len(r.relays)) * dt
	for i := range r.mesh.NumServers() {
		id := placement.ServerID(i)
		n, mbps := r.actual[i], float64(r.kbps[i])/1000
		if n == 0 && mbps == 0 {
			continue
		}
		s := r.mesh.Server(id)
		u := 0.0
		if s.CapacityViewers > 0 {
			u = float64(n) / float64(s.CapacityViewers)
		}
		if s.CapacityMbps > 0 {
			u = max(u, mbps/s.CapacityMbps)
		}
		r.sum.PeakUtilization = max(r.sum.PeakUtilization, math.Round(u*1000)/1000)
		if u > 1 {
			r.sum.RelaySecondsOverCapacity += dt
		}
	}
	for _, a := range r.aud {
		if a.best == distance.Inf {
			continue
		}
		floor := float32(1)
		for _, h := range a.on {
			if h.n == 0 {
				continue
			}
			d := r.table.Dist(a.vertex, r.table.DestIndex(r.mesh.Server(h.server).Vertex))
			if d == distance.Inf {
				continue
			}
			r.hist.add(float64(max(d, floor)/max(a.best, floor)), float64(h.n)*dt)
			r.sum.ViewerSeconds += float64(h.n) * dt
		}
	}
}
