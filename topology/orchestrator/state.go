package orchestrator

import (
	"context"
	"errors"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/demand"
	"github.com/relaymesh/relaymesh/topology/distance"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/scaling"
)

// stream is what the leader knows of one stream.
type stream struct {
	id        int
	app, name string
	relays    map[int]*relay // by server index
}

type relay struct {
	parent int // server index it pulls from
	state  string
	since  time.Time
}

type seen struct {
	status bus.Status
	at     time.Time
}

type command struct {
	server, stream int
	cmd            bus.Command
}

type result struct {
	command
	err error
}

// state is owned by the leader goroutine: tracker, scaler and placements.
type state struct {
	o       *Orchestrator
	b       *bus.Buckets
	g       *graph.Graph
	table   *distance.Table
	tracker *demand.Tracker
	scaler  *scaling.Scaler
	byName  map[string]*stream
	byID    []*stream
	servers map[string]int // server id → index
	seen    map[int]seen   // server index → last status
	down    map[int]bool
	cmds    chan command
	results chan result
	dec     []demand.Decision
	sdec    []scaling.Decision
	bonus   bonusSaver        // demand bonuses saved for the next leader (bonus.go)
	ended   map[int]time.Time // stream id → when the primary reported it unpublished (ended.go)
}

func newState(o *Orchestrator, b *bus.Buckets) *state {
	g := o.cfg.Graph
	table := distance.Build(g, distance.ServerLocations(g))
	st := &state{o: o, b: b, g: g, table: table,
		tracker: demand.New(o.cfg.Demand, g, table),
		scaler:  scaling.New(o.cfg.Scaling, g),
		byName:  map[string]*stream{}, servers: map[string]int{},
		seen: map[int]seen{}, down: map[int]bool{},
		cmds: make(chan command, 1024), results: make(chan result, 1024), bonus: newBonusSaver(),
		ended: map[int]time.Time{}}
	for i, s := range g.Servers() {
		st.servers[s.ID] = i
	}
	return st
}

// stream returns (creating) the state of app/name; nil when at the bound.
func (st *state) stream(app, name string) *stream {
	key := app + "/" + name
	if s := st.byName[key]; s != nil {
		return s
	}
	if len(st.byID) >= st.o.cfg.MaxStreams {
		return nil
	}
	s := &stream{id: len(st.byID), app: app, name: name, relays: map[int]*relay{}}
	st.byName[key] = s
	st.byID = append(st.byID, s)
	st.scaler.SetStreamName(s.id, key)
	return s
}

// restore rebuilds the placements from the bucket (after a takeover).
func (st *state) restore(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	now := time.Now()
	err := eachEntry(lctx, st.b.Placements, func(k string, value []byte) bool {
		p, err := bus.DecodePlacement(value)
		if err != nil {
			st.o.log.Warn("skipping bad placement", "key", k, "err", err)
			return true
		}
		s := st.stream(p.App, p.Name)
		if s == nil {
			return false
		}
		for _, r := range p.Relays {
			srv, ok := st.servers[r.Server]
			if !ok {
				continue
			}
			parent, ok := st.servers[r.Parent]
			if !ok {
				parent = st.g.Primary()
			}
			if !st.adopt(now, srv, s.id) {
				st.o.log.Warn("cannot adopt relay", "server", r.Server, "stream", p.App+"/"+p.Name)
				continue
			}
			s.relays[srv] = &relay{parent: parent, state: r.State, since: r.Since}
			st.tracker.SetHosted(s.id, st.g.Servers()[srv].Vertex, true)
			if r.State == bus.StateOpening {
				st.send(srv, s, bus.OpOpen, "re-issued after a change of leader")
			} else {
				st.scaler.Ready(srv, s.id)
			}
		}
		st.o.log.Info("placement restored", "stream", p.App+"/"+p.Name, "relays", len(s.relays))
		return true
	})
	if err != nil {
		return err
	}
	// Bonuses after placements: a location that hosts the stream gathers none.
	return st.restoreBonuses(lctx)
}

// eachEntry calls fn with every entry of kv (skipping keys deleted
// meanwhile) until fn returns false.
func eachEntry(ctx context.Context, kv jetstream.KeyValue, fn func(key string, value []byte) bool) error {
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return err
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if err != nil {
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				continue
			}
			return err
		}
		if !fn(k, e.Value()) {
			return nil
		}
	}
	return nil
}

// adopt makes the scaler account an existing relay. The scaler opens by
// location and jump hash, so this opens at the server's location until it
// names that server, and forgets the others it named on the way.
func (st *state) adopt(now time.Time, srv, sid int) bool {
	loc := st.g.Servers()[srv].Vertex
	var extra []int
	defer func() {
		for _, x := range extra {
			st.scaler.Failed(x, sid)
		}
	}()
	for range 64 {
		d, ok := st.scaler.OpenAt(now, sid, loc, "restored")
		if !ok {
			return false
		}
		if d.Server == srv {
			return true
		}
		extra = append(extra, d.Server)
	}
	return false
}

// startWorkers runs the goroutines that carry commands to relays.
func (st *state) startWorkers(ctx context.Context, wg *sync.WaitGroup) {
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case c := <-st.cmds:
					cctx, cancel := context.WithTimeout(ctx, st.o.cfg.CommandTimeout)
					_, err := st.o.conn.Request(cctx, st.g.Servers()[c.server].ID, c.cmd)
					cancel()
					st.o.counters.command(c.cmd.Op, err)
					select {
					case st.results <- result{c, err}:
					case <-ctx.Done():
						return
					}
				}
			}
		}()
	}
}

// send queues a command for server srv about stream s.
func (st *state) send(srv int, s *stream, op, reason string) {
	c := command{server: srv, stream: s.id, cmd: bus.Command{Op: op, App: s.app, Name: s.name, Reason: reason}}
	if op == bus.OpOpen {
		if r := s.relays[srv]; r != nil {
			c.cmd.Parent = "rtmp://" + st.rtmpAddr(r.parent)
		}
	}
	select {
	case st.cmds <- c:
	default:
		st.o.log.Warn("command queue full", "op", op, "server", st.g.Servers()[srv].ID)
		if op == bus.OpOpen && s.relays[srv] != nil {
			st.remove(s, srv)
			st.scaler.Failed(srv, s.id)
		}
	}
}

// rtmpAddr is where a server plays from: its reported address, else the graph's.
func (st *state) rtmpAddr(srv int) string {
	if s, ok := st.seen[srv]; ok && s.status.RTMP != "" {
		return s.status.RTMP
	}
	return st.g.Servers()[srv].RTMP
}

// parent chooses where a new relay of s on server srv pulls from: the
// primary while it has fan-out room, else the nearest ready relay of s with
// room, else the primary anyway.
func (st *state) parent(srv int, s *stream) int {
	prim := st.g.Primary()
	children := map[int]int{}
	for _, r := range s.relays {
		children[r.parent]++
	}
	if children[prim] < st.o.cfg.FanOut {
		return prim
	}
	v := st.g.Servers()[srv].Vertex
	best, bestD := prim, float32(math.Inf(1))
	for id, r := range s.relays {
		if id == srv || r.state != bus.StateReady || st.down[id] || children[id] >= st.o.cfg.FanOut {
			continue
		}
		j := st.table.DestIndex(st.g.Servers()[id].Vertex)
		if j < 0 {
			continue
		}
		if d := st.table.Dist(v, j); d < bestD {
			best, bestD = id, d
		}
	}
	return best
}

func (st *state) onStatus(s bus.Status) {
	srv, ok := st.servers[s.ID]
	if !ok {
		return
	}
	st.seen[srv] = seen{status: s, at: time.Now()}
	if st.down[srv] {
		delete(st.down, srv)
		st.scaler.SetDown(srv, false)
		st.o.log.Info("relay is back", "server", s.ID)
	}
}

func (st *state) onDemand(ctx context.Context, now time.Time, d bus.Demand) {
	for _, e := range d.Events {
		v, ok := st.g.Vertex(e.Vertex)
		if !ok {
			continue
		}
		s := st.stream(e.App, e.Name)
		if s == nil {
			continue
		}
		nearest := float32(e.Nearest)
		if e.Nearest < 0 {
			nearest = distance.Inf
		}
		st.dec = st.tracker.ObserveN(now, s.id, v, float64(e.N), nearest, st.dec[:0])
		st.bonus.dirty[s.id] = true
		for _, dec := range st.dec {
			sd, ok := st.scaler.OpenAt(now, s.id, dec.Location, dec.Reason)
			if !ok {
				st.tracker.SetHosted(s.id, dec.Location, false)
				continue
			}
			st.open(ctx, now, s, sd)
		}
	}
}

// open records a new relay as opening and commands it.
func (st *state) open(ctx context.Context, now time.Time, s *stream, d scaling.Decision) {
	if _, ok := s.relays[d.Server]; ok {
		return
	}
	s.relays[d.Server] = &relay{parent: st.parent(d.Server, s), state: bus.StateOpening, since: now}
	st.tracker.SetHosted(s.id, st.g.Servers()[d.Server].Vertex, true)
	st.o.log.Info("opening relay", "stream", s.app+"/"+s.name, "server", st.g.Servers()[d.Server].ID,
		"parent", st.g.Servers()[s.relays[d.Server].parent].ID, "reason", d.Reason)
	st.note("open", s, d.Server, d.Reason)
	st.save(ctx, s)
	st.send(d.Server, s, bus.OpOpen, d.Reason)
}

func (st *state) onResult(ctx context.Context, r result) {
	s := st.byID[r.stream]
	srvID := st.g.Servers()[r.server].ID
	if r.cmd.Op != bus.OpOpen {
		if r.err != nil {
			st.o.log.Warn("command failed", "op", r.cmd.Op, "server", srvID, "err", r.err)
		}
		return
	}
	rel := s.relays[r.server]
	if rel == nil || rel.state != bus.StateOpening {
		return
	}
	if r.err != nil {
		st.o.log.Warn("relay did not open", "stream", s.app+"/"+s.name, "server", srvID, "err", r.err)
		st.note("failed", s, r.server, r.err.Error())
		st.remove(s, r.server)
		st.scaler.Failed(r.server, s.id)
	} else {
		rel.state, rel.since = bus.StateReady, time.Now()
		st.scaler.Ready(r.server, s.id)
		st.o.log.Info("relay ready", "stream", s.app+"/"+s.name, "server", srvID)
		st.note("ready", s, r.server, r.cmd.Reason)
	}
	st.save(ctx, s)
}

// remove forgets a relay and unmarks its location when no relay of the
// stream remains there.
func (st *state) remove(s *stream, srv int) {
	delete(s.relays, srv)
	v := st.g.Servers()[srv].Vertex
	for id := range s.relays {
		if st.g.Servers()[id].Vertex == v {
			return
		}
	}
	st.tracker.SetHosted(s.id, v, false)
}

// evaluate marks silent relays down and runs the scaler.
func (st *state) evaluate(ctx context.Context, now time.Time) {
	ttl := st.o.cfg.Buckets.StatusTTL
	for i, sv := range st.g.Servers() {
		if sv.Role == graph.RolePrimary || st.down[i] {
			continue
		}
		if s, ok := st.seen[i]; ok && now.Sub(s.at) < ttl {
			continue
		}
		if _, ok := st.seen[i]; !ok && !st.carries(i) {
			continue // never seen and carries nothing: nothing to do yet
		}
		st.down[i] = true
		st.scaler.SetDown(i, true)
		st.o.log.Warn("relay silent, marked down", "server", sv.ID)
		st.note("down", nil, i, "no status for "+ttl.String())
		for _, s := range st.byID {
			if _, ok := s.relays[i]; ok {
				st.remove(s, i)
				st.save(ctx, s)
			}
		}
	}
	var samples []scaling.Sample
	for _, s := range st.byID {
		for srv := range s.relays {
			sn, ok := st.seen[srv]
			if !ok {
				continue
			}
			viewers, httpViewers := 0, 0
			for _, ss := range sn.status.Streams {
				if ss.App == s.app && ss.Name == s.name {
					viewers, httpViewers = ss.Viewers, ss.HTTPViewers()
				}
			}
			samples = append(samples, scaling.Sample{Server: srv, Stream: s.id, Viewers: float64(viewers), HTTPViewers: float64(httpViewers)})
		}
	}
	st.sdec = st.scaler.Evaluate(now, samples, st.sdec[:0])
	for _, d := range st.sdec {
		if d.Stream < 0 || d.Stream >= len(st.byID) {
			continue
		}
		s := st.byID[d.Stream]
		switch d.Action {
		case scaling.ActionOpen:
			st.open(ctx, now, s, d)
		case scaling.ActionDrain:
			if r := s.relays[d.Server]; r != nil {
				r.state, r.since = bus.StateDraining, now
				st.o.log.Info("draining relay", "stream", s.app+"/"+s.name, "server", st.g.Servers()[d.Server].ID, "reason", d.Reason)
				st.note("drain", s, d.Server, d.Reason)
				st.save(ctx, s)
			}
		case scaling.ActionClose:
			if _, ok := s.relays[d.Server]; ok {
				st.o.log.Info("closing relay", "stream", s.app+"/"+s.name, "server", st.g.Servers()[d.Server].ID, "reason", d.Reason)
				st.note("close", s, d.Server, d.Reason)
				st.send(d.Server, s, bus.OpClose, d.Reason)
				st.remove(s, d.Server)
				st.save(ctx, s)
			}
		}
	}
}

func (st *state) carries(srv int) bool {
	for _, s := range st.byID {
		if _, ok := s.relays[srv]; ok {
			return true
		}
	}
	return false
}

// save writes the placement of s (or deletes it when no relay is left).
func (st *state) save(ctx context.Context, s *stream) {
	key := bus.StreamKey(s.app, s.name)
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if len(s.relays) == 0 {
		if err := st.b.Placements.Delete(sctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			st.o.log.Warn("placement not deleted", "stream", s.app+"/"+s.name, "err", err)
		}
		return
	}
	p := bus.Placement{App: s.app, Name: s.name}
	for srv, r := range s.relays {
		p.Relays = append(p.Relays, bus.PlacedRelay{Server: st.g.Servers()[srv].ID,
			Parent: st.g.Servers()[r.parent].ID, State: r.state, Since: r.since.UTC()})
	}
	sort.Slice(p.Relays, func(i, j int) bool { return p.Relays[i].Server < p.Relays[j].Server })
	data, err := bus.Encode(p)
	if err == nil {
		_, err = st.b.Placements.Put(sctx, key, data)
	}
	if err != nil {
		st.o.log.Warn("placement not saved", "stream", s.app+"/"+s.name, "err", err)
	}
}

// bonuses snapshots the demand bonuses above 1% of the threshold.
func (st *state) bonuses(now time.Time) *[]Bonus {
	out := []Bonus{}
	thr := st.threshold()
	for _, s := range st.byID {
		for j := 0; j < st.table.NumDests(); j++ {
			v := st.table.Dest(j)
			if b := st.tracker.Bonus(now, s.id, v); b > thr/100 {
				out = append(out, Bonus{App: s.app, Name: s.name, Location: st.g.Location(v).ID, Value: b, Threshold: thr})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return strings.Compare(a.App+"/"+a.Name+"|"+a.Location, b.App+"/"+b.Name+"|"+b.Location) < 0
	})
	return &out
}
