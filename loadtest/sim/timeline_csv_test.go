package sim

import (
	"context"
	"encoding/csv"
	"strconv"
	"strings"
	"testing"
)

// The CSV has a row a sample, and its relay-seconds are the relay counts
// summed over the samples' intervals.
func TestTimelineCSV(t *testing.T) {
	tl := &Timeline{Points: []TimePoint{
		{T: 0, Viewers: []int64{1, 2}, Relays: 0},
		{T: 2, Viewers: []int64{3, 4}, Relays: 3, OracleRelays: 2, Waiting: 5, Stretch: 1.5, OracleStretch: 1.25},
		{T: 4, Viewers: []int64{5, 6}, Relays: 1, OracleRelays: 1},
	}}
	var b strings.Builder
	if err := tl.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want a header and 3:\n%s", len(rows), b.String())
	}
	want := []string{"4", "11", "0", "1", "1.0", "0.000", "0.000", "6", "4"}
	if got := rows[3]; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("last row %q, want %q", got, want)
	}
	if rows[2][2] != "5" || rows[2][5] != "1.500" {
		t.Errorf("second sample %q", rows[2])
	}
}

// A simulated run's CSV ends with the run's relay-seconds, up to the last
// sample's interval.
func TestTimelineCSVOfARun(t *testing.T) {
	sc, err := LoadScenario("../scenarios/step.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tl := &Timeline{}
	sum, err := Run(context.Background(), sc, Options{Scale: 0.1, ScaleCapacity: true, Timeline: tl})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := tl.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	rows, _ := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	last, _ := strconv.ParseFloat(rows[len(rows)-1][7], 64)
	if last <= 0 {
		t.Fatalf("relay-seconds %v in the CSV", last)
	}
	if d := last/sum.RelaySeconds - 1; d < -0.05 || d > 0.05 {
		t.Errorf("CSV relay-seconds %.0f, the summary %.0f", last, sum.RelaySeconds)
	}
}
