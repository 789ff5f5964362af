package orchestrator

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/controller"
	"github.com/relaymesh/relaymesh/topology/graph"
)

// The leader's state: every decision comes from the controller
// (topology/controller); this file only turns bus input into controller
// events, carries the decisions out (commands to relays) and persists the
// placements they change.

// stream is a stream's bus name, by controller stream id.
type stream struct {
	id        int
	app, name string
}

type command struct {
	server, stream int
	cmd            bus.Command
}

type result struct {
	command
	err error
}

// state is owned by the leader goroutine.
type state struct {
	o       *Orchestrator
	b       *bus.Buckets
	g       *graph.Graph
	ctl     *controller.Controller
	byID    []*stream
	servers map[string]int // server id → index
	addr    map[int]string // server index → reported RTMP address
	saved   map[int]map[int]bool
	cmds    chan command
	results chan result
	dec     []controller.Decision
	bonus   bonusSaver // demand bonuses saved for the next leader (bonus.go)
	live    liveAddrs  // where to ask a relay whose connection closed (gone.go)
	probes  *prober
}

// controllerConfig is the controller's configuration for o's.
func controllerConfig(cfg Config) controller.Config {
	return controller.Config{Demand: cfg.Demand, Scaling: cfg.Scaling, FanOut: cfg.FanOut,
		StatusTTL: cfg.Buckets.StatusTTL, MaxStreams: cfg.MaxStreams, EndGrace: cfg.EndGrace}
}

func newState(o *Orchestrator, b *bus.Buckets) *state {
	g := o.cfg.Graph
	st := &state{o: o, b: b, g: g, ctl: controller.New(controllerConfig(o.cfg), g),
		servers: map[string]int{}, addr: map[int]string{}, saved: map[int]map[int]bool{},
		cmds: make(chan command, 1024), results: make(chan result, 1024), bonus: newBonusSaver(), probes: newProber()}
	for i, s := range g.Servers() {
		st.servers[s.ID] = i
	}
	return st
}

// stream returns (creating) app/name; nil when at the bound.
func (st *state) stream(app, name string) *stream { return st.streamKey(app+"/"+name, app, name) }

// streamKey is stream with the key app/name already made.
func (st *state) streamKey(key, app, name string) *stream {
	id, ok := st.ctl.Stream(key)
	if !ok {
		return nil
	}
	for len(st.byID) <= id {
		st.byID = append(st.byID, nil)
	}
	if st.byID[id] == nil {
		st.byID[id] = &stream{id: id, app: app, name: name}
	}
	return st.byID[id]
}

// apply gives the controller one event and carries out its decisions.
func (st *state) apply(ctx context.Context, e controller.Event) {
	st.dec = st.ctl.Apply(e, st.dec[:0])
	if j := st.o.cfg.Journal; j != nil {
		j(e, append([]controller.Decision(nil), st.dec...))
	}
	for _, d := range st.dec {
		st.act(ctx, d)
	}
}

// act carries out (or records) one decision.
func (st *state) act(ctx context.Context, d controller.Decision) {
	if d.Action == controller.Down {
		sv := st.g.Servers()[d.Server]
		st.o.log.Warn("relay marked down", "server", sv.ID, "reason", d.Reason)
		st.note("down", nil, d.Server, d.Reason)
		for _, s := range st.byID {
			if s != nil && st.saved[s.id][d.Server] {
				st.save(ctx, s)
			}
		}
		return
	}
	if d.Stream < 0 || d.Stream >= len(st.byID) || st.byID[d.Stream] == nil {
		return
	}
	s := st.byID[d.Stream]
	key := s.app + "/" + s.name
	srvID := ""
	if d.Server >= 0 {
		srvID = st.g.Servers()[d.Server].ID
	}
	switch d.Action {
	case controller.Open:
		st.o.log.Info("opening relay", "stream", key, "server", srvID, "parent", st.g.Servers()[d.Parent].ID, "reason", d.Reason)
		st.note("open", s, d.Server, d.Reason)
		st.save(ctx, s)
		st.send(ctx, d.Server, s, bus.OpOpen, d.Parent, d.Reason)
	case controller.Ready:
		st.o.log.Info("relay ready", "stream", key, "server", srvID)
		st.note("ready", s, d.Server, d.Reason)
		st.save(ctx, s)
	case controller.Failed:
		st.o.log.Warn("relay did not open", "stream", key, "server", srvID, "err", d.Reason)
		st.note("failed", s, d.Server, d.Reason)
		st.save(ctx, s)
	case controller.Drain:
		st.o.log.Info("draining relay", "stream", key, "server", srvID, "reason", d.Reason)
		st.note("drain", s, d.Server, d.Reason)
		st.save(ctx, s)
	case controller.Close:
		st.o.log.Info("closing relay", "stream", key, "server", srvID, "reason", d.Reason)
		st.note("close", s, d.Server, d.Reason)
		st.send(ctx, d.Server, s, bus.OpClose, -1, d.Reason)
		st.save(ctx, s)
	case controller.Forget:
		st.save(ctx, s)
		st.bonus.dirty[s.id] = true // deletes its saved bonuses
	}
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
		n := 0
		for _, r := range p.Relays {
			srv, ok := st.servers[r.Server]
			if !ok {
				continue
			}
			parent, ok := st.servers[r.Parent]
			if !ok {
				parent = st.g.Primary()
			}
			state := controller.Serving
			switch r.State {
			case bus.StateOpening:
				state = controller.Opening
			case bus.StateDraining:
				state = controller.Draining
			}
			st.apply(ctx, controller.Event{Time: now, Kind: controller.EvAdopt, Stream: p.App + "/" + p.Name,
				Server: srv, Parent: parent, State: state, Since: r.Since})
			if !st.has(s, srv) {
				st.o.log.Warn("cannot adopt relay", "server", r.Server, "stream", p.App+"/"+p.Name)
				continue
			}
			n++
			if state == controller.Opening {
				st.send(ctx, srv, s, bus.OpOpen, parent, "re-issued after a change of leader")
			}
		}
		st.remember(s)
		st.o.log.Info("placement restored", "stream", p.App+"/"+p.Name, "relays", n)
		return true
	})
	if err != nil {
		return err
	}
	// Bonuses after placements: a location that hosts the stream gathers none.
	return st.restoreBonuses(lctx)
}

func (st *state) has(s *stream, srv int) bool {
	for _, r := range st.ctl.Relays(s.id) {
		if r.Server == srv {
			return true
		}
	}
	return false
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

// send queues a command for server srv about stream s (parent: the server
// an opened relay pulls from).
func (st *state) send(ctx context.Context, srv int, s *stream, op string, parent int, reason string) {
	c := command{server: srv, stream: s.id, cmd: bus.Command{Op: op, App: s.app, Name: s.name, Reason: reason}}
	if op == bus.OpOpen && parent >= 0 {
		c.cmd.Parent = "rtmp://" + st.rtmpAddr(parent)
	}
	select {
	case st.cmds <- c:
	default:
		st.o.log.Warn("command queue full", "op", op, "server", st.g.Servers()[srv].ID)
		if op == bus.OpOpen {
			st.apply(ctx, controller.Event{Time: time.Now(), Kind: controller.EvFailed, Stream: s.app + "/" + s.name,
				Server: srv, Why: "command queue full"})
		}
	}
}

// rtmpAddr is where a server plays from: its reported address, else the graph's.
func (st *state) rtmpAddr(srv int) string {
	if a := st.addr[srv]; a != "" {
		return a
	}
	return st.g.Servers()[srv].RTMP
}

func (st *state) onStatus(ctx context.Context, now time.Time, s bus.Status) {
	srv, ok := st.servers[s.ID]
	if !ok {
		return
	}
	if s.RTMP != "" {
		st.addr[srv] = s.RTMP
	}
	st.live.status(srv, s, now)
	back := st.ctl.IsDown(srv)
	loads := make([]controller.Load, 0, len(s.Streams))
	for _, ss := range s.Streams {
		loads = append(loads, controller.Load{Stream: ss.App + "/" + ss.Name, Viewers: float64(ss.Viewers), Mbps: ss.Mbps,
			HTTPViewers: float64(ss.HTTPViewers())})
	}
	st.apply(ctx, controller.Event{Time: now, Kind: controller.EvStatus, Server: srv, Loads: loads})
	if back {
		st.o.log.Info("relay is back", "server", s.ID)
	}
}

func (st *state) onDemand(ctx context.Context, now time.Time, d bus.Demand) {
	for _, e := range d.Events {
		v, ok := st.g.Vertex(e.Vertex)
		if !ok {
			continue
		}
		key := e.App + "/" + e.Name
		s := st.streamKey(key, e.App, e.Name)
		if s == nil {
			continue
		}
		st.bonus.dirty[s.id] = true
		st.apply(ctx, controller.Event{Time: now, Kind: controller.EvDemand, Stream: key,
			Vertex: v, N: float64(e.N), Nearest: e.Nearest, Full: float64(max(0, min(e.Full, e.N)))})
	}
}

func (st *state) onResult(ctx context.Context, r result) {
	if r.cmd.Op != bus.OpOpen {
		if r.err != nil {
			st.o.log.Warn("command failed", "op", r.cmd.Op, "server", st.g.Servers()[r.server].ID, "err", r.err)
		}
		return
	}
	e := controller.Event{Time: time.Now(), Kind: controller.EvReady, Stream: r.cmd.App + "/" + r.cmd.Name, Server: r.server}
	if r.err != nil {
		e.Kind, e.Why = controller.EvFailed, r.err.Error()
	}
	st.apply(ctx, e)
}

// evaluate runs the controller's tick.
func (st *state) evaluate(ctx context.Context, now time.Time) {
	st.apply(ctx, controller.Event{Time: now, Kind: controller.EvTick})
}

// remember notes which servers the saved placement of s names.
func (st *state) remember(s *stream) {
	m := map[int]bool{}
	for _, r := range st.ctl.Relays(s.id) {
		m[r.Server] = true
	}
	st.saved[s.id] = m
}

// save writes the placement of s (or deletes it when no relay is left).
func (st *state) save(ctx context.Context, s *stream) {
	st.remember(s)
	if st.b == nil {
		return
	}
	key := bus.StreamKey(s.app, s.name)
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	relays := st.ctl.Relays(s.id)
	if len(relays) == 0 {
		if err := st.b.Placements.Delete(sctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			st.o.log.Warn("placement not deleted", "stream", s.app+"/"+s.name, "err", err)
		}
		return
	}
	p := bus.Placement{App: s.app, Name: s.name}
	for _, r := range relays {
		state := bus.StateReady
		switch r.State {
		case controller.Opening:
			state = bus.StateOpening
		case controller.Draining:
			state = bus.StateDraining
		}
		p.Relays = append(p.Relays, bus.PlacedRelay{Server: st.g.Servers()[r.Server].ID,
			Parent: st.g.Servers()[r.Parent].ID, State: state, Since: r.Since.UTC()})
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
	thr := st.ctl.Threshold()
	table := st.ctl.Table()
	for _, s := range st.byID {
		if s == nil {
			continue
		}
		for j := 0; j < table.NumDests(); j++ {
			v := table.Dest(j)
			if b := st.ctl.Bonus(now, s.id, v); b > thr/100 {
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
