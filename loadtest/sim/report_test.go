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
	card, err := RunScorecard(context.Background(), sc, Options{Scale: 0.05, ScaleCapacity: true}, true)
	if err != nil {
		t.Fatal(err)
	}
	tl := card.Timelines()[0]
	if len(tl.Points) < 10 || len(tl.Regions) == 0 || len(card.Runs) != 3 {
		t.Fatalf("timeline: %d points, regions %v, %d runs", len(tl.Points), tl.Regions, len(card.Runs))
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, card); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{"<svg", "<polyline", "Viewers per region", tl.Regions[0], "relay-seconds over capacity",
		"Mean distance stretch", "Viewers waiting", "Relays open", "load-only", "static", "oracle", " min</text>", "Goals"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
