package controller

import (
	"time"

	"github.com/relaymesh/relaymesh/topology/distance"
	"github.com/relaymesh/relaymesh/topology/graph"
)

// Kind is the kind of an event.
type Kind uint8

// Event kinds.
const (
	EvDemand    Kind = iota + 1 // N requests for Stream from Vertex; Nearest: distance to the server given (<0: none)
	EvStatus                    // Server reports Loads
	EvReady                     // relay Server of Stream serves
	EvFailed                    // relay Server of Stream could not start (Why)
	EvTick                      // evaluation: silent servers, scaling, ended streams
	EvPublish                   // Stream is published on the primary
	EvUnpublish                 // Stream stopped on the primary
	EvAdopt                     // a new leader takes over relay Server of Stream (Parent, State, Since)
	EvBonus                     // a saved demand bonus of Stream at Vertex: N as of Since
	EvGone                      // relay Server's process is gone (Why): down now, not after StatusTTL
)

func (k Kind) String() string {
	return [...]string{"none", "demand", "status", "ready", "failed", "tick", "publish", "unpublish", "adopt", "bonus", "gone"}[min(int(k), 10)]
}

// Event is one input of the controller. Apply takes it; the orchestrator
// and the simulator describe everything they tell the controller this way,
// so a journal of events replays to the same decisions.
type Event struct {
	Time    time.Time
	Kind    Kind
	Stream  string
	Server  int
	Vertex  graph.VertexID
	N       float64
	Nearest float64
	// Full (EvDemand) is how many of the N requests no server could take:
	// the viewers were turned away and wait (the scaler counts them in
	// the stream's audience).
	Full   float64
	Loads  []Load
	Why    string
	Parent int
	State  State
	Since  time.Time
}

// Apply takes one event and appends the decisions it leads to.
func (c *Controller) Apply(e Event, dst []Decision) []Decision {
	switch e.Kind {
	case EvDemand:
		id, ok := c.Stream(e.Stream)
		if !ok {
			return dst
		}
		nearest := float32(e.Nearest)
		if e.Nearest < 0 {
			nearest = distance.Inf
		}
		full := 0.0
		if e.Full > 0 {
			full = min(e.Full, e.N)
			c.scaler.UnservedAt(id, e.Vertex, full)
		}
		return c.demand(e.Time, id, e.Vertex, e.N, full, nearest, dst)
	case EvStatus:
		return c.Status(e.Time, e.Server, e.Loads, dst)
	case EvReady:
		if id, ok := c.Lookup(e.Stream); ok {
			return c.Ready(e.Time, e.Server, id, dst)
		}
	case EvFailed:
		if id, ok := c.Lookup(e.Stream); ok {
			return c.Failed(e.Time, e.Server, id, e.Why, dst)
		}
	case EvTick:
		return c.Tick(e.Time, dst)
	case EvPublish:
		if id, ok := c.Lookup(e.Stream); ok {
			delete(c.ended, id)
		}
	case EvUnpublish:
		if id, ok := c.Lookup(e.Stream); ok {
			if _, was := c.ended[id]; !was {
				c.ended[id] = e.Time
			}
		}
	case EvBonus:
		if id, ok := c.Stream(e.Stream); ok {
			c.RestoreBonus(id, e.Vertex, e.N, e.Since)
		}
	case EvAdopt:
		if id, ok := c.Stream(e.Stream); ok {
			c.Adopt(e.Time, e.Server, id, e.Parent, e.State, e.Since)
		}
	case EvGone:
		return c.Gone(e.Server, e.Why, dst)
	}
	return dst
}
