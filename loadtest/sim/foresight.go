package sim

import (
	"math"
	"time"

	"github.com/relaymesh/relaymesh/topology/graph"
)

// trueAudience is the scenario's audience of the named stream at t (the
// viewers its curves put there, scaled as the run is): Options.Foresight.
func (r *run) trueAudience(stream string, t time.Time) float64 {
	return r.audienceWhere(stream, t, func(*audience) bool { return true })
}

// trueRegionAudience is the scenario's audience of the named stream at t
// located in region.
func (r *run) trueRegionAudience(stream string, region graph.VertexID, t time.Time) float64 {
	return r.audienceWhere(stream, t, func(a *audience) bool { return r.g.Region(a.vertex) == region })
}

func (r *run) audienceWhere(stream string, t time.Time, keep func(*audience) bool) float64 {
	n := 0.0
	for _, a := range r.aud {
		if a.spec.Stream == stream && keep(a) {
			n += math.Round(a.spec.at(t.Sub(epoch)) * r.opt.Scale)
		}
	}
	return n
}
