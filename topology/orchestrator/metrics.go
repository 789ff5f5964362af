package orchestrator

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// counters are the orchestrator's Prometheus counters, updated at the rate
// of decisions and commands (low), read by the collector at scrape time.
type counters struct {
	mu        sync.Mutex
	decisions map[string]uint64    // by action
	commands  map[[2]string]uint64 // by op and result ("ok", "error")
}

func (c *counters) decision(action string) {
	c.mu.Lock()
	if c.decisions == nil {
		c.decisions = map[string]uint64{}
	}
	c.decisions[action]++
	c.mu.Unlock()
}

func (c *counters) command(op string, err error) {
	res := "ok"
	if err != nil {
		res = "error"
	}
	c.mu.Lock()
	if c.commands == nil {
		c.commands = map[[2]string]uint64{}
	}
	c.commands[[2]string{op, res}]++
	c.mu.Unlock()
}

var (
	descDecisions = prometheus.NewDesc("relaymesh_orchestrator_decisions_total",
		"Decisions taken as leader, by action (open, ready, failed, drain, close, down).", []string{"action"}, nil)
	descCommands = prometheus.NewDesc("relaymesh_orchestrator_commands_total",
		"Commands sent to relays, by operation and result.", []string{"op", "result"}, nil)
	descLeader = prometheus.NewDesc("relaymesh_orchestrator_leader",
		"1 while this instance holds the leadership lease.", nil, nil)
	descTerms = prometheus.NewDesc("relaymesh_orchestrator_lease_acquired_total",
		"Times this instance acquired the leadership lease.", nil, nil)
)

// Collector exports the orchestrator's metrics; register it on the
// process's Prometheus registry.
func (o *Orchestrator) Collector() prometheus.Collector { return collector{o} }

type collector struct{ o *Orchestrator }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descDecisions
	ch <- descCommands
	ch <- descLeader
	ch <- descTerms
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	o := c.o
	leader := 0.0
	if o.Leader() {
		leader = 1
	}
	ch <- prometheus.MustNewConstMetric(descLeader, prometheus.GaugeValue, leader)
	ch <- prometheus.MustNewConstMetric(descTerms, prometheus.CounterValue, float64(o.Terms()))
	o.counters.mu.Lock()
	defer o.counters.mu.Unlock()
	for a, n := range o.counters.decisions {
		ch <- prometheus.MustNewConstMetric(descDecisions, prometheus.CounterValue, float64(n), a)
	}
	for k, n := range o.counters.commands {
		ch <- prometheus.MustNewConstMetric(descCommands, prometheus.CounterValue, float64(n), k[0], k[1])
	}
}
