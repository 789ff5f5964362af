package controller

import (
	"fmt"
	"testing"

	"github.com/relaymesh/relaymesh/topology/demand"
	"github.com/relaymesh/relaymesh/topology/graph"
)

// BenchmarkDemand2000Carriers: demand events for a stream carried by 2,000
// relays (100 in each of 20 locations), from every vertex of the world
// graph: the controller's decision rate on one core (the issue asks for
// ≥ 100,000/s). One op is one event.
func BenchmarkDemand2000Carriers(b *testing.B) {
	g, err := graph.World()
	if err != nil {
		b.Fatal(err)
	}
	locs := []string{"eu", "na", "sa", "as", "af", "oc", "DE", "GB", "FR", "US", "BR", "JP", "IN", "RU", "ES", "MX", "CN", "AU", "ZA", "CA"}
	servers := []graph.Server{{ID: "p", Location: "eu", Role: graph.RolePrimary, CapacityViewers: 1 << 30}}
	for i := range 2000 {
		servers = append(servers, graph.Server{ID: fmt.Sprint("r", i), Location: locs[i%len(locs)], CapacityViewers: 5000})
	}
	g, _ = g.WithServers(servers...)
	c := New(Config{Demand: demand.Config{Threshold: 1e18}}, g)
	id, _ := c.Stream("live/final")
	for i := 1; i <= 2000; i++ {
		if !c.Adopt(t0, i, id, 0, Serving, t0) {
			b.Fatalf("relay %d not adopted", i)
		}
	}
	for i := 1; i <= 2000; i++ {
		c.Status(t0, i, []Load{{Stream: "live/final", Viewers: 4900}}, nil)
	}
	c.Tick(t0, nil)
	n := g.NumVertices()
	var dst []Decision
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		dst = c.Apply(Event{Time: t0, Kind: EvDemand, Stream: "live/final", Vertex: graph.VertexID(i % n), N: 1, Nearest: 3}, dst[:0])
		i++
	}
}
