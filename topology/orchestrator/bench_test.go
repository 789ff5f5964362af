package orchestrator

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/demand"
	"github.com/relaymesh/relaymesh/topology/graph"
)

// BenchmarkDemandEvents: demand events the leader absorbs (bonus update per
// location for each event; the threshold is set out of reach so no relay is
// opened and no bus is needed). One op is one event.
func BenchmarkDemandEvents(b *testing.B) {
	g, err := graph.DevWorld()
	if err != nil {
		b.Fatal(err)
	}
	o := &Orchestrator{cfg: Config{Graph: g, Demand: demand.Config{Threshold: 1e18}}, log: slog.New(slog.DiscardHandler)}
	o.cfg.defaults()
	st := newState(o, nil)
	var vertices []string
	for v := range g.NumVertices() {
		vertices = append(vertices, g.Location(graph.VertexID(v)).ID)
	}
	d := bus.Demand{}
	for i := 0; i < 100; i++ {
		d.Events = append(d.Events, bus.DemandEvent{App: "live", Name: "bench", Vertex: vertices[i%len(vertices)], N: 1, Nearest: -1})
	}
	ctx := context.Background()
	now := time.Unix(1_900_000_000, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += len(d.Events) {
		now = now.Add(time.Millisecond)
		st.onDemand(ctx, now, d)
	}
}
