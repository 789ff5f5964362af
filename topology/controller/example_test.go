package controller_test

import (
	"fmt"
	"time"

	"github.com/relaymesh/relaymesh/topology/controller"
	"github.com/relaymesh/relaymesh/topology/demand"
	"github.com/relaymesh/relaymesh/topology/graph"
)

// The controller takes events and returns decisions; its caller carries them
// out (the orchestrator over the bus, the simulator in its model) and tells
// it what came of them. Here a crowd in Japan asks for a stream only the
// primary carries: the demand bonus opens a relay in Asia, and once that relay
// says it serves, it counts as the stream's carrier there.
func Example() {
	g, err := graph.DevWorld()
	if err != nil {
		fmt.Println(err)
		return
	}
	c := controller.New(controller.Config{Demand: demand.Config{Threshold: 5}}, g)
	jp, _ := g.Vertex("JP")
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC) // the caller's clock

	// 200 viewers located in Japan asked the redirector for live/final
	// (Nearest -1: no carrier at any finite distance but the primary).
	ds := c.Apply(controller.Event{Time: now, Kind: controller.EvDemand, Stream: "live/final", Vertex: jp, N: 200, Nearest: -1}, nil)
	for _, d := range ds {
		fmt.Println(d.Action, g.Servers()[d.Server].ID, "pulling from", g.Servers()[d.Parent].ID)
	}
	// The relay reports that it serves the stream.
	ds = c.Apply(controller.Event{Time: now.Add(2 * time.Second), Kind: controller.EvReady, Stream: "live/final", Server: ds[0].Server}, nil)
	for _, d := range ds {
		fmt.Println(d.Action, g.Servers()[d.Server].ID)
	}
	// Output:
	// open relay-as pulling from primary
	// ready relay-as
}
