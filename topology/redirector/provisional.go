package redirector

import (
	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/placement"
)

// Provisional tokens. A viewer sent to a server farther than a relay of
// its stream that is starting (state "opening" in the orchestrator's
// placement) gets a provisional token (placement.Claims.Provisional):
// ChooseSticky keeps it on its server only while no nearer carrier can
// take it, so once the starting relay serves, the viewer's next request
// moves it there instead of holding it far for the token's whole lifetime.

// noteOpening records the relays of stream key that are starting (called
// with every placement; r.mu held).
func (r *Redirector) noteOpening(key string, p bus.Placement) {
	var ids []placement.ServerID
	for _, rel := range p.Relays {
		if rel.State != bus.StateOpening {
			continue
		}
		if id, ok := r.mesh.ServerByID(rel.Server); ok {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		delete(r.opening, key)
		return
	}
	r.opening[key] = ids
}

// provisional reports whether a viewer at v, given a server at distance
// dist, has a relay of stream starting nearer to it.
func (r *Redirector) provisional(stream string, v graph.VertexID, dist float32) bool {
	if v == graph.NoVertex {
		return false
	}
	r.mu.RLock()
	ids := r.opening[stream]
	r.mu.RUnlock()
	for _, id := range ids {
		if r.distTo(v, id) < dist {
			return true
		}
	}
	return false
}
