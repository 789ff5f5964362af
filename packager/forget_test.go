package packager

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// A stream stopped for want of viewers is forgotten twice: by its linger,
// then when its pump returns. A request between the two starts the next
// run of the stream under the same name; the second forget must leave
// that run alone, its viewers series included.
func TestForgetLeavesTheNextRun(t *testing.T) {
	reg := prometheus.NewRegistry()
	p, err := New(newPushSource(), Config{Logger: discardLogger(), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	old := p.newStream("live", "x")
	p.mu.Lock()
	p.streams["live/x"] = old
	p.mu.Unlock()
	p.forget(old, nil) // the linger's stop

	next := p.newStream("live", "x") // a request meanwhile
	p.mu.Lock()
	p.streams["live/x"] = next
	p.mu.Unlock()
	next.viewerGauge.Set(3)

	p.forget(old, nil) // the old pump's return
	if got := p.Streams(); len(got) != 1 || got[0] != "live/x" {
		t.Fatalf("streams after the old run's second forget: %v", got)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var series []float64
	for _, mf := range mfs {
		if mf.GetName() == "relaymesh_packager_viewers" {
			for _, m := range mf.GetMetric() {
				series = append(series, m.GetGauge().GetValue())
			}
		}
	}
	if len(series) != 1 || series[0] != 3 {
		t.Fatalf("viewers series %v, want the next run's 3", series)
	}
}
