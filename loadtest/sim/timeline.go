package sim

import (
	"github.com/relaymesh/relaymesh/topology/distance"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/placement"
)

// Timeline is what the HTML report draws: per region, viewers and serving
// servers over time; the mean stretch (and the oracle's), waiting viewers,
// open relays (and those the oracle's placement needs) and the highest
// server utilisation. Run fills it when Options.Timeline is set, at every
// sample interval of the scenario.
type Timeline struct {
	Policy  string      `json:"policy"`
	Regions []string    `json:"regions"`
	Points  []TimePoint `json:"points"`

	index map[graph.VertexID]int
}

// TimePoint is one sample.
type TimePoint struct {
	T             float64 `json:"t"`       // simulated seconds
	Viewers       []int64 `json:"viewers"` // per region, in Regions' order
	Servers       []int   `json:"servers"` // servers with viewers, per region
	Utilization   float64 `json:"utilization"`
	Stretch       float64 `json:"stretch"`        // mean over the viewers watching now
	OracleStretch float64 `json:"oracle_stretch"` // the oracle's for the same moment
	Waiting       int64   `json:"waiting"`        // viewers without a server
	Relays        int     `json:"relays"`         // relays open (starting, serving or draining)
	OracleRelays  float64 `json:"oracle_relays"`  // relays the oracle's placement needs
}

// maxTimelinePoints bounds the report's size; samples are thinned beyond it.
const maxTimelinePoints = 2000

func (tl *Timeline) record(r *run, t float64) {
	tl.Policy = string(r.opt.Policy)
	if tl.index == nil {
		tl.index = map[graph.VertexID]int{}
		for i := range r.mesh.NumServers() {
			reg := r.regionOf(placement.ServerID(i))
			if _, ok := tl.index[reg]; !ok {
				tl.index[reg] = len(tl.Regions)
				tl.Regions = append(tl.Regions, r.g.Location(reg).ID)
			}
		}
	}
	p := TimePoint{T: t, Viewers: make([]int64, len(tl.Regions)), Servers: make([]int, len(tl.Regions)),
		Relays: len(r.relays), OracleStretch: r.oracle.lastStretch, OracleRelays: r.oracle.lastRelays}
	for i := range r.mesh.NumServers() {
		id := placement.ServerID(i)
		n := r.actual[i]
		if n == 0 {
			continue
		}
		k := tl.index[r.regionOf(id)]
		p.Viewers[k] += n
		p.Servers[k]++
		if s := r.mesh.Server(id); s.CapacityViewers > 0 {
			p.Utilization = max(p.Utilization, float64(n)/float64(s.CapacityViewers))
		}
	}
	sum, tot := 0.0, 0.0
	for _, a := range r.aud {
		p.Waiting += a.waiting
		if a.best == distance.Inf {
			continue
		}
		for _, h := range a.on {
			if h.n == 0 {
				continue
			}
			d := r.table.Dist(a.vertex, r.table.DestIndex(r.mesh.Server(h.server).Vertex))
			if d == distance.Inf {
				continue
			}
			sum += float64(max(d, 1)/max(a.best, 1)) * float64(h.n)
			tot += float64(h.n)
		}
	}
	if tot > 0 {
		p.Stretch = sum / tot
	}
	tl.Points = append(tl.Points, p)
	if len(tl.Points) > maxTimelinePoints {
		// Keep every other point: the report stays small, the curve's shape stays.
		kept := tl.Points[:0]
		for i, q := range tl.Points {
			if i%2 == 0 {
				kept = append(kept, q)
			}
		}
		tl.Points = kept
	}
}
