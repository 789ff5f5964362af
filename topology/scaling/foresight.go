package scaling

import (
	"math"
	"time"

	"github.com/relaymesh/relaymesh/topology/graph"
)

// Foresight gives the scaler the true audience in place of its
// predictions: a diagnostic of the simulator (`relaymesh sim --foresight`),
// which knows the scenario's future, to tell how much of a run's excess
// relay-seconds a perfect predictor would take away, and which part of the
// prediction it is in. The orchestrator never sets it.
type Foresight struct {
	// Audience, when set, returns the whole audience of the named stream
	// at t: the growth the stream's audience predicts over the horizon
	// becomes the true growth, split over the regions by the usual rules.
	Audience func(stream string, t time.Time) float64
	// Region, when set, returns the viewers of the named stream located
	// in region at t: each region's relays are provisioned for exactly
	// its own viewers at the horizon (no margin, no shares, no guests).
	Region func(stream string, region graph.VertexID, t time.Time) float64
	// RegionNow asks Region for the present only: each region's own
	// viewers now are known (what relays that counted their viewers by
	// the viewers' location would report), and a predictor per region
	// extrapolates them over the horizon, times Margin while the growth
	// steepens, as the load's predictor does.
	RegionNow bool
}

// streamGrowth is the growth of stream id's whole audience over its
// horizon from now: predicted, or the true growth under Foresight.
func (s *Scaler) streamGrowth(now time.Time, id int, sp *Predictor) float64 {
	h := s.horizon(id)
	if f := s.cfg.Foresight.Audience; f != nil {
		return math.Max(0, f(s.name(id), now.Add(h))-sp.Last())
	}
	return math.Max(0, s.predictRise(sp, h)-sp.Last())
}

// foreseen is the load group g provisions for under Foresight.Region.
func (s *Scaler) foreseen(now time.Time, g *group, h time.Duration) float64 {
	f := s.cfg.Foresight
	name := s.name(g.key.stream)
	if !f.RegionNow {
		return f.Region(name, g.key.region, now.Add(h))
	}
	own := f.Region(name, g.key.region, now)
	if g.own == nil {
		g.own = NewPredictor(s.cfg.Window)
	}
	g.own.Add(now, own)
	_, slope, accel := g.own.Predict(h)
	margin := 1.0
	if steepening(slope, accel, h) {
		margin = s.cfg.Margin
	}
	return own + margin*math.Max(0, s.predictRise(g.own, h)-own)
}
