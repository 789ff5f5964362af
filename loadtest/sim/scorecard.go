package sim

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Scorecard is a scenario run by the controller and by the two baselines
// (the same viewers, seed and placement), with the goals checked.
type Scorecard struct {
	Scenario string     `json:"scenario"`
	Runs     []*Summary `json:"runs"` // controller, static, load-only
	Goals    []Goal     `json:"goals"`

	timelines []*Timeline
}

// Goal is one of the mesh's goals (issue "mesh intelligence you can
// trust") checked on the controller's run.
type Goal struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Limit float64 `json:"limit"`
	Met   bool    `json:"met"`
}

// RunScorecard runs sc with every policy. With timelines, each run records
// one (Timelines returns them in the order of Runs).
func RunScorecard(ctx context.Context, sc *Scenario, opt Options, timelines bool) (*Scorecard, error) {
	card := &Scorecard{Scenario: sc.Name}
	for _, p := range Policies {
		o := opt
		o.Policy = p
		o.Timeline = nil
		if timelines {
			o.Timeline = &Timeline{}
		}
		if p != PolicyController {
			o.Progress, o.Journal = nil, nil
		}
		s, err := Run(ctx, sc, o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		card.Runs = append(card.Runs, s)
		card.timelines = append(card.timelines, o.Timeline)
	}
	card.Goals = CheckGoals(card.Runs[0], card.Runs[1])
	return card, nil
}

// SingleRun is a scorecard of one run (no baselines, no goals against
// them), for a report of one policy.
func SingleRun(sc *Scenario, s *Summary, tl *Timeline) *Scorecard {
	return &Scorecard{Scenario: sc.Name, Runs: []*Summary{s}, Goals: CheckGoals(s, nil), timelines: []*Timeline{tl}}
}

// Timelines returns the runs' timelines (nil without).
func (c *Scorecard) Timelines() []*Timeline { return c.timelines }

// CheckGoals checks the controller's run s against the goals, static being
// the static-everywhere baseline of the same scenario.
func CheckGoals(s, static *Summary) []Goal {
	le := func(name string, v, limit float64) Goal {
		return Goal{Name: name, Value: v, Limit: limit, Met: v <= limit}
	}
	gs := []Goal{
		le("relay-seconds over capacity", s.RelaySecondsOverCapacity, 0),
		le("waiting share of viewer-seconds", s.WaitingShare, 0.01),
		le("mean stretch / oracle's", s.StretchVsOracle, 1.05),
		// The offline minimum packs relays to their capacity: what the
		// viewers need at least. The controller keeps headroom below its
		// high watermark on purpose; that cost is inside the 1.25 allowed,
		// not taken off the goal (RelaySecondsVsMinimum shows it apart).
		le("relay-seconds / offline minimum", s.RelaySecondsVsPacked, 1.25),
		le("relays closed within 5 min", float64(s.Oscillations), 0),
	}
	if static != nil && static.RelaySeconds > 0 && static.MeanDistanceStretch > 0 {
		gs = append(gs,
			le("relay-seconds / static's", round3(s.RelaySeconds/static.RelaySeconds), 0.6),
			le("mean stretch / static's", round3(s.MeanDistanceStretch/static.MeanDistanceStretch), 1.05))
	}
	return gs
}

// Met reports whether every goal is met.
func (c *Scorecard) Met() bool {
	for _, g := range c.Goals {
		if !g.Met {
			return false
		}
	}
	return true
}

// scoreRows are the scorecard's lines: a label and a value per run.
var scoreRows = []struct {
	label string
	value func(s *Summary) string
}{
	{"viewers, peak", func(s *Summary) string { return fmt.Sprint(s.ViewersPeak) }},
	{"mean stretch (oracle)", func(s *Summary) string {
		return fmt.Sprintf("%.3f (%.3f)", s.MeanDistanceStretch, s.OracleMeanStretch)
	}},
	{"stretch / oracle's", func(s *Summary) string { return fmt.Sprintf("%.3f", s.StretchVsOracle) }},
	{"p99 stretch (oracle)", func(s *Summary) string {
		return fmt.Sprintf("%.2f (%.2f)", s.P99DistanceStretch, s.OracleP99Stretch)
	}},
	{"waiting viewer-seconds (share)", func(s *Summary) string {
		return fmt.Sprintf("%.0f (%.3f %%)", s.ViewerSecondsWaiting, s.WaitingShare*100)
	}},
	{"score with waiting ×10 (oracle)", func(s *Summary) string { return fmt.Sprintf("%.3f (%.3f)", s.Score, s.OracleScore) }},
	{"relay-seconds (÷ offline minimum)", func(s *Summary) string {
		return fmt.Sprintf("%.0f (%.2f×)", s.RelaySeconds, s.RelaySecondsVsPacked)
	}},
	{"offline minimum (at the high watermark, ÷)", func(s *Summary) string {
		return fmt.Sprintf("%.0f (%.0f, %.2f×)", s.RelaySecondsPacked, s.RelaySecondsMinimum, s.RelaySecondsVsMinimum)
	}},
	{"minimum, 5-min lifetime (÷; from start-up ÷)", func(s *Summary) string {
		return fmt.Sprintf("%.0f (%.2f×; %.2f×)", s.RelaySecondsLifetime, s.RelaySecondsVsLifetime, s.RelaySecondsVsLifetimeStartup)
	}},
	{"relays opened / peak", func(s *Summary) string { return fmt.Sprintf("%d / %d", s.RelaysOpened, s.RelaysPeak) }},
	{"closed <1m / 1-5m / 5-15m / >15m", func(s *Summary) string {
		l := s.Lifetimes
		return fmt.Sprintf("%d / %d / %d / %d", l.Under1m, l.Under5m, l.Under15m, l.Over15m)
	}},
	{"oscillations (closed < 5 min)", func(s *Summary) string { return fmt.Sprint(s.Oscillations) }},
	{"viewers moved", func(s *Summary) string { return fmt.Sprint(s.ViewersMoved) }},
	{"relay-seconds over capacity", func(s *Summary) string { return fmt.Sprintf("%.0f", s.RelaySecondsOverCapacity) }},
	{"peak utilisation", func(s *Summary) string { return fmt.Sprintf("%.1f %%", s.PeakUtilization*100) }},
}

// WriteText writes the scorecard as a table and the goals.
func (c *Scorecard) WriteText(w io.Writer) error {
	var b strings.Builder
	s0 := c.Runs[0]
	fmt.Fprintf(&b, "scorecard %s (seed %d, scale %g)\n\n", c.Scenario, s0.Seed, s0.Scale)
	fmt.Fprintf(&b, "%-34s", "")
	for _, s := range c.Runs {
		fmt.Fprintf(&b, " %-20s", s.Policy)
	}
	b.WriteString("\n")
	for _, row := range scoreRows {
		fmt.Fprintf(&b, "%-34s", row.label)
		for _, s := range c.Runs {
			fmt.Fprintf(&b, " %-20s", row.value(s))
		}
		b.WriteString("\n")
	}
	b.WriteString("\ngoals (controller)\n")
	for _, g := range c.Goals {
		mark := "met   "
		if !g.Met {
			mark = "MISSED"
		}
		fmt.Fprintf(&b, "  %s %-34s %.4g (limit %.4g)\n", mark, g.Name, g.Value, g.Limit)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
