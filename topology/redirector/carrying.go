package redirector

import (
	"slices"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/placement"
)

// What each server reports it carries, for steering (steering.go): a relay
// that pulls a stream on its own (a viewer went to it directly, not
// through /play) carries it as much as one the orchestrator placed, and a
// server whose packager has segments of a stream is where an HLS or DASH
// player can move without a stall (one whose packaging has just started
// answers the first segments' requests with 404).

// carried is one server's streams by app/name: true when its packager has
// segments of it (bus.StreamStatus.HTTPReady).
type carried map[string]bool

// indexStreamsLocked records the live streams of id's status s and keeps
// r.carriers, the servers reporting each stream live, up to date; r.mu is
// held.
func (r *Redirector) indexStreamsLocked(id placement.ServerID, rs *relayState, s bus.Status) {
	next := make(carried, len(s.Streams))
	for _, st := range s.Streams {
		if st.Live {
			next[st.App+"/"+st.Name] = st.HTTPReady
		}
	}
	for k := range rs.carried {
		if _, ok := next[k]; !ok {
			r.carriers[k] = slices.DeleteFunc(r.carriers[k], func(o placement.ServerID) bool { return o == id })
			if len(r.carriers[k]) == 0 {
				delete(r.carriers, k)
			}
		}
	}
	for k := range next {
		if _, ok := rs.carried[k]; !ok && !slices.Contains(r.carriers[k], id) {
			r.carriers[k] = append(r.carriers[k], id)
			slices.Sort(r.carriers[k])
		}
	}
	rs.carried = next
}

// httpReadyLocked tells whether id reported stream with segments packaged;
// r.mu is read-locked.
func (r *Redirector) httpReadyLocked(id placement.ServerID, stream string) bool {
	rs := r.relays[id]
	return rs != nil && rs.carried[stream]
}
