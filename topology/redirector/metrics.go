package redirector

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/relaymesh/relaymesh/topology/placement"
)

// reasonLabel is the metric label of each placement.Reason.
var reasonLabel = map[placement.Reason]string{
	placement.ReasonNearest: "nearest", placement.ReasonTie: "tie", placement.ReasonReserve: "reserve",
	placement.ReasonUnreachable: "unreachable", placement.ReasonSticky: "sticky", placement.ReasonFull: "full",
	placement.ReasonUnknown: "unknown", placement.ReasonDisplaced: "displaced",
}

// maxReasons bounds the placement reasons counted (placement.Reason is a small enum).
const maxReasons = 16

// answers counts /play answers without locks: by placement reason, plus
// spills to the overflow CDN and 503s.
type answers struct {
	byReason [maxReasons]atomic.Uint64
	overflow atomic.Uint64
	full     atomic.Uint64
	steered  atomic.Uint64
}

func (a *answers) placed(r placement.Reason) {
	if int(r) < maxReasons {
		a.byReason[r].Add(1)
	}
}

var (
	descAnswers = prometheus.NewDesc("relaymesh_redirector_decisions_total",
		"Viewers sent to a server, by the placement's reason.", []string{"reason"}, nil)
	descOverflow = prometheus.NewDesc("relaymesh_redirector_overflow_total",
		"HLS/DASH viewers sent to the overflow CDN because every server was full.", nil, nil)
	descFull = prometheus.NewDesc("relaymesh_redirector_full_total",
		"Viewers told to retry later (503) because every server was full.", nil, nil)
	descSteered = prometheus.NewDesc("relaymesh_redirector_steering_answers_total",
		"Content steering manifests served to HLS and DASH players.", nil, nil)
	descDisconnects = prometheus.NewDesc("relaymesh_redirector_relay_disconnects_total",
		"Relays' NATS disconnects seen, by what their listener said: gone (refused: out of rotation at once), alive (answered), unknown (no answer: the heartbeat timeout decides), unprobed (no address, or too many probes in flight).", []string{"outcome"}, nil)
	descDemandDropped = prometheus.NewDesc("relaymesh_redirector_demand_dropped_total",
		"Demand messages dropped because the bus queue was full.", nil, nil)
)

// Collector exports the redirector's metrics.
func (r *Redirector) Collector() prometheus.Collector { return redirCollector{r} }

type redirCollector struct{ r *Redirector }

func (c redirCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descAnswers
	ch <- descOverflow
	ch <- descFull
	ch <- descDemandDropped
	ch <- descSteered
	ch <- descDisconnects
}

func (c redirCollector) Collect(ch chan<- prometheus.Metric) {
	a := &c.r.answers
	for i := range a.byReason {
		if n := a.byReason[i].Load(); n > 0 {
			label, ok := reasonLabel[placement.Reason(i)]
			if !ok {
				label = "other"
			}
			ch <- prometheus.MustNewConstMetric(descAnswers, prometheus.CounterValue, float64(n), label)
		}
	}
	ch <- prometheus.MustNewConstMetric(descOverflow, prometheus.CounterValue, float64(a.overflow.Load()))
	ch <- prometheus.MustNewConstMetric(descFull, prometheus.CounterValue, float64(a.full.Load()))
	ch <- prometheus.MustNewConstMetric(descDemandDropped, prometheus.CounterValue, float64(c.r.dropped.Load()))
	ch <- prometheus.MustNewConstMetric(descSteered, prometheus.CounterValue, float64(a.steered.Load()))
	for o, name := range outcomeLabel {
		ch <- prometheus.MustNewConstMetric(descDisconnects, prometheus.CounterValue, float64(c.r.disconnects.n[o].Load()), name)
	}
}

// Outcomes of a relay's disconnect (disconnect.go).
const (
	outcomeGone = iota
	outcomeAlive
	outcomeUnknown
	outcomeUnprobed
	numOutcomes
)

var outcomeLabel = [numOutcomes]string{"gone", "alive", "unknown", "unprobed"}

type disconnectCounts struct{ n [numOutcomes]atomic.Uint64 }

func (d *disconnectCounts) add(o int) { d.n[o].Add(1) }
