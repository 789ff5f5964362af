package sim

import (
	"context"
	"strings"
	"testing"
)

// Foresight is a diagnostic: the controller given the true audience. With
// each region's own audience at the horizon known, the whistle's step
// takes fewer relay-seconds than the controller's own predictions do
// (docs/performance.md, "Where the whistle's excess is"), and it is
// labelled as not the controller's own figures.
func TestForesight(t *testing.T) {
	sc, err := LoadScenario(scenarioPath("whistle.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{Scale: 0.1, ScaleCapacity: true}
	own, err := Run(context.Background(), sc, opt)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]*Summary{}
	for _, mode := range []string{ForesightStream, ForesightRegion, ForesightRegionNow} {
		opt.Foresight = mode
		sum, err := Run(context.Background(), sc, opt)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Foresight != mode || sum.RelaySecondsOverCapacity != 0 || sum.Oscillations != 0 {
			t.Fatalf("foresight %s: %+v", mode, sum)
		}
		var b strings.Builder
		if err := sum.WriteText(&b); err != nil || !strings.Contains(b.String(), "foresight ("+mode) {
			t.Fatalf("foresight %s: its text does not say so (%v):\n%s", mode, err, b.String())
		}
		runs[mode] = sum
	}
	if r := runs[ForesightRegion]; r.RelaySecondsVsPacked >= own.RelaySecondsVsPacked {
		t.Fatalf("relay-seconds ÷ packed minimum: with each region's audience known %.3f, the controller's own %.3f", r.RelaySecondsVsPacked, own.RelaySecondsVsPacked)
	}

	for _, bad := range []Options{{Foresight: "oracle"}, {Foresight: ForesightRegion, Policy: PolicyStatic}} {
		if _, err := Run(context.Background(), sc, bad); err == nil {
			t.Fatalf("%+v: no error", bad)
		}
	}
}
