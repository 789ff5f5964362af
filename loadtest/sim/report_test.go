package sim

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestHTMLReport(t *testing.T) {
	sc, err := LoadScenario("../scenarios/step.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tl := &Timeline{}
	sum, err := Run(context.Background(), sc, Options{Scale: 0.05, Timeline: tl})
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Points) < 10 || len(tl.Regions) == 0 {
		t.Fatalf("timeline: %d points, regions %v", len(tl.Points), tl.Regions)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, sum, tl); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{"<svg", "<polyline", "Viewers per region", tl.Regions[0], "relay-seconds over capacity"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
