package sim

import (
	"context"
	"testing"
)

// FuzzParseScenario: arbitrary scenario files give a scenario or an error,
// never a panic; tiny accepted ones also run.
func FuzzParseScenario(f *testing.F) {
	f.Add([]byte(tiny))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseScenario("fuzz.yaml", data, "")
		if err != nil {
			return
		}
		if sc.Duration/sc.Tick > 300 || len(sc.GraphWithServers().Servers()) > 200 {
			return // too big to run inside a fuzz iteration
		}
		for _, a := range sc.Audience {
			for _, p := range a.Curve {
				if p.Viewers > 1000 {
					return
				}
			}
		}
		if _, err := Run(context.Background(), sc, Options{}); err != nil {
			t.Fatal(err)
		}
	})
}
