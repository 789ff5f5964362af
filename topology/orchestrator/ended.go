package orchestrator

import (
	"context"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus"
)

// The primary announces each stream's start and end on the bus. When a
// stream has ended and not come back within EndGrace, the leader closes its
// relays (they would otherwise keep trying their upstream), deletes its
// placement and forgets its demand. An end the leader missed (it was not
// leading, or the bus dropped the event) leaves the relays as before: they
// close on the scaler's load rules.

// onStreamEvent records a stream's end, or clears it when it is back.
func (st *state) onStreamEvent(now time.Time, e bus.StreamEvent) {
	s := st.byName[e.App+"/"+e.Name]
	if s == nil {
		return // never placed nor asked for: nothing to close
	}
	switch e.Event {
	case bus.EventUnpublish:
		if _, ok := st.ended[s.id]; !ok {
			st.ended[s.id] = now
		}
	case bus.EventPublish:
		delete(st.ended, s.id)
	}
}

// endStreams closes the relays of the streams ended for EndGrace.
func (st *state) endStreams(ctx context.Context, now time.Time) {
	for id, at := range st.ended {
		if now.Sub(at) < st.o.cfg.EndGrace {
			continue
		}
		delete(st.ended, id)
		s := st.byID[id]
		reason := "the stream ended on the primary " + now.Sub(at).Round(time.Second).String() + " ago"
		for srv := range s.relays {
			st.o.log.Info("closing relay", "stream", s.app+"/"+s.name, "server", st.g.Servers()[srv].ID, "reason", reason)
			st.note("close", s, srv, reason)
			st.send(srv, s, bus.OpClose, reason)
			st.scaler.Failed(srv, s.id) // the scaler forgets the relay
			st.remove(s, srv)
		}
		st.save(ctx, s)
		st.tracker.Forget(s.id)
		st.bonus.dirty[s.id] = true // deletes its saved bonuses
	}
}
