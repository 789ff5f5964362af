package sim

import (
	"context"
	"testing"
	"time"
)

// FuzzParseScenario: arbitrary scenario files give a scenario or an error,
// never a panic; tiny accepted ones also run.
func FuzzParseScenario(f *testing.F) {
	f.Add([]byte(tiny))
	f.Add([]byte(tiny + "relay_startup_max: 20s\nstatus_ttl: 3s\nfan_out: 2\nprovisional_tokens: false\n" +
		"failures: [{at: 10s, server: busiest}, {at: 20s, region: hub, for: 10s}, {at: 5s, server: a-relay-1-1, for: 1s}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseScenario("fuzz.yaml", data, "")
		if err != nil {
			return
		}
		// Running the simulation is the expensive part: only for small
		// scenarios, and bounded in time, so a fuzz worker never looks hung.
		if sc.Duration/sc.Tick > 30 || len(sc.GraphWithServers().Servers()) > 50 {
			return // too big to run inside a fuzz iteration
		}
		for _, a := range sc.Audience {
			for _, p := range a.Curve {
				if p.Viewers > 200 {
					return
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := Run(ctx, sc, Options{}); err != nil && ctx.Err() == nil {
			t.Fatal(err)
		}
	})
}
