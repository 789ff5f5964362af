package sim

import (
	"github.com/relaymesh/relaymesh/topology/controller"
)

// Replay gives a fresh controller, configured for sc exactly as Run
// configures the one it simulates, the events in order and returns every
// decision it took. Fed the journal of a running orchestrator
// (orchestrator.Config.Journal) it shows whether the orchestrator decides
// what the simulator would for the same events.
func Replay(sc *Scenario, events []controller.Event) []controller.Decision {
	p := controllerPolicy{controller.New(ControllerConfig(sc), sc.graph)}
	var out []controller.Decision
	for _, e := range events {
		out = p.apply(e, out)
	}
	return out
}
