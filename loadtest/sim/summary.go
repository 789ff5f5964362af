package sim

import (
	"fmt"
	"io"
	"math"
)

// Summary is the result of a run. JSON field names are part of the
// simulator's interface (see loadtest/scenarios/README.md).
type Summary struct {
	Scenario    string  `json:"scenario"`
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

	RelaysOpened          int `json:"relays_opened"`
	RelaysOpenedByDemand  int `json:"relays_opened_by_demand"`
	RelaysOpenedInReserve int `json:"relays_opened_in_reserve"`
	RelaysClosed          int `json:"relays_closed"`
	RelaysPeak            int `json:"relays_peak"`
	RelaysAtEnd           int `json:"relays_at_end"`

	PeakUtilization          float64 `json:"peak_utilization"`
	RelaySecondsOverCapacity float64 `json:"relay_seconds_over_capacity"`
	MeanDistanceStretch      float64 `json:"mean_distance_stretch"`
	P99DistanceStretch       float64 `json:"p99_distance_stretch"`
	Oscillations             int     `json:"oscillations"`
	DecisionsPerSecond       float64 `json:"decisions_per_second"`
}

// WriteText writes a readable report.
func (s *Summary) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, `scenario %s (seed %d, scale %g): %.0f s simulated in %.2f s

viewers
  peak concurrent            %d
  placement requests         %d  (%.0f decisions/s)
  rejected (retry later)     %d  (%.0f viewer-seconds waiting)
  moved off drained relays   %d
  placed again (token expiry) %d
  shed over hard limit       %d
relays
  opened                     %d  (%d by demand bonus, %d in the reserve pool)
  closed                     %d
  peak / at end              %d / %d
  oscillations               %d
load
  peak utilisation           %.1f %%
  relay-seconds over cap.    %.0f
distance stretch (assigned / best possible, per viewer-second)
  mean                       %.3f
  p99                        %.3f
`, s.Scenario, s.Seed, s.Scale, s.SimSeconds, s.WallSeconds,
		s.ViewersPeak, s.Requests, s.DecisionsPerSecond, s.RequestsRejected, s.ViewerSecondsWaiting, s.ViewersMigrated, s.ViewersReplaced, s.ViewersShed,
		s.RelaysOpened, s.RelaysOpenedByDemand, s.RelaysOpenedInReserve, s.RelaysClosed, s.RelaysPeak, s.RelaysAtEnd, s.Oscillations,
		s.PeakUtilization*100, s.RelaySecondsOverCapacity, s.MeanDistanceStretch, s.P99DistanceStretch)
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
