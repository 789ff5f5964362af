package sim

import (
	"fmt"
	"io"
	"math"
	"time"
)

// Summary is the result of a run. JSON field names are part of the
// simulator's interface (see loadtest/scenarios/README.md).
type Summary struct {
	Scenario string `json:"scenario"`
	Policy   string `json:"policy"`
	// Foresight is the controller's diagnostic mode, if any
	// (Options.Foresight): its figures are not the controller's own.
	Foresight   string  `json:"foresight,omitempty"`
	Seed        uint64  `json:"seed"`
	Scale       float64 `json:"scale"`
	SimSeconds  float64 `json:"sim_seconds"`
	WallSeconds float64 `json:"wall_seconds"`

	ViewersPeak          int64   `json:"viewers_peak"`
	Requests             int64   `json:"requests"`
	RequestsRejected     int64   `json:"requests_rejected"`
	ViewerSecondsWaiting float64 `json:"viewer_seconds_waiting"`
	ViewersMigrated      int64   `json:"viewers_migrated"`
	ViewersReplaced      int64   `json:"viewers_replaced_on_token_expiry"`
	ViewersShed          int64   `json:"viewers_shed_over_hard_limit"`
	ViewersLost          int64   `json:"viewers_lost_with_a_server"`
	ViewersMovedNearer   int64   `json:"viewers_moved_nearer"` // provisional tokens, once a nearer relay serves
	ViewersMoved         int64   `json:"viewers_moved"`        // migrated + replaced + shed + lost + nearer
	ViewersChurned       int64   `json:"viewers_churned"`
	ViewerSeconds        float64 `json:"viewer_seconds"` // served
	WaitingShare         float64 `json:"waiting_share"`  // waiting / (served + waiting) viewer-seconds

	RelaysOpened          int `json:"relays_opened"`
	RelaysOpenedByDemand  int `json:"relays_opened_by_demand"`
	RelaysOpenedInReserve int `json:"relays_opened_in_reserve"`
	RelaysClosed          int `json:"relays_closed"`
	RelaysLost            int `json:"relays_lost"` // failed to start or went down with their server
	RelaysPeak            int `json:"relays_peak"`
	RelaysAtEnd           int `json:"relays_at_end"`

	PeakUtilization          float64 `json:"peak_utilization"`
	RelaySecondsOverCapacity float64 `json:"relay_seconds_over_capacity"`
	MeanDistanceStretch      float64 `json:"mean_distance_stretch"`
	P99DistanceStretch       float64 `json:"p99_distance_stretch"`
	Oscillations             int     `json:"oscillations"` // relays closed less than 5 min after opening
	DecisionsPerSecond       float64 `json:"decisions_per_second"`

	// The scorecard: against the capacity-aware oracle (oracle.go).
	OracleMeanStretch          float64 `json:"oracle_mean_stretch"`
	OracleP99Stretch           float64 `json:"oracle_p99_stretch"`
	OracleViewerSecondsWaiting float64 `json:"oracle_viewer_seconds_waiting"`
	StretchVsOracle            float64 `json:"stretch_vs_oracle"` // mean stretch / the oracle's
	Score                      float64 `json:"score"`             // stretch with waiting counted at WaitPenalty
	OracleScore                float64 `json:"oracle_score"`
	RelaySeconds               float64 `json:"relay_seconds"`
	RelaySecondsMinimum        float64 `json:"relay_seconds_minimum"`           // what the oracle's placement needs at the high watermark
	RelaySecondsPacked         float64 `json:"relay_seconds_minimum_packed"`    // the same packed to 100 % of capacity
	RelaySecondsVsMinimum      float64 `json:"relay_seconds_vs_minimum"`        // ÷ the minimum at the high watermark
	RelaySecondsVsPacked       float64 `json:"relay_seconds_vs_minimum_packed"` // ÷ the offline minimum (100 %): the goal's ratio
	// The packed minimum under the goals' own rule (lifetime.go): every
	// relay counted until it is 5 min old; "startup" also counts it from
	// the scenario's shortest start-up before it first serves.
	RelaySecondsLifetime          float64   `json:"relay_seconds_minimum_lifetime"`
	RelaySecondsVsLifetime        float64   `json:"relay_seconds_vs_minimum_lifetime"`
	RelaySecondsLifetimeStartup   float64   `json:"relay_seconds_minimum_lifetime_startup"`
	RelaySecondsVsLifetimeStartup float64   `json:"relay_seconds_vs_minimum_lifetime_startup"`
	Lifetimes                     Lifetimes `json:"relay_lifetimes"`
}

// WaitPenalty is the stretch a waiting viewer-second counts as in the
// combined score: being turned away is worse than being served from ten
// times the best distance.
const WaitPenalty = 10

// oscillationAge: a relay closed younger than this is an oscillation.
const oscillationAge = 5 * time.Minute

func score(stretchSum, servedVS, waitingVS float64) float64 {
	if servedVS+waitingVS == 0 {
		return 1
	}
	return round3((stretchSum + WaitPenalty*waitingVS) / (servedVS + waitingVS))
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func (s *Summary) derive() {
	if t := s.ViewerSeconds + s.ViewerSecondsWaiting; t > 0 {
		s.WaitingShare = math.Round(s.ViewerSecondsWaiting/t*1e5) / 1e5
	}
	if s.OracleMeanStretch > 0 {
		s.StretchVsOracle = round3(s.MeanDistanceStretch / s.OracleMeanStretch)
	}
	if s.RelaySecondsMinimum > 0 {
		s.RelaySecondsVsMinimum = round3(s.RelaySeconds / s.RelaySecondsMinimum)
	}
	if s.RelaySecondsPacked > 0 {
		s.RelaySecondsVsPacked = round3(s.RelaySeconds / s.RelaySecondsPacked)
	}
	if s.RelaySecondsLifetime > 0 {
		s.RelaySecondsVsLifetime = round3(s.RelaySeconds / s.RelaySecondsLifetime)
	}
	if s.RelaySecondsLifetimeStartup > 0 {
		s.RelaySecondsVsLifetimeStartup = round3(s.RelaySeconds / s.RelaySecondsLifetimeStartup)
	}
	s.RelaySeconds = math.Round(s.RelaySeconds)
	s.ViewerSeconds = math.Round(s.ViewerSeconds)
}

// Lifetimes counts relays by how long they lived: closed ones by their
// age at closing, the ones open at the end separately.
type Lifetimes struct {
	Under1m   int `json:"closed_under_1m"`
	Under5m   int `json:"closed_1m_to_5m"`
	Under15m  int `json:"closed_5m_to_15m"`
	Over15m   int `json:"closed_over_15m"`
	OpenAtEnd int `json:"open_at_end"`
}

func (l *Lifetimes) add(age time.Duration, open bool) {
	switch {
	case open:
		l.OpenAtEnd++
	case age < time.Minute:
		l.Under1m++
	case age < 5*time.Minute:
		l.Under5m++
	case age < 15*time.Minute:
		l.Under15m++
	default:
		l.Over15m++
	}
}

// WriteText writes a readable report.
func (s *Summary) WriteText(w io.Writer) error {
	policy := s.Policy
	if s.Foresight != "" {
		policy += " with foresight (" + s.Foresight + ": the true audience in place of predictions; a diagnostic, not the controller's own figures)"
	}
	_, err := fmt.Fprintf(w, `scenario %s, policy %s (seed %d, scale %g): %.0f s simulated in %.2f s

viewers
  peak concurrent            %d
  placement requests         %d  (%.0f decisions/s)
  rejected (retry later)     %d  (%.0f viewer-seconds waiting, %.3f %% of all)
  moved                      %d  (off drained relays %d, token expiry %d, shed %d, lost with a server %d, nearer %d)
  churned                    %d
relays
  opened                     %d  (%d by demand, %d in the reserve pool)
  closed / lost              %d / %d
  peak / at end              %d / %d
  by lifetime                <1m %d, 1-5m %d, 5-15m %d, >15m %d, open at end %d
  oscillations (<5 min)      %d
  relay-seconds              %.0f  (offline minimum %.0f: %.3f×; %.0f at the high watermark: %.3f×)
  minimum, 5-min lifetime    %.0f: %.3f×  (and counted from the start-up: %.0f: %.3f×)
load
  peak utilisation           %.1f %%
  relay-seconds over cap.    %.0f
distance stretch (assigned / best possible, per viewer-second)
  mean / p99                 %.3f / %.2f
  oracle mean / p99          %.3f / %.2f  (ratio %.3f)
  score with waiting (×%d)   %.3f  (oracle %.3f)
`, s.Scenario, policy, s.Seed, s.Scale, s.SimSeconds, s.WallSeconds,
		s.ViewersPeak, s.Requests, s.DecisionsPerSecond, s.RequestsRejected, s.ViewerSecondsWaiting, s.WaitingShare*100,
		s.ViewersMoved, s.ViewersMigrated, s.ViewersReplaced, s.ViewersShed, s.ViewersLost, s.ViewersMovedNearer, s.ViewersChurned,
		s.RelaysOpened, s.RelaysOpenedByDemand, s.RelaysOpenedInReserve, s.RelaysClosed, s.RelaysLost, s.RelaysPeak, s.RelaysAtEnd,
		s.Lifetimes.Under1m, s.Lifetimes.Under5m, s.Lifetimes.Under15m, s.Lifetimes.Over15m, s.Lifetimes.OpenAtEnd,
		s.Oscillations, s.RelaySeconds, s.RelaySecondsPacked, s.RelaySecondsVsPacked, s.RelaySecondsMinimum, s.RelaySecondsVsMinimum,
		s.RelaySecondsLifetime, s.RelaySecondsVsLifetime, s.RelaySecondsLifetimeStartup, s.RelaySecondsVsLifetimeStartup,
		s.PeakUtilization*100, s.RelaySecondsOverCapacity,
		s.MeanDistanceStretch, s.P99DistanceStretch, s.OracleMeanStretch, s.OracleP99Stretch, s.StretchVsOracle,
		WaitPenalty, s.Score, s.OracleScore)
	return err
}

// stretchHist is a weighted histogram of distance stretch values ≥ 1 in
// steps of 0.01 up to 50, with an overflow bucket.
type stretchHist struct {
	w        [4901]float64
	sum, tot float64
}

func (h *stretchHist) add(x, weight float64) {
	if math.IsNaN(x) || weight <= 0 {
		return
	}
	x = max(x, 1)
	i := min(int(math.Round((x-1)*100)), len(h.w)-1)
	h.w[i] += weight
	h.sum += x * weight
	h.tot += weight
}

func (h *stretchHist) mean() float64 {
	if h.tot == 0 {
		return 1
	}
	return math.Round(h.sum/h.tot*1000) / 1000
}

func (h *stretchHist) quantile(q float64) float64 {
	if h.tot == 0 {
		return 1
	}
	acc := 0.0
	for i, w := range h.w {
		acc += w
		if acc >= q*h.tot {
			return 1 + float64(i)/100
		}
	}
	return 50
}
