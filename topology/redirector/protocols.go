package redirector

import (
	"sort"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/placement"
)

// addLoad adds pl into sum, by protocol.
func addLoad(sum map[string]bus.ProtocolLoad, pl []bus.ProtocolLoad) {
	for _, p := range pl {
		s := sum[p.Protocol]
		s.Protocol = p.Protocol
		s.Viewers += p.Viewers
		s.Mbps += p.Mbps
		sum[p.Protocol] = s
	}
}

func sortedLoad(sum map[string]bus.ProtocolLoad) []bus.ProtocolLoad {
	out := make([]bus.ProtocolLoad, 0, len(sum))
	for _, p := range sum {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Protocol < out[j].Protocol })
	return out
}

// relayProtocols is the viewers server id reported, by protocol, over all
// its streams (nothing once it is down).
func (r *Redirector) relayProtocols(id placement.ServerID) []bus.ProtocolLoad {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rs := r.relays[id]
	if rs == nil || !rs.up {
		return nil
	}
	sum := map[string]bus.ProtocolLoad{}
	for _, st := range rs.status.Streams {
		addLoad(sum, st.Protocols)
	}
	return sortedLoad(sum)
}

// streamProtocols is the viewers of app/name over the servers that are up,
// in all and by protocol; r.mu is read-locked.
func (r *Redirector) streamProtocols(app, name string) (int, []bus.ProtocolLoad) {
	total := 0
	sum := map[string]bus.ProtocolLoad{}
	for _, rs := range r.relays {
		if !rs.up {
			continue
		}
		for _, st := range rs.status.Streams {
			if st.App == app && st.Name == name {
				total += st.Viewers
				addLoad(sum, st.Protocols)
			}
		}
	}
	return total, sortedLoad(sum)
}
