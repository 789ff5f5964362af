package sim

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/relaymesh/relaymesh/topology/controller"
	"github.com/relaymesh/relaymesh/topology/demand"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/scaling"
)

// Policy names a decider the simulator runs.
type Policy string

// Policies: the mesh's controller and the two baselines of the scorecard.
const (
	// PolicyController is topology/controller: demand bonus, per-region
	// scaling, the orchestrator's own decisions.
	PolicyController Policy = "controller"
	// PolicyStatic opens every relay server for every stream at t = 0 and
	// never closes one ("static relays everywhere").
	PolicyStatic Policy = "static"
	// PolicyLoadOnly is load-only autoscaling in the style of Red5 Pro's
	// stream manager: one edge per region and stream from t = 0, one more
	// edge in a region whenever the average load of its edges is above
	// 0.6 × their limit, one fewer after a minute below 0.2 × the limit.
	PolicyLoadOnly Policy = "load-only"
)

// Policies lists every policy, the controller first.
var Policies = []Policy{PolicyController, PolicyStatic, PolicyLoadOnly}

// policy is what the simulator asks for decisions: the same events the
// orchestrator gives its controller.
type policy interface {
	apply(e controller.Event, dst []controller.Decision) []controller.Decision
	predicted(server int) float64
}

// ControllerConfig is the controller configuration a scenario describes;
// the simulator runs exactly this.
func ControllerConfig(sc *Scenario) controller.Config {
	return controller.Config{
		Demand: demand.Config{K: sc.Demand.K, Threshold: sc.Demand.Threshold, HalfLife: sc.Demand.HalfLife,
			Floor: sc.Demand.Floor, DefaultCap: sc.Demand.DefaultCap},
		Scaling: scaling.Config{High: sc.Scaling.High, Low: sc.Scaling.Low, Hold: sc.Scaling.Hold, MinLifetime: sc.Scaling.MinLifetime,
			Horizon: sc.Scaling.Horizon, Window: sc.Scaling.Window, DrainTimeout: sc.Scaling.DrainTimeout,
			Margin: sc.Scaling.Margin, Settle: sc.Scaling.Settle,
			// the simulated viewers turned away ask again every tick
			RetryAfter: sc.Tick},
		FanOut:    sc.FanOut,
		StatusTTL: sc.StatusTTL,
	}
}

type controllerPolicy struct{ c *controller.Controller }

func (p controllerPolicy) apply(e controller.Event, dst []controller.Decision) []controller.Decision {
	return p.c.Apply(e, dst)
}
func (p controllerPolicy) predicted(server int) float64 { return p.c.Predicted(server) }

// baseline is the bookkeeping both baselines share: relays by (server,
// stream), servers' last statuses, down detection.
type baseline struct {
	g       *graph.Graph
	ttl     time.Duration
	streams map[string]int
	names   []string
	relays  map[[2]int]controller.State
	seen    []time.Time
	down    []bool
	loads   [][]controller.Load
}

func newBaseline(g *graph.Graph, sc *Scenario) baseline {
	b := baseline{g: g, ttl: sc.StatusTTL, streams: map[string]int{}, relays: map[[2]int]controller.State{},
		seen: make([]time.Time, len(g.Servers())), down: make([]bool, len(g.Servers())), loads: make([][]controller.Load, len(g.Servers()))}
	for i, s := range sc.Streams {
		b.streams[s.ID] = i
		b.names = append(b.names, s.ID)
	}
	return b
}

func (b *baseline) open(srv, s int, why string, dst []controller.Decision) []controller.Decision {
	if _, ok := b.relays[[2]int{srv, s}]; ok || b.down[srv] {
		return dst
	}
	b.relays[[2]int{srv, s}] = controller.Opening
	return append(dst, controller.Decision{Action: controller.Open, Stream: s, Server: srv,
		Location: b.g.Servers()[srv].Vertex, Parent: b.g.Primary(), Reason: why})
}

// common handles ready, status and silence; it reports whether e was one
// of them.
func (b *baseline) common(e controller.Event, dst []controller.Decision) ([]controller.Decision, bool) {
	switch e.Kind {
	case controller.EvReady:
		s, ok := b.streams[e.Stream]
		if ok && b.relays[[2]int{e.Server, s}] == controller.Opening {
			b.relays[[2]int{e.Server, s}] = controller.Serving
			dst = append(dst, controller.Decision{Action: controller.Ready, Stream: s, Server: e.Server, Location: b.g.Servers()[e.Server].Vertex})
		}
		return dst, true
	case controller.EvFailed:
		if s, ok := b.streams[e.Stream]; ok {
			delete(b.relays, [2]int{e.Server, s})
		}
		return dst, true
	case controller.EvStatus:
		b.seen[e.Server] = e.Time
		b.down[e.Server] = false
		b.loads[e.Server] = append(b.loads[e.Server][:0], e.Loads...)
		return dst, true
	case controller.EvTick:
		for i := range b.seen {
			if b.down[i] || b.seen[i].IsZero() || e.Time.Sub(b.seen[i]) < b.ttl {
				continue
			}
			dst = b.markDown(i, dst)
		}
		return dst, false
	case controller.EvGone:
		if e.Server >= 0 && e.Server < len(b.down) && !b.down[e.Server] {
			dst = b.markDown(e.Server, dst)
		}
		return dst, true
	}
	return dst, true
}

// markDown forgets server i's relays, as the controller does.
func (b *baseline) markDown(i int, dst []controller.Decision) []controller.Decision {
	b.down[i] = true
	for s := range b.names {
		delete(b.relays, [2]int{i, s})
	}
	return append(dst, controller.Decision{Action: controller.Down, Stream: -1, Server: i, Location: b.g.Servers()[i].Vertex})
}

func (b *baseline) viewers(srv, s int) float64 {
	for _, l := range b.loads[srv] {
		if l.Stream == b.names[s] {
			return l.Viewers
		}
	}
	return 0
}

func (b *baseline) predicted(int) float64 { return 0 }

// staticPolicy keeps a relay of every stream on every relay server.
type staticPolicy struct{ baseline }

func (p *staticPolicy) apply(e controller.Event, dst []controller.Decision) []controller.Decision {
	dst, done := p.common(e, dst)
	if done {
		return dst
	}
	for i, sv := range p.g.Servers() {
		if sv.Role != graph.RoleRelay {
			continue
		}
		for s := range p.names {
			dst = p.open(i, s, "static: every relay server carries every stream", dst)
		}
	}
	return dst
}

// loadOnlyPolicy: per (stream, region) a group of edges that grows by one
// when the average load is above 0.6 of the limit and shrinks by one after
// a minute below 0.2. Edges go to the region's relay servers in graph
// order (the region's hub first); the reserve pool is not used.
type loadOnlyPolicy struct {
	baseline
	kbps    []float64
	regions []graph.VertexID
	servers map[graph.VertexID][]int
	below   map[[2]int]time.Time
	opened  map[[2]int]time.Time
	drains  map[[2]int]time.Time
}

const (
	loadOnlyUp   = 0.6
	loadOnlyDown = 0.2
	loadOnlyHold = time.Minute
)

func newLoadOnly(g *graph.Graph, sc *Scenario) *loadOnlyPolicy {
	p := &loadOnlyPolicy{baseline: newBaseline(g, sc), servers: map[graph.VertexID][]int{},
		below: map[[2]int]time.Time{}, opened: map[[2]int]time.Time{}, drains: map[[2]int]time.Time{}}
	for _, s := range sc.Streams {
		p.kbps = append(p.kbps, s.BitrateMbps*1000)
	}
	for i, sv := range g.Servers() {
		if sv.Role != graph.RoleRelay {
			continue
		}
		r := g.Region(sv.Vertex)
		if _, ok := p.servers[r]; !ok {
			p.regions = append(p.regions, r)
		}
		p.servers[r] = append(p.servers[r], i)
	}
	for _, r := range p.regions {
		srvs := p.servers[r]
		sort.SliceStable(srvs, func(i, j int) bool {
			return g.Servers()[srvs[i]].Vertex == r && g.Servers()[srvs[j]].Vertex != r
		})
	}
	return p
}

// limit is an edge's capacity for stream s in viewers.
func (p *loadOnlyPolicy) limit(srv, s int) float64 {
	sv := p.g.Servers()[srv]
	l := math.Inf(1)
	if sv.CapacityViewers > 0 {
		l = float64(sv.CapacityViewers)
	}
	if sv.CapacityMbps > 0 && p.kbps[s] > 0 {
		l = min(l, sv.CapacityMbps*1000/p.kbps[s])
	}
	return l
}

func (p *loadOnlyPolicy) apply(e controller.Event, dst []controller.Decision) []controller.Decision {
	dst, done := p.common(e, dst)
	if done {
		return dst
	}
	now := e.Time
	for _, r := range p.regions {
		for s := range p.names {
			var edges []int
			total, limit := 0.0, 0.0
			for _, srv := range p.servers[r] {
				if st, ok := p.relays[[2]int{srv, s}]; ok && st != controller.Draining {
					edges = append(edges, srv)
					total += p.viewers(srv, s)
					limit += p.limit(srv, s)
				}
			}
			k := [2]int{int(r), s}
			// Drained edges close when empty or after 30 s.
			for _, srv := range p.servers[r] {
				if p.relays[[2]int{srv, s}] == controller.Draining && (p.viewers(srv, s) == 0 || now.Sub(p.drains[[2]int{srv, s}]) >= 30*time.Second) {
					delete(p.relays, [2]int{srv, s})
					dst = append(dst, controller.Decision{Action: controller.Close, Stream: s, Server: srv, Location: p.g.Servers()[srv].Vertex, Reason: "load-only: drained"})
				}
			}
			if len(edges) == 0 {
				for _, srv := range p.servers[r] {
					if !p.down[srv] {
						dst = p.open(srv, s, "load-only: the region's first edge", dst)
						break
					}
				}
				continue
			}
			avg := total / float64(len(edges))
			lim := limit / float64(len(edges))
			switch {
			case avg > loadOnlyUp*lim:
				delete(p.below, k)
				for _, srv := range p.servers[r] {
					if _, ok := p.relays[[2]int{srv, s}]; !ok && !p.down[srv] {
						dst = p.open(srv, s, fmt.Sprintf("load-only: average %.0f per edge above %.0f", avg, loadOnlyUp*lim), dst)
						break
					}
				}
			case avg < loadOnlyDown*lim && len(edges) > 1:
				if _, ok := p.below[k]; !ok {
					p.below[k] = now
				}
				if now.Sub(p.below[k]) < loadOnlyHold {
					continue
				}
				p.below[k] = now
				least := -1
				for _, srv := range edges {
					if p.relays[[2]int{srv, s}] == controller.Serving && (least < 0 || p.viewers(srv, s) < p.viewers(least, s)) {
						least = srv
					}
				}
				if least >= 0 {
					p.relays[[2]int{least, s}] = controller.Draining
					p.drains[[2]int{least, s}] = now
					dst = append(dst, controller.Decision{Action: controller.Drain, Stream: s, Server: least, Location: p.g.Servers()[least].Vertex, Reason: "load-only: below the low mark"})
				}
			default:
				delete(p.below, k)
			}
		}
	}
	return dst
}
