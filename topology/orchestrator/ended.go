package orchestrator

import (
	"context"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/controller"
)

// The primary announces each stream's start and end on the bus. The
// controller closes the relays of a stream that has ended and not come
// back within EndGrace (they would otherwise keep trying their upstream)
// and forgets its demand; the leader deletes its placement. An end the
// leader missed (it was not leading, or the bus dropped the event) leaves
// the relays as before: they close on the scaler's load rules.

// onStreamEvent passes a stream's end, or its return, to the controller.
func (st *state) onStreamEvent(ctx context.Context, now time.Time, e bus.StreamEvent) {
	if _, ok := st.ctl.Lookup(e.App + "/" + e.Name); !ok {
		return // never placed nor asked for: nothing to close
	}
	kind := controller.EvPublish
	switch e.Event {
	case bus.EventUnpublish:
		kind = controller.EvUnpublish
	case bus.EventPublish:
	default:
		return
	}
	st.apply(ctx, controller.Event{Time: now, Kind: kind, Stream: e.App + "/" + e.Name})
}
