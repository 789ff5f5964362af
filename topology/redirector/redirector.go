// Package redirector sends each viewer to the nearest relay that carries the
// stream: GET /play/{app}/{name}?proto=rtmp|hls|dash answers 302 to the
// chosen server's URL (or JSON with Accept: application/json);
// proto=hls&format=ts names the server's MPEG-TS playlist. It follows
// the placements and relay statuses in the bus buckets into its own
// placement mesh, so it keeps answering from its last copy when the
// orchestrator (or the bus) is away, and it publishes the requests it sees
// as demand, in batches. GET /api/v1/mesh describes the mesh.
package redirector

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	mrand "math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/relaymesh/relaymesh/geo"
	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/liveness"
	"github.com/relaymesh/relaymesh/topology/placement"
)

// BonusInfo is one demand bonus for the mesh API (from the orchestrator).
type BonusInfo struct {
	App       string  `json:"app"`
	Name      string  `json:"name"`
	Location  string  `json:"location"`
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
}

// Config tunes a redirector. Zero fields take the documented defaults.
type Config struct {
	// ID names this redirector in demand messages.
	ID string
	// Graph is the location graph with its servers (required).
	Graph *graph.Graph
	// Geo locates viewer addresses (required); Default is the vertex of
	// viewers no rule matches (default: none, which sends them to the primary).
	Geo     geo.Locator
	Default string
	// TokenKey signs sticky tokens. Default: 32 random bytes (tokens then
	// do not survive a restart or work across redirectors).
	TokenKey []byte
	// TokenTTL is how long a sticky token holds. Default 10 min.
	TokenTTL time.Duration
	// TrustedProxies: X-Forwarded-For is believed only from these peers.
	TrustedProxies []netip.Prefix
	// DevIP lets ?ip=ADDR pretend the viewer is at ADDR (development only).
	DevIP bool
	// DemandInterval between demand batches. Default 1 s.
	DemandInterval time.Duration
	// StatusTTL: a relay silent this long (while the bus is up) is down.
	// Default bus.DefaultStatusTTL.
	StatusTTL time.Duration
	// AliveTimeout: a relay that sends heartbeats and missed them this long
	// (while the bus is up) is down (liveness.go). Default
	// bus.DefaultAliveTimeout.
	AliveTimeout time.Duration
	// SteeringTTL is the TTL of content steering answers (steering.go):
	// how soon a player following steering leaves a relay that drains.
	// Default DefaultSteeringTTL.
	SteeringTTL time.Duration
	// DASHSteeringTTL is the TTL of the DASH answers (steering.go).
	// Default DefaultDASHSteeringTTL.
	DASHSteeringTTL time.Duration
	// Placement tunes the mesh.
	Placement placement.Config
	// Bonus optionally reports the orchestrator's demand bonuses.
	Bonus func() []BonusInfo
	// OverflowURL is an external CDN's URL prefix (e.g.
	// "https://cdn.example.net"): when every server that could take an HLS
	// or DASH viewer is full, the viewer is sent to OverflowURL + the same
	// path (/hls/APP/NAME/index.m3u8, /dash/APP/NAME/manifest.mpd) instead
	// of being told to retry later. RTMP viewers cannot spill over.
	OverflowURL string
	// PlayToken, when set, signs the play token of app/name that the
	// redirect carries (?token= on an RTMP Location, /t/TOKEN/ in an HLS or
	// DASH one, "play_token" in JSON), for relays that protect the
	// application; "" issues none.
	PlayToken func(app, name string) string
}

type relayState struct {
	status bus.Status
	at     time.Time
	up     bool
	// Heartbeats (liveness.go): when the last arrived (local clock), and
	// the relay's time of its goodbye, if it said one.
	alive   time.Time
	bye     time.Time // relay's clock
	byeSeen time.Time // local clock
	// gone: when its process was found gone after its NATS connection
	// closed (disconnect.go); probing: its listener is being asked.
	gone    time.Time
	probing bool
	// carried: the live streams of its last status (carrying.go).
	carried carried
}

type demandKey struct {
	stream string
	vertex graph.VertexID
}

type demandVal struct {
	n       int
	full    int // of n, turned away: no server could take them
	nearest float32
}

// Redirector answers viewers; it is safe for concurrent requests.
type Redirector struct {
	cfg     Config
	conn    *bus.Conn
	log     *slog.Logger
	mesh    *placement.Mesh
	matcher *geo.Matcher
	rnd     sync.Pool

	mu         sync.RWMutex
	relays     map[placement.ServerID]*relayState
	placements map[string]bus.Placement // by app/name
	busSince   time.Time                // connected to the bus since (liveness.go)
	// opening: by app/name, the relays starting (provisional.go; under mu).
	opening map[string][]placement.ServerID
	// carriers: by app/name, the servers whose last status reports it live,
	// in ID order (carrying.go; under mu).
	carriers map[string][]placement.ServerID

	dmu     sync.Mutex
	demand  map[demandKey]demandVal
	dropped atomic.Uint64

	answers answers

	// Disconnects (disconnect.go): how a relay's listener is asked, the
	// probes in flight, their outcomes, and Run's context for them.
	probe       func(ctx context.Context, addr string) liveness.Result
	probeSem    chan struct{}
	probeWG     sync.WaitGroup
	disconnects disconnectCounts
	runCtx      atomic.Pointer[context.Context]
}

// New returns a redirector. conn may be nil: it then answers from the graph
// alone (only the primary carries streams) and publishes no demand.
func New(cfg Config, conn *bus.Conn, log *slog.Logger) (*Redirector, error) {
	if cfg.Graph == nil || cfg.Geo == nil {
		return nil, errors.New("redirector: graph and geo locator are required")
	}
	if len(cfg.TokenKey) == 0 {
		cfg.TokenKey = make([]byte, 32)
		if _, err := rand.Read(cfg.TokenKey); err != nil {
			return nil, err
		}
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = 10 * time.Minute
	}
	if cfg.DemandInterval <= 0 {
		cfg.DemandInterval = time.Second
	}
	if cfg.StatusTTL <= 0 {
		cfg.StatusTTL = bus.DefaultStatusTTL
	}
	if cfg.SteeringTTL <= 0 {
		cfg.SteeringTTL = DefaultSteeringTTL
	}
	if cfg.DASHSteeringTTL <= 0 {
		cfg.DASHSteeringTTL = DefaultDASHSteeringTTL
	}
	if cfg.AliveTimeout <= 0 {
		cfg.AliveTimeout = bus.DefaultAliveTimeout
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var rules []geo.Rule
	for _, r := range cfg.Graph.MatchRules() {
		rules = append(rules, geo.Rule{Vertex: r.Vertex, Country: r.Country, Subdivision: r.Subdivision, GeonameID: r.GeonameID, Continent: r.Continent})
	}
	m, err := geo.NewMatcher(rules, cfg.Default)
	if err != nil {
		return nil, err
	}
	r := &Redirector{cfg: cfg, conn: conn, log: log.With("component", "redirector"), matcher: m,
		mesh:   placement.New(cfg.Graph, cfg.Placement),
		relays: map[placement.ServerID]*relayState{}, placements: map[string]bus.Placement{}, opening: map[string][]placement.ServerID{}, carriers: map[string][]placement.ServerID{},
		demand: map[demandKey]demandVal{}, probe: liveness.Dial, probeSem: make(chan struct{}, liveness.MaxProbes)}
	r.rnd.New = func() any { return mrand.New(mrand.NewPCG(mrand.Uint64(), mrand.Uint64())) }
	// Relays are not sent viewers until they report; the primary is always
	// up. Not reported yet is not down: it displaced no viewer.
	for i := range cfg.Graph.Servers() {
		if placement.ServerID(i) != r.mesh.Primary() {
			r.mesh.SetUnknown(placement.ServerID(i))
		}
	}
	return r, nil
}

// Mesh is the redirector's placement mesh.
func (r *Redirector) Mesh() *placement.Mesh { return r.mesh }

// Run follows the buckets and publishes demand until ctx ends.
func (r *Redirector) Run(ctx context.Context) error {
	if r.conn == nil {
		<-ctx.Done()
		return nil
	}
	r.runCtx.Store(&ctx)
	defer r.probeWG.Wait()
	var wg sync.WaitGroup
	defer wg.Wait()
	pub := bus.NewPublisher(r.conn.NC, 64)
	wg.Add(1)
	go func() { defer wg.Done(); pub.Run(ctx) }()
	wg.Add(1)
	go func() { defer wg.Done(); r.follow(ctx) }()
	sub, err := r.conn.NC.Subscribe(bus.AliveWildcard, r.onAliveMsg)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	// Statuses come from the bucket's watch and, the same, as core
	// messages: while the watch is away (its stream's leader lost, a new
	// one still to be elected) relays stay known.
	ssub, err := r.conn.NC.Subscribe(bus.StatusWildcard, r.onStatusMsg)
	if err != nil {
		return err
	}
	defer ssub.Unsubscribe()
	// A relay's NATS connection that closes is announced at once
	// (disconnect.go); on a cluster that does not import the advisories
	// into this account, nothing comes and the heartbeats decide alone.
	dsub, err := r.conn.NC.Subscribe(bus.DisconnectWildcard, r.onDisconnectMsg)
	if err != nil {
		return err
	}
	defer dsub.Unsubscribe()
	t := time.NewTicker(r.cfg.DemandInterval)
	defer t.Stop()
	// Liveness is checked ten times per timeout, so a dead relay is out
	// within AliveTimeout and a tenth.
	lt := time.NewTicker(r.cfg.AliveTimeout / 10)
	defer lt.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			r.flushDemand(pub)
		case now := <-lt.C:
			r.expire(now)
		}
	}
}

// follow watches the status and placement buckets, reopening the watches
// whenever they end (bus away), until ctx ends.
func (r *Redirector) follow(ctx context.Context) {
	for ctx.Err() == nil {
		bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		b, err := r.conn.OpenBuckets(bctx, bus.BucketConfig{StatusTTL: r.cfg.StatusTTL})
		cancel()
		if err == nil {
			err = r.watch(ctx, b)
		}
		if ctx.Err() != nil {
			return
		}
		r.log.Debug("bucket watch ended, will retry", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (r *Redirector) watch(ctx context.Context, b *bus.Buckets) error {
	ws, err := b.Relays.WatchAll(ctx)
	if err != nil {
		return err
	}
	defer ws.Stop()
	wp, err := b.Placements.WatchAll(ctx)
	if err != nil {
		return err
	}
	defer wp.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-ws.Updates():
			if !ok {
				return errors.New("status watch closed")
			}
			if e != nil && (e.Operation() == jetstream.KeyValueDelete || e.Operation() == jetstream.KeyValuePurge) {
				r.onStatusRemoved(e.Key())
				continue
			}
			if e != nil && e.Value() != nil {
				if s, err := bus.DecodeStatus(e.Value()); err == nil && s.ID == e.Key() {
					r.onStatus(s)
				}
			}
		case e, ok := <-wp.Updates():
			if !ok {
				return errors.New("placement watch closed")
			}
			if e == nil {
				continue
			}
			app, name, err := bus.ParseStreamKey(e.Key())
			if err != nil {
				continue
			}
			p := bus.Placement{App: app, Name: name}
			if len(e.Value()) > 0 {
				if p, err = bus.DecodePlacement(e.Value()); err != nil {
					continue
				}
			}
			r.onPlacement(p)
		}
	}
}

func (r *Redirector) onStatus(s bus.Status) {
	id, ok := r.mesh.ServerByID(s.ID)
	if !ok {
		return
	}
	now := time.Now()
	r.mu.Lock()
	rs := r.relays[id]
	if rs == nil {
		rs = &relayState{}
		r.relays[id] = rs
	}
	if !rs.bye.IsZero() && !s.Time.After(rs.bye) {
		r.mu.Unlock()
		return // a status from before its goodbye
	}
	rs.status, rs.at = s, now
	r.indexStreamsLocked(id, rs, s)
	if !rs.gone.IsZero() {
		r.reviveLocked(id, rs)
	}
	up := r.liveLocked(rs, now)
	rs.up = up
	r.mu.Unlock()
	r.setState(id, up, s.Draining)
	r.mesh.SetLoad(id, int64(s.Viewers), s.Mbps)
}

// expire marks relays down that went silent while the bus is connected
// (with the bus away, the last known state stands).
func (r *Redirector) expire(now time.Time) {
	connected := r.conn != nil && r.conn.NC.IsConnected()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !connected {
		r.busSince = time.Time{}
		return
	}
	if r.busSince.IsZero() {
		r.busSince = now // heartbeats get AliveTimeout to come back
	}
	for id, rs := range r.relays {
		if rs.up && !r.liveLocked(rs, now) && id != r.mesh.Primary() {
			rs.up = false
			r.mesh.SetUp(id, false)
			r.log.Info("relay silent, not sending viewers there", "server", rs.status.ID,
				"last_status", now.Sub(rs.at).Round(time.Millisecond), "last_heartbeat", now.Sub(rs.alive).Round(time.Millisecond))
		}
	}
}

func (r *Redirector) onPlacement(p bus.Placement) {
	key := p.App + "/" + p.Name
	sid, err := r.mesh.AddStream(key, 0)
	if err != nil {
		return
	}
	want := map[placement.ServerID]bool{}
	for _, rel := range p.Relays {
		if id, ok := r.mesh.ServerByID(rel.Server); ok && rel.State == bus.StateReady {
			want[id] = true
		}
	}
	for _, id := range r.mesh.Carriers(sid) {
		if !want[id] {
			r.mesh.Close(id, sid)
		}
	}
	for id := range want {
		if !r.mesh.Carries(id, sid) {
			r.mesh.Open(id, sid)
		}
	}
	r.mu.Lock()
	if len(p.Relays) == 0 {
		delete(r.placements, key)
	} else {
		r.placements[key] = p
	}
	r.noteOpening(key, p)
	r.mu.Unlock()
}

// noteDemand accounts one request for the next batch; full: no server
// could take it.
func (r *Redirector) noteDemand(stream string, v graph.VertexID, nearest float32, full bool) {
	k := demandKey{stream, v}
	r.dmu.Lock()
	defer r.dmu.Unlock()
	d, ok := r.demand[k]
	if !ok && len(r.demand) >= bus.MaxDemandEvents {
		r.dropped.Add(1)
		return
	}
	d.n++
	if full {
		d.full++
	}
	d.nearest = nearest
	r.demand[k] = d
}

func (r *Redirector) flushDemand(pub *bus.Publisher) {
	r.dmu.Lock()
	if len(r.demand) == 0 {
		r.dmu.Unlock()
		return
	}
	msg := bus.Demand{From: r.cfg.ID, Events: make([]bus.DemandEvent, 0, len(r.demand))}
	g := r.mesh.Graph()
	for k, d := range r.demand {
		app, name := splitStream(k.stream)
		near := float64(d.nearest)
		if d.nearest > 1e30 {
			near = -1
		}
		msg.Events = append(msg.Events, bus.DemandEvent{App: app, Name: name, Vertex: g.Location(k.vertex).ID, Nearest: near, N: d.n, Full: d.full})
	}
	clear(r.demand)
	r.dmu.Unlock()
	if data, err := bus.Encode(msg); err == nil {
		pub.Publish(bus.DemandSubject, data)
	}
}

func splitStream(s string) (app, name string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}
