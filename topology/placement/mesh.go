// Package placement sends a viewer to a server: among the servers that carry
// the stream (and the primary) it picks one at the minimal graph distance,
// breaking ties at random weighted by weight × headroom, skipping servers
// that are down, draining or over capacity (measured or predicted); reserve
// servers take viewers only when no regular one can. A signed assignment
// token keeps a viewer on its server (Sign, Verify, Mesh.ChooseSticky).
//
// A Mesh is safe for concurrent use: choices read an immutable view
// published with an atomic pointer plus per-server atomic load counters;
// changes (streams opened or closed, a new graph) build a new view.
package placement

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/relaymesh/relaymesh/topology/distance"
	"github.com/relaymesh/relaymesh/topology/graph"
)

// ServerID is the dense index of a server: its position in the graph's
// server list.
type ServerID int32

// NoServer is the answer when no server can take the viewer.
const NoServer ServerID = -1

// StreamID is the dense id of a stream, from Mesh.AddStream.
type StreamID int32

// Config tunes a Mesh. The zero value gives the documented defaults.
type Config struct {
	// TieTolerance: distances within this relative margin of the minimum
	// count as equal. Default 1e-6 (absorbs float rounding only).
	TieTolerance float64
	// MaxStreams bounds the number of streams. Default 1,000,000.
	MaxStreams int
	// Peers is the number of redirectors placing viewers on the same
	// servers, each with its own Mesh synchronised by load samples. Between
	// samples a Mesh assumes every peer sends as many viewers to a server
	// as it did itself (plus one), so together they do not overshoot.
	// Default 1.
	Peers int
}

func (c *Config) defaults() {
	if c.TieTolerance <= 0 {
		c.TieTolerance = 1e-6
	}
	if c.MaxStreams <= 0 {
		c.MaxStreams = 1_000_000
	}
	if c.Peers <= 0 {
		c.Peers = 1
	}
}

// server states
const (
	stateUp uint32 = iota
	stateDraining
	stateDown
	stateUnknown // not reported yet: not chosen, and nobody was displaced from it
)

// serverInfo is the static part of a server, copied from the graph.
type serverInfo struct {
	id      string
	vertex  graph.VertexID
	dest    int32 // destination index in the table
	role    graph.Role
	weight  float64
	cap     int64
	hard    int64
	capKbps int64
}

// serverLoad is the live part, updated atomically.
type serverLoad struct {
	state     atomic.Uint32
	viewers   atomic.Int64 // measured, plus viewers assigned since the last measure
	kbps      atomic.Int64
	predicted atomic.Int64 // predicted viewers at the horizon, 0 when unknown
	assigned  atomic.Int64 // viewers this Mesh sent there since the last sample
	_         [24]byte     // keep neighbours off the same cache line
}

type view struct {
	g        *graph.Graph
	table    *distance.Table
	servers  []serverInfo
	load     []serverLoad
	byID     map[string]ServerID
	primary  ServerID
	carriers [][]ServerID  // per stream, without the primary
	groups   [][]destGroup // per stream, its carriers by location (choose.go)
	streams  map[string]StreamID
	names    []string
	kbps     []int64 // per stream bitrate
	peers    int64
	// downAt counts, per destination of the table, the relay and reserve
	// servers there marked down; downs is their sum (DownNearer). Shared,
	// like load, by the copies of a view.
	downAt []atomic.Int32
	downs  *atomic.Int32
}

// Mesh is the placement state: graph, distance table, servers, streams and
// which servers carry which stream.
type Mesh struct {
	cfg  Config
	mu   sync.Mutex // serialises writers
	view atomic.Pointer[view]
}

// New builds a mesh for g and computes its distance table. g should have a
// primary server; without one, viewers no relay can take get NoServer.
func New(g *graph.Graph, cfg Config) *Mesh {
	cfg.defaults()
	m := &Mesh{cfg: cfg}
	m.view.Store(newView(g, nil))
	m.view.Load().peers = int64(cfg.Peers)
	return m
}

func newView(g *graph.Graph, old *view) *view {
	t := distance.Build(g, distance.ServerLocations(g))
	gs := g.Servers()
	v := &view{
		g: g, table: t,
		servers: make([]serverInfo, len(gs)),
		load:    make([]serverLoad, len(gs)),
		byID:    make(map[string]ServerID, len(gs)),
		primary: ServerID(g.Primary()),
		downAt:  make([]atomic.Int32, t.NumDests()),
		downs:   new(atomic.Int32),
	}
	for i, s := range gs {
		v.servers[i] = serverInfo{
			id: s.ID, vertex: s.Vertex, dest: int32(t.DestIndex(s.Vertex)), role: s.Role, weight: s.Weight,
			cap: int64(s.CapacityViewers), hard: int64(s.HardViewers), capKbps: int64(s.CapacityMbps * 1000),
		}
		v.byID[s.ID] = ServerID(i)
	}
	if old == nil {
		v.streams = map[string]StreamID{}
		return v
	}
	// Carry streams, carriers and live load over by server id.
	v.streams, v.names, v.kbps = old.streams, old.names, old.kbps
	v.carriers = make([][]ServerID, len(old.carriers))
	v.groups = make([][]destGroup, len(old.carriers))
	for s, cs := range old.carriers {
		for _, c := range cs {
			if n, ok := v.byID[old.servers[c].id]; ok && n != v.primary {
				v.carriers[s] = append(v.carriers[s], n)
			}
		}
		v.groups[s] = v.groupsOf(v.carriers[s])
	}
	for i := range old.servers {
		if n, ok := v.byID[old.servers[i].id]; ok {
			o, l := &old.load[i], &v.load[n]
			v.storeState(n, o.state.Load())
			l.viewers.Store(o.viewers.Load())
			l.kbps.Store(o.kbps.Load())
			l.predicted.Store(o.predicted.Load())
		}
	}
	return v
}

// SetGraph replaces the graph (and so the servers and the distance table),
// keeping streams, carriers and loads of servers whose id survives. The
// table is built before the swap; choices in flight use the old view.
func (m *Mesh) SetGraph(g *graph.Graph) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := newView(g, m.view.Load())
	v.peers = int64(m.cfg.Peers)
	m.view.Store(v)
}

// Graph returns the current graph.
func (m *Mesh) Graph() *graph.Graph { return m.view.Load().g }

// Table returns the current distance table.
func (m *Mesh) Table() *distance.Table { return m.view.Load().table }

// NumServers is the number of servers.
func (m *Mesh) NumServers() int { return len(m.view.Load().servers) }

// Primary returns the primary server, or NoServer.
func (m *Mesh) Primary() ServerID { return m.view.Load().primary }

// Server returns the graph entry of server id (the zero Server for an id
// out of range).
func (m *Mesh) Server(id ServerID) graph.Server {
	ss := m.view.Load().g.Servers()
	if id < 0 || int(id) >= len(ss) {
		return graph.Server{}
	}
	return ss[id]
}

// ServerByID finds a server by its string id.
func (m *Mesh) ServerByID(id string) (ServerID, bool) {
	s, ok := m.view.Load().byID[id]
	return s, ok
}

// AddStream registers a stream with its bitrate (Mbit/s, used to account
// bandwidth per viewer; 0 if unknown) and returns its id. Adding a known
// name returns the existing id.
func (m *Mesh) AddStream(name string, mbps float64) (StreamID, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.view.Load()
	if s, ok := old.streams[name]; ok {
		return s, nil
	}
	if len(old.names) >= m.cfg.MaxStreams {
		return 0, fmt.Errorf("placement: more than %d streams", m.cfg.MaxStreams)
	}
	if math.IsNaN(mbps) || mbps < 0 || mbps > 1e6 {
		return 0, fmt.Errorf("placement: stream %q: bitrate %v Mbit/s out of range", name, mbps)
	}
	v := *old
	v.streams = make(map[string]StreamID, len(old.streams)+1)
	for k, s := range old.streams {
		v.streams[k] = s
	}
	id := StreamID(len(old.names))
	v.streams[name] = id
	v.names = append(old.names[:len(old.names):len(old.names)], name)
	v.kbps = append(old.kbps[:len(old.kbps):len(old.kbps)], int64(mbps*1000))
	v.carriers = append(old.carriers[:len(old.carriers):len(old.carriers)], nil)
	v.groups = append(old.groups[:len(old.groups):len(old.groups)], nil)
	m.view.Store(&v)
	return id, nil
}

// Stream returns the id of a stream name.
func (m *Mesh) Stream(name string) (StreamID, bool) {
	s, ok := m.view.Load().streams[name]
	return s, ok
}

// StreamName returns the name of a stream id ("" when unknown).
func (m *Mesh) StreamName(s StreamID) string {
	v := m.view.Load()
	if s < 0 || int(s) >= len(v.names) {
		return ""
	}
	return v.names[s]
}

// Carriers returns the servers (other than the primary) that carry s. The
// slice must not be modified.
func (m *Mesh) Carriers(s StreamID) []ServerID {
	v := m.view.Load()
	if s < 0 || int(s) >= len(v.carriers) {
		return nil
	}
	return v.carriers[s]
}

// Carries reports whether server id carries stream s (the primary carries
// every stream).
func (m *Mesh) Carries(id ServerID, s StreamID) bool { return m.view.Load().carries(id, s) }

func (v *view) carries(id ServerID, s StreamID) bool {
	if id == v.primary {
		return true
	}
	if s < 0 || int(s) >= len(v.carriers) {
		return false
	}
	for _, c := range v.carriers[s] {
		if c == id {
			return true
		}
	}
	return false
}

// Open records that server id now carries stream s (its relay is ready).
func (m *Mesh) Open(id ServerID, s StreamID) {
	m.setCarrier(id, s, true)
}

// Close records that server id no longer carries stream s.
func (m *Mesh) Close(id ServerID, s StreamID) {
	m.setCarrier(id, s, false)
}

func (m *Mesh) setCarrier(id ServerID, s StreamID, on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.view.Load()
	if id < 0 || int(id) >= len(old.servers) || id == old.primary || s < 0 || int(s) >= len(old.carriers) {
		return
	}
	cs := old.carriers[s]
	idx := -1
	for i, c := range cs {
		if c == id {
			idx = i
		}
	}
	if (idx >= 0) == on {
		return
	}
	var next []ServerID
	if on {
		next = append(append(make([]ServerID, 0, len(cs)+1), cs...), id)
	} else {
		next = append(append(make([]ServerID, 0, len(cs)), cs[:idx]...), cs[idx+1:]...)
	}
	v := *old
	v.carriers = append([][]ServerID(nil), old.carriers...)
	v.carriers[s] = next
	v.groups = append([][]destGroup(nil), old.groups...)
	v.groups[s] = v.groupsOf(next)
	m.view.Store(&v)
}

// SetDraining marks a server draining (no new viewers, sticky viewers move
// away) or back in service.
func (m *Mesh) SetDraining(id ServerID, draining bool) {
	st := stateUp
	if draining {
		st = stateDraining
	}
	m.setState(id, st)
}

// SetUp marks a server alive or gone.
func (m *Mesh) SetUp(id ServerID, up bool) {
	st := stateUp
	if !up {
		st = stateDown
	}
	m.setState(id, st)
}

// SetUnknown marks a server that has not reported yet: no viewer is sent
// there, and, unlike a server that went down, it displaced nobody
// (DownNearer does not count it). SetUp or SetDraining brings it in.
func (m *Mesh) SetUnknown(id ServerID) { m.setState(id, stateUnknown) }

func (m *Mesh) setState(id ServerID, st uint32) {
	v := m.view.Load()
	if id >= 0 && int(id) < len(v.load) {
		v.storeState(id, st)
	}
}

// storeState sets a server's state and keeps the counts of servers down.
func (v *view) storeState(id ServerID, st uint32) {
	old := v.load[id].state.Swap(st)
	info := &v.servers[id]
	if id == v.primary || info.dest < 0 || (old == stateDown) == (st == stateDown) {
		return
	}
	d := int32(1)
	if st != stateDown {
		d = -1
	}
	v.downAt[info.dest].Add(d)
	v.downs.Add(d)
}

// DownNearer reports whether a relay or reserve server at a location
// nearer to v than dist is marked down: a viewer at v given a server at
// dist may be that far only because it is (the redirector then signs a
// provisional token, so the viewer comes back once a nearer carrier can
// take it). It looks at the locations, not the servers: no allocation, a
// pass over the table's row only while some server is down.
func (m *Mesh) DownNearer(v graph.VertexID, dist float32) bool {
	w := m.view.Load()
	if w.downs.Load() == 0 {
		return false
	}
	return w.downNearer(w.table.Row(v), dist)
}

// downNearer is DownNearer on a row of the table.
func (v *view) downNearer(row []float32, dist float32) bool {
	for j := range v.downAt {
		if j < len(row) && row[j] < dist && v.downAt[j].Load() > 0 {
			return true
		}
	}
	return false
}

// Draining reports whether a server is draining.
func (m *Mesh) Draining(id ServerID) bool {
	v := m.view.Load()
	return id >= 0 && int(id) < len(v.load) && v.load[id].state.Load() == stateDraining
}

// SetLoad records a measured load sample of a server; it replaces the
// count of viewers assigned since the previous sample.
func (m *Mesh) SetLoad(id ServerID, viewers int64, mbps float64) {
	v := m.view.Load()
	if id >= 0 && int(id) < len(v.load) {
		v.load[id].viewers.Store(max(viewers, 0))
		v.load[id].kbps.Store(int64(max(mbps, 0) * 1000))
		v.load[id].assigned.Store(0)
	}
}

// SetPredicted records the load predicted for a server at the prediction
// horizon (see the scaling package); a server whose prediction reaches its
// capacity takes no new viewers.
func (m *Mesh) SetPredicted(id ServerID, viewers int64) {
	v := m.view.Load()
	if id >= 0 && int(id) < len(v.load) {
		v.load[id].predicted.Store(viewers)
	}
}

// AddViewers accounts n viewers (negative to remove) of stream s on server
// id until the next SetLoad.
func (m *Mesh) AddViewers(id ServerID, s StreamID, n int64) {
	v := m.view.Load()
	if id < 0 || int(id) >= len(v.load) {
		return
	}
	l := &v.load[id]
	l.viewers.Add(n)
	if n > 0 {
		l.assigned.Add(n)
	}
	if s >= 0 && int(s) < len(v.kbps) {
		l.kbps.Add(n * v.kbps[s])
	}
}

// Load returns the current viewers and Mbit/s accounted to a server.
func (m *Mesh) Load(id ServerID) (viewers int64, mbps float64) {
	v := m.view.Load()
	if id < 0 || int(id) >= len(v.load) {
		return 0, 0
	}
	l := &v.load[id]
	return l.viewers.Load(), float64(l.kbps.Load()) / 1000
}
