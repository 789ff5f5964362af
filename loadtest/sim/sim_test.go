package sim

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func scenarioPath(name string) string { return filepath.Join("..", "scenarios", name) }

func runScenario(t *testing.T, name string, scale float64) *Summary {
	t.Helper()
	sc, err := LoadScenario(scenarioPath(name))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), sc, Options{Scale: scale})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// The step scenario at a tenth of its size: every viewer gets served, no
// relay ever exceeds its capacity, nothing oscillates, relays are opened
// and closed again as the audience falls.
func TestStepScenario(t *testing.T) {
	s := runScenario(t, "step.yaml", 0.1)
	t.Logf("%+v", *s)
	if s.ViewersPeak != 13300 {
		t.Errorf("viewers_peak = %d, want 13300", s.ViewersPeak)
	}
	if s.RelaySecondsOverCapacity != 0 {
		t.Errorf("relay_seconds_over_capacity = %v, want 0", s.RelaySecondsOverCapacity)
	}
	if s.Oscillations != 0 {
		t.Errorf("oscillations = %d", s.Oscillations)
	}
	if s.RelaysOpened == 0 || s.RelaysClosed == 0 || s.RelaysAtEnd >= s.RelaysPeak {
		t.Errorf("relays opened %d closed %d peak %d end %d", s.RelaysOpened, s.RelaysClosed, s.RelaysPeak, s.RelaysAtEnd)
	}
	if s.PeakUtilization > 1 || s.MeanDistanceStretch < 1 || s.P99DistanceStretch < 1 {
		t.Errorf("utilisation %v stretch mean %v p99 %v", s.PeakUtilization, s.MeanDistanceStretch, s.P99DistanceStretch)
	}
}

// The spike scenario at 5 %: 50,000 viewers; relays follow the audience up
// (by demand and scaling) and back down.
func TestSpikeScenario(t *testing.T) {
	s := runScenario(t, "spike.yaml", 0.05)
	t.Logf("%+v", *s)
	if s.ViewersPeak != 50_000 {
		t.Errorf("viewers_peak = %d, want 50000", s.ViewersPeak)
	}
	if s.RelaysOpenedByDemand == 0 || s.RelaysOpened <= s.RelaysOpenedByDemand {
		t.Errorf("opened %d, by demand %d: want both demand and scaling at work", s.RelaysOpened, s.RelaysOpenedByDemand)
	}
	if s.RelaySecondsOverCapacity != 0 || s.Oscillations != 0 {
		t.Errorf("over capacity %v s, oscillations %d", s.RelaySecondsOverCapacity, s.Oscillations)
	}
	if s.MeanDistanceStretch > 3 {
		t.Errorf("mean stretch %v", s.MeanDistanceStretch)
	}
	if s.DecisionsPerSecond <= 0 || s.Requests < s.ViewersPeak {
		t.Errorf("requests %d, decisions/s %v", s.Requests, s.DecisionsPerSecond)
	}
}

// Same seed, same result; a different seed still serves everyone.
func TestDeterministic(t *testing.T) {
	a := runScenario(t, "step.yaml", 0.02)
	b := runScenario(t, "step.yaml", 0.02)
	a.WallSeconds, b.WallSeconds, a.DecisionsPerSecond, b.DecisionsPerSecond = 0, 0, 0, 0
	if *a != *b {
		t.Fatalf("runs differ:\n%+v\n%+v", *a, *b)
	}
}

func TestCancel(t *testing.T) {
	sc, err := LoadScenario(scenarioPath("spike.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, sc, Options{Scale: 0.01}); err == nil {
		t.Fatal("cancelled run finished")
	}
}

const tiny = `
name: tiny
duration: 2m
graph:
  locations:
    - {id: hub}
    - {id: a, parent: hub}
    - {id: b, parent: hub}
  links:
    - {from: a, to: hub, cost: 1, symmetric: true}
    - {from: b, to: hub, cost: 1, symmetric: true}
primary: {location: hub, capacity_viewers: 100}
pools:
  - {locations: [a, b], servers: 3, capacity_viewers: 100}
streams: [{id: s}]
audience:
  - {stream: s, location: a, curve: [{at: 0s, viewers: 0}, {at: 30s, viewers: 300}]}
`

func TestInlineGraph(t *testing.T) {
	sc, err := ParseScenario("tiny.yaml", []byte(tiny), "")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(sc.GraphWithServers().Servers()); n != 7 {
		t.Fatalf("servers = %d", n)
	}
	s, err := Run(context.Background(), sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 300 viewers at a: three relays at a (one by demand, two by scaling)
	// plus the primary; everything at distance 0 or 1.
	if s.ViewersPeak != 300 || s.RelaySecondsOverCapacity != 0 || s.P99DistanceStretch > 1 {
		t.Fatalf("%+v", *s)
	}
}

func TestScenarioErrors(t *testing.T) {
	cases := map[string]string{
		"no duration":      "streams: [{id: s}]",
		"unknown field":    "duration: 1m\nspeed: 3",
		"unknown stream":   "duration: 1m\nprimary: {location: eu}\nstreams: [{id: s}]\naudience: [{stream: x, location: DE, curve: [{at: 0s, viewers: 1}]}]",
		"unknown loc":      "duration: 1m\nprimary: {location: eu}\nstreams: [{id: s}]\naudience: [{stream: s, location: XX, curve: [{at: 0s, viewers: 1}]}]",
		"time backwards":   "duration: 1m\nprimary: {location: eu}\nstreams: [{id: s}]\naudience: [{stream: s, location: DE, curve: [{at: 10s, viewers: 1}, {at: 5s, viewers: 1}]}]",
		"too many ticks":   "duration: 100h\ntick: 1ms\nstreams: [{id: s}]",
		"graph path":       "duration: 1m\ngraph: other.yaml\nprimary: {location: eu}\nstreams: [{id: s}]\naudience: [{stream: s, location: DE, curve: [{at: 0s, viewers: 1}]}]",
		"bad pool role":    "duration: 1m\nprimary: {location: eu}\npools: [{locations: [eu], servers: 1, role: boss}]\nstreams: [{id: s}]\naudience: [{stream: s, location: DE, curve: [{at: 0s, viewers: 1}]}]",
		"unknown pool loc": "duration: 1m\nprimary: {location: eu}\npools: [{locations: [XX], servers: 1}]\nstreams: [{id: s}]\naudience: [{stream: s, location: DE, curve: [{at: 0s, viewers: 1}]}]",
	}
	for name, src := range cases {
		if _, err := ParseScenario(name, []byte(src), ""); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !strings.HasPrefix(err.Error(), name) {
			t.Errorf("%s: error %q does not name the file", name, err)
		}
	}
	if _, err := LoadScenario(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("missing file accepted")
	}
}

func TestGraphByPath(t *testing.T) {
	dir := t.TempDir()
	g := "locations: [{id: x}, {id: y}]\nlinks: [{from: x, to: y, cost: 2, symmetric: true}]\n"
	if err := os.WriteFile(filepath.Join(dir, "g.yaml"), []byte(g), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := "duration: 10s\ngraph: g.yaml\nprimary: {location: x}\npools: [{locations: [y], servers: 1}]\nstreams: [{id: s}]\naudience: [{stream: s, location: y, curve: [{at: 0s, viewers: 10}]}]\n"
	if err := os.WriteFile(filepath.Join(dir, "sc.yaml"), []byte(sc), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadScenario(filepath.Join(dir, "sc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), s, Options{Scale: 2}); err != nil {
		t.Fatal(err)
	}
}

func TestAudienceCurve(t *testing.T) {
	a := Audience{Curve: []Point{{At: 10 * time.Second, Viewers: 0}, {At: 20 * time.Second, Viewers: 100}, {At: 40 * time.Second, Viewers: 50}}}
	for _, c := range []struct {
		t    time.Duration
		want float64
	}{{0, 0}, {10 * time.Second, 0}, {15 * time.Second, 50}, {20 * time.Second, 100}, {30 * time.Second, 75}, {time.Hour, 50}} {
		if got := a.at(c.t); got != c.want {
			t.Errorf("at(%v) = %v, want %v", c.t, got, c.want)
		}
	}
}

func BenchmarkSpikeTenth(b *testing.B) {
	sc, err := LoadScenario(scenarioPath("spike.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Run(context.Background(), sc, Options{Scale: 0.1}); err != nil {
			b.Fatal(err)
		}
	}
}

// Four redirectors, each with its own view synchronised only by load
// samples, still keep every relay within capacity (placement's Peers).
func TestFourRedirectors(t *testing.T) {
	sc2, err := ParseScenario("step4", mustRead(t, scenarioPath("step.yaml")), "")
	if err != nil {
		t.Fatal(err)
	}
	sc2.Redirectors = 4
	s, err := Run(context.Background(), sc2, Options{Scale: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if s.RelaySecondsOverCapacity != 0 || s.PeakUtilization > 1 || s.ViewersPeak != 13300 {
		t.Fatalf("%+v", *s)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Failures, churn and a start-up range parse and run: the relays of a
// region that fails are lost, its viewers come back elsewhere (or wait),
// and the controller places the relays again when the region is back.
func TestFailuresAndChurn(t *testing.T) {
	src := tiny + `relay_startup_max: 20s
status_ttl: 4s
failures: [{at: 50s, region: hub, for: 30s}]
`
	src = strings.Replace(src, "duration: 2m", "duration: 3m", 1)
	src = strings.Replace(src, "{at: 30s, viewers: 300}]}", "{at: 30s, viewers: 300}], churn: 0.2}", 1)
	sc, err := ParseScenario("fail.yaml", []byte(src), "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Run(context.Background(), sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.ViewersLost == 0 || s.RelaysLost == 0 || s.ViewersChurned == 0 || s.ViewerSecondsWaiting == 0 {
		t.Fatalf("lost %d viewers and %d relays, churned %d, waited %v: %+v", s.ViewersLost, s.RelaysLost, s.ViewersChurned, s.ViewerSecondsWaiting, *s)
	}
	if s.RelaysOpened <= s.RelaysLost {
		t.Fatalf("relays not placed again after the outage: opened %d, lost %d", s.RelaysOpened, s.RelaysLost)
	}
	for _, bad := range []string{"failures: [{at: 1s}]", "failures: [{at: 1s, region: a}]", "failures: [{at: 1s, server: nope}]", "relay_startup_max: 1s\nrelay_startup: 5s"} {
		if _, err := ParseScenario("bad.yaml", []byte(tiny+bad+"\n"), ""); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
