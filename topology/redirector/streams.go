package redirector

import (
	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/placement"
)

// addLiveStreams adds to streams every stream a server that is up reports
// live or watched (the primary's streams before any relay holds them),
// lists the relays that report a stream live among its relays, and fills
// each stream's details (codecs, picture, bitrate) from the primary's
// status, else from a relay's. r.mu is read-locked.
func (r *Redirector) addLiveStreams(streams []MeshStream) []MeshStream {
	idx := make(map[string]int, len(streams))
	for i, ms := range streams {
		idx[ms.App+"/"+ms.Name] = i
	}
	servers := r.mesh.Graph().Servers()
	primary := r.mesh.Primary()
	// The primary first, so its details win; then the relays in graph order.
	order := make([]placement.ServerID, 0, len(servers))
	order = append(order, primary)
	for i := range servers {
		if id := placement.ServerID(i); id != primary {
			order = append(order, id)
		}
	}
	for _, id := range order {
		rs := r.relays[id]
		if rs == nil || !rs.up || int(id) >= len(servers) {
			continue
		}
		for _, st := range rs.status.Streams {
			if !st.Live && st.Viewers == 0 {
				continue
			}
			k := st.App + "/" + st.Name
			i, ok := idx[k]
			if !ok {
				ms := MeshStream{App: st.App, Name: st.Name, Relays: []string{}}
				ms.Viewers, ms.Protocols = r.streamProtocols(st.App, st.Name)
				streams = append(streams, ms)
				i = len(streams) - 1
				idx[k] = i
			}
			ms := &streams[i]
			if st.Live {
				ms.Live = true
				if id != primary {
					ms.Relays = addName(ms.Relays, servers[id].ID)
				}
			}
			if ms.VideoCodec == "" && ms.AudioCodec == "" && (st.VideoCodec != "" || st.AudioCodec != "") {
				fillDetails(ms, st)
			}
		}
	}
	return streams
}

func fillDetails(ms *MeshStream, st bus.StreamStatus) {
	ms.VideoCodec, ms.AudioCodec = st.VideoCodec, st.AudioCodec
	ms.Width, ms.Height = st.Width, st.Height
	ms.BitrateKbps = st.BitrateKbps
}

func addName(names []string, n string) []string {
	for _, o := range names {
		if o == n {
			return names
		}
	}
	return append(names, n)
}
