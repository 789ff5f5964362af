package sim

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/relaymesh/relaymesh/topology/demand"
	"github.com/relaymesh/relaymesh/topology/distance"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/placement"
	"github.com/relaymesh/relaymesh/topology/scaling"
)

// Options tune a run.
type Options struct {
	// Scale multiplies every viewer count of the scenario. Default 1.
	Scale float64
	// Seed overrides the scenario's seed when non-zero.
	Seed uint64
	// Progress, when set, is called about once per second of wall time.
	Progress func(Progress)
	// Logger receives every scaling decision at debug level. Default: none.
	Logger *slog.Logger
	// Timeline, when set, receives a sample of the mesh per region at every
	// sample interval (for the HTML report).
	Timeline *Timeline
}

// Progress is a snapshot of a running simulation.
type Progress struct {
	SimTime, Duration time.Duration
	Viewers           int64
	Relays            int
}

// epoch is the virtual clock's origin.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

type holding struct {
	server placement.ServerID
	n      int64
}

type audience struct {
	spec    *Audience
	vertex  graph.VertexID
	stream  placement.StreamID
	best    float32 // distance to the nearest location with servers
	watch   int64
	waiting int64
	on      []holding // servers holding this audience's viewers
	idx     map[placement.ServerID]int
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

type regionKey struct {
	stream placement.StreamID
	region graph.VertexID
}

type run struct {
	sc                  *Scenario
	opt                 Options
	log                 *slog.Logger
	g                   *graph.Graph
	mesh                *placement.Mesh   // redirector 0, also used for static lookups
	meshes              []*placement.Mesh // one view per redirector
	rr                  int               // round-robin over redirectors
	actual              []int64           // true viewers per server
	kbps                []int64           // true kbit/s per server
	strKbps             []int64           // bitrate per stream
	table               *distance.Table
	tracker             *demand.Tracker
	scaler              *scaling.Scaler
	rng                 *rand.Rand
	aud                 []*audience
	byStrm              [][]*audience
	relays              map[relayKey]bool // decided (starting or serving)
	atLoc               map[[2]int32]int  // (stream, vertex) → relays there
	pending             []pendingOpen
	lastOpen, lastClose map[regionKey]time.Time
	oscWindow           time.Duration
	ds                  []demand.Decision
	scaleDs             []scaling.Decision
	samples             []scaling.Sample
	hist                stretchHist
	sum                 Summary
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
	seed := sc.Seed
	if opt.Seed != 0 {
		seed = opt.Seed
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := sc.graph
	r := &run{
		sc: sc, opt: opt, log: log, g: g,
		mesh:      placement.New(g, placement.Config{Peers: sc.Redirectors}),
		rng:       rand.New(rand.NewPCG(seed, seed^0x5eed)),
		relays:    map[relayKey]bool{},
		atLoc:     map[[2]int32]int{},
		lastOpen:  map[regionKey]time.Time{},
		lastClose: map[regionKey]time.Time{},
	}
	r.meshes = []*placement.Mesh{r.mesh}
	for range sc.Redirectors - 1 {
		r.meshes = append(r.meshes, placement.New(g, placement.Config{Peers: sc.Redirectors}))
	}
	r.actual = make([]int64, len(g.Servers()))
	r.kbps = make([]int64, len(g.Servers()))
	r.table = r.mesh.Table()
	r.tracker = demand.New(demand.Config{
		K: sc.Demand.K, Threshold: sc.Demand.Threshold, HalfLife: sc.Demand.HalfLife,
		Floor: sc.Demand.Floor, DefaultCap: sc.Demand.DefaultCap,
	}, g, r.table)
	scfg := scaling.Config{
		High: sc.Scaling.High, Low: sc.Scaling.Low, Hold: sc.Scaling.Hold, MinLifetime: sc.Scaling.MinLifetime,
		Horizon: sc.Scaling.Horizon, Window: sc.Scaling.Window, DrainTimeout: sc.Scaling.DrainTimeout,
	}
	r.scaler = scaling.New(scfg, g)
	r.oscWindow = sc.Scaling.MinLifetime
	if r.oscWindow <= 0 {
		r.oscWindow = 3 * time.Minute
	}
	for _, s := range sc.Streams {
		var id placement.StreamID
		for _, m := range r.meshes {
			var err error
			if id, err = m.AddStream(s.ID, s.BitrateMbps); err != nil {
				return nil, err
			}
		}
		r.strKbps = append(r.strKbps, int64(s.BitrateMbps*1000))
		r.scaler.SetStreamName(int(id), s.ID)
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
	if err := r.loop(ctx); err != nil {
		return nil, err
	}
	r.sum.Scenario, r.sum.Seed, r.sum.Scale = sc.Name, seed, opt.Scale
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
		r.activate(now)
		for _, a := range r.aud {
			r.audienceStep(now, t, a)
			r.expire(now, a)
		}
		if i%sampleEvery == 0 {
			r.sample(now)
			if r.opt.Timeline != nil {
				r.opt.Timeline.record(r, t.Seconds())
			}
		}
		r.stats(dt)
	}
	r.sum.SimSeconds = sc.Duration.Seconds()
	r.sum.WallSeconds = time.Since(start).Seconds()
	if r.sum.WallSeconds > 0 {
		r.sum.DecisionsPerSecond = math.Round(float64(r.sum.Requests) / r.sum.WallSeconds)
	}
	r.sum.RelaysAtEnd = len(r.relays)
	r.sum.MeanDistanceStretch, r.sum.P99DistanceStretch = r.hist.mean(), r.hist.quantile(0.99)
	return nil
}

func (r *run) viewers() int64 {
	var n int64
	for _, a := range r.aud {
		n += a.watch
	}
	return n
}

// activate starts serving the relays whose start-up delay has passed.
func (r *run) activate(now time.Time) {
	kept := r.pending[:0]
	for _, p := range r.pending {
		if now.Before(p.ready) {
			kept = append(kept, p)
			continue
		}
		if r.relays[p.key] {
			for _, m := range r.meshes {
				m.Open(p.key.server, p.key.stream)
			}
			r.scaler.Ready(int(p.key.server), int(p.key.stream))
		}
	}
	r.pending = kept
}

// audienceStep moves an audience toward its target size: departures leave
// proportionally from the servers holding it, arrivals (and viewers still
// waiting) ask placement one by one.
func (r *run) audienceStep(now time.Time, t time.Duration, a *audience) {
	target := int64(math.Round(a.spec.at(t) * r.opt.Scale))
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
			r.ds = r.tracker.ObserveN(now, int(a.stream), a.vertex, float64(n), res.Nearest, r.ds[:0])
			r.demandDecisions(now)
			return
		}
		r.ds = r.tracker.Observe(now, int(a.stream), a.vertex, res.Nearest, r.ds[:0])
		m.AddViewers(res.Server, a.stream, 1)
		r.account(res.Server, a.stream, 1)
		a.add(res.Server, 1)
		a.waiting--
		n--
		if len(r.ds) > 0 {
			r.demandDecisions(now)
		}
	}
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

func (r *run) demandDecisions(now time.Time) {
	for _, d := range r.ds {
		dec, ok := r.scaler.OpenAt(now, d.Stream, d.Location, d.Reason)
		if !ok {
			r.tracker.SetHosted(d.Stream, d.Location, false)
			continue
		}
		r.sum.RelaysOpenedByDemand++
		r.open(now, dec)
	}
}

func (r *run) regionOf(server placement.ServerID) graph.VertexID {
	return r.g.Region(r.mesh.Server(server).Vertex)
}

func (r *run) open(now time.Time, d scaling.Decision) {
	k := relayKey{placement.ServerID(d.Server), placement.StreamID(d.Stream)}
	r.relays[k] = true
	loc := r.mesh.Server(k.server).Vertex
	r.atLoc[[2]int32{int32(k.stream), int32(loc)}]++
	r.tracker.SetHosted(d.Stream, loc, true)
	r.pending = append(r.pending, pendingOpen{key: k, ready: now.Add(r.sc.RelayStartup)})
	r.sum.RelaysOpened++
	if r.mesh.Server(k.server).Role == graph.RoleReserve {
		r.sum.RelaysOpenedInReserve++
	}
	rk := regionKey{k.stream, r.regionOf(k.server)}
	if c, ok := r.lastClose[rk]; ok && now.Sub(c) < r.oscWindow {
		r.sum.Oscillations++
		r.log.Debug("oscillation: open soon after a close", "stream", r.mesh.StreamName(k.stream), "region", r.g.Location(rk.region).ID)
	}
	r.lastOpen[rk] = now
	r.sum.RelaysPeak = max(r.sum.RelaysPeak, len(r.relays))
	r.log.Debug("open", "reason", d.Reason)
}

func (r *run) sample(now time.Time) {
	r.samples = r.samples[:0]
	keys := make([]relayKey, 0, len(r.relays)+len(r.byStrm))
	for k := range r.relays {
		keys = append(keys, k)
	}
	if p := r.mesh.Primary(); p != placement.NoServer {
		for s := range r.byStrm {
			keys = append(keys, relayKey{p, placement.StreamID(s)})
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].server != keys[j].server {
			return keys[i].server < keys[j].server
		}
		return keys[i].stream < keys[j].stream
	})
	for _, k := range keys {
		var n int64
		for _, a := range r.byStrm[k.stream] {
			if i, ok := a.idx[k.server]; ok {
				n += a.on[i].n
			}
		}
		r.samples = append(r.samples, scaling.Sample{Server: int(k.server), Stream: int(k.stream), Viewers: float64(n)})
	}
	r.scaleDs = r.scaler.Evaluate(now, r.samples, r.scaleDs[:0])
	for _, d := range r.scaleDs {
		k := relayKey{placement.ServerID(d.Server), placement.StreamID(d.Stream)}
		switch d.Action {
		case scaling.ActionOpen:
			r.open(now, d)
		case scaling.ActionDrain:
			r.log.Debug("drain", "reason", d.Reason)
			r.closeAll(k)
			r.evict(now, k.server, k.stream)
		case scaling.ActionClose:
			r.log.Debug("close", "reason", d.Reason)
			r.closeAll(k)
			r.evict(now, k.server, k.stream)
			r.closeRelay(now, k)
		}
	}
	r.shed(now)
	// Every redirector learns the true load and the prediction.
	for _, k := range keys {
		p := int64(r.scaler.Predicted(int(k.server)))
		for _, m := range r.meshes {
			m.SetPredicted(k.server, p)
		}
	}
	for id := range r.actual {
		for _, m := range r.meshes {
			m.SetLoad(placement.ServerID(id), r.actual[id], float64(r.kbps[id])/1000)
		}
	}
}

func (r *run) closeRelay(now time.Time, k relayKey) {
	if !r.relays[k] {
		return
	}
	delete(r.relays, k)
	loc := r.mesh.Server(k.server).Vertex
	lk := [2]int32{int32(k.stream), int32(loc)}
	if r.atLoc[lk]--; r.atLoc[lk] <= 0 {
		delete(r.atLoc, lk)
		r.tracker.SetHosted(int(k.stream), loc, false)
	}
	r.sum.RelaysClosed++
	rk := regionKey{k.stream, r.regionOf(k.server)}
	if o, ok := r.lastOpen[rk]; ok && now.Sub(o) < r.oscWindow {
		r.sum.Oscillations++
		r.log.Debug("oscillation: close soon after an open", "stream", r.mesh.StreamName(k.stream), "region", r.g.Location(rk.region).ID)
	}
	r.lastClose[rk] = now
}

// stats accounts one tick: peak viewers, utilisation, over-capacity time
// and the distance stretch of every watching viewer.
func (r *run) stats(dt float64) {
	r.sum.ViewersPeak = max(r.sum.ViewersPeak, r.viewers())
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
		}
	}
}
