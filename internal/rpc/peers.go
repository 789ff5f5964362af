package rpc

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"golang.org/x/time/rate"

	"github.com/relaymesh/relaymesh/internal/rtmp"
	so "github.com/relaymesh/relaymesh/internal/sharedobject"
)

// Peer is one RTMP connection as the shared-object and RPC layer sees it.
type Peer struct {
	ID      so.ClientID   // local id, the key of the shared-object components
	Name    string        // mesh-wide id: node id, ":", session id
	Scope   string        // application scope, "app/instance"
	Relay   bool          // a downstream relay
	Link    bool          // a downstream relay's link for this scope (gets MeshCalls)
	Session *rtmp.Session // the connection

	amf3    bool // the client uses AMF3 object encoding: shared objects go as type 16
	limiter *rate.Limiter
	calls   atomic.Int32 // calls running for this peer
	flooded atomic.Bool  // closed for flooding: said once
	// State belongs to the layer that registered the peer.
	State any
}

// Send queues m on the peer's control queue (never dropped; a peer that does
// not read is closed when its queue is full).
func (p *Peer) Send(m rtmp.Message) error { return p.Session.Conn.Send(m) }

// Allow takes one token from the peer's flood limiter. When the peer has
// gone over it, Allow sends an error status, closes the connection once the
// status is written, and returns false.
func (p *Peer) Allow(log *slog.Logger) bool {
	if p.limiter == nil || p.limiter.Allow() {
		return true
	}
	if p.flooded.Swap(true) {
		return false // already told and closing; what it still sends is dropped
	}
	log.Warn("closing a flooding client", "client", p.Name, "scope", p.Scope)
	_ = p.Send(rtmp.StatusMessage(0, rtmp.Status{Level: "error", Code: CodeClosed, Description: "too many requests"}))
	p.Session.Conn.CloseAfterFlush(rtmp.Status{Level: "error", Code: CodeClosed, Description: "too many requests"})
	return false
}

// StartCall reserves one of max concurrent call slots; EndCall frees it.
func (p *Peer) StartCall(max int) bool {
	if p.calls.Add(1) > int32(max) {
		p.calls.Add(-1)
		return false
	}
	return true
}

// EndCall frees a slot taken by StartCall.
func (p *Peer) EndCall() { p.calls.Add(-1) }

// PeersConfig configures a registry.
type PeersConfig struct {
	// Node is this server's id, the prefix of its clients' mesh-wide ids
	// (default "primary").
	Node string
	// FloodPerSecond and FloodBurst bound the shared-object messages and
	// calls of one client connection (relays are not limited); a client over
	// the bound is closed with CodeClosed (defaults 200 and 400: well above
	// the shared-object layer's own rate limit, which answers with a status).
	FloodPerSecond float64
	FloodBurst     int
	Log            *slog.Logger // default slog.Default()
}

// Peers is the registry of connections: by session, by local id and by
// scope. It is safe for concurrent use.
type Peers struct {
	cfg  PeersConfig
	mu   sync.Mutex
	next so.ClientID
	byID map[so.ClientID]*Peer
	bySS map[*rtmp.Session]*Peer
	bySc map[string]map[so.ClientID]*Peer
	// scratch of Deliver (called under the caller's lock, one at a time per
	// component; guarded by encMu as several components may share Peers).
	encMu sync.Mutex
}

// NewPeers returns an empty registry.
func NewPeers(cfg PeersConfig) *Peers {
	if cfg.Node == "" {
		cfg.Node = "primary"
	}
	if cfg.FloodPerSecond <= 0 {
		cfg.FloodPerSecond = 200
	}
	if cfg.FloodBurst <= 0 {
		cfg.FloodBurst = 400
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Peers{cfg: cfg, byID: map[so.ClientID]*Peer{}, bySS: map[*rtmp.Session]*Peer{}, bySc: map[string]map[so.ClientID]*Peer{}}
}

// Node is the id of this server.
func (ps *Peers) Node() string { return ps.cfg.Node }

// Add registers a connected session and returns its peer (the existing one
// when the session is already registered; added reports which).
// req is the session's connect request (s.Connect is set only once the
// connect handler has returned): it says whether the peer is a downstream
// relay (rtmp.RelayMarker) and whether the connection is a relay's link for
// one scope (PropScope).
func (ps *Peers) Add(s *rtmp.Session, req *rtmp.ConnectRequest) (p *Peer, added bool) {
	relay := req.FromRelay()
	_, link := req.Object[PropScope]
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p := ps.bySS[s]; p != nil {
		return p, false
	}
	ps.next++
	p = &Peer{ID: ps.next, Name: ps.cfg.Node + ":" + s.ID, Scope: ScopeOf(req.App), Relay: relay, Link: link, Session: s,
		amf3: req.ObjectEncoding == 3}
	if !relay {
		p.limiter = rate.NewLimiter(rate.Limit(ps.cfg.FloodPerSecond), ps.cfg.FloodBurst)
	}
	ps.byID[p.ID] = p
	ps.bySS[s] = p
	sc := ps.bySc[p.Scope]
	if sc == nil {
		sc = map[so.ClientID]*Peer{}
		ps.bySc[p.Scope] = sc
	}
	sc[p.ID] = p
	return p, true
}

// Remove forgets a session's peer and returns it (nil if unknown) and how
// many peers its scope still has.
func (ps *Peers) Remove(s *rtmp.Session) (*Peer, int) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.bySS[s]
	if p == nil {
		return nil, 0
	}
	delete(ps.bySS, s)
	delete(ps.byID, p.ID)
	sc := ps.bySc[p.Scope]
	delete(sc, p.ID)
	if len(sc) == 0 {
		delete(ps.bySc, p.Scope)
	}
	return p, len(sc)
}

// Of returns the peer of a session, or nil.
func (ps *Peers) Of(s *rtmp.Session) *Peer {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.bySS[s]
}

// Get returns the peer with a local id, or nil.
func (ps *Peers) Get(id so.ClientID) *Peer {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.byID[id]
}

// ByName returns the peer with a mesh-wide id, if it is connected here.
func (ps *Peers) ByName(name string) *Peer {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.byID {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Scope returns the peers of a scope (a copy).
func (ps *Peers) Scope(scope string) []*Peer {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	sc := ps.bySc[scope]
	out := make([]*Peer, 0, len(sc))
	for _, p := range sc {
		out = append(out, p)
	}
	return out
}

// Count is the number of peers of a scope.
func (ps *Peers) Count(scope string) int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.bySc[scope])
}

// Deliver encodes each message once and queues it on the connections it is
// for, in order. It never blocks, so shared-object components may call it
// under their lock (their Deliver hook). Messages for peers that are gone
// are dropped.
func (ps *Peers) Deliver(out []so.Outgoing) {
	ps.encMu.Lock()
	defer ps.encMu.Unlock()
	var (
		last       *so.Message
		enc0, enc3 []byte
		bad        bool
	)
	for _, o := range out {
		p := ps.Get(o.Client)
		if p == nil {
			continue
		}
		if o.Message != last {
			last, enc0, enc3, bad = o.Message, nil, nil, false
		}
		if bad {
			continue
		}
		var err error
		payload := &enc0
		typ := uint8(rtmp.TypeSharedObjectAMF0)
		if p.amf3 {
			payload, typ = &enc3, rtmp.TypeSharedObjectAMF3
		}
		if *payload == nil {
			if *payload, err = o.Message.AppendEncode(nil, p.amf3); err != nil {
				bad = true
				ps.cfg.Log.Error("shared object: cannot encode message", "object", o.Message.Name, "err", err)
				continue
			}
		}
		_ = p.Send(rtmp.Message{Type: typ, Payload: *payload})
	}
}

// Decode decodes a shared-object message from a peer. A message that does
// not decode is a protocol error of that peer: it gets a status and is
// closed, and Decode returns false.
func (p *Peer) Decode(m rtmp.Message, log *slog.Logger) (so.Message, bool) {
	msg, err := so.Decode(m.Payload, m.Type == rtmp.TypeSharedObjectAMF3)
	if err != nil {
		log.Info("bad shared-object message, closing", "client", p.Name, "err", err)
		st := rtmp.Status{Level: "error", Code: CodeClosed, Description: "bad shared-object message: " + err.Error()}
		_ = p.Send(rtmp.StatusMessage(0, st))
		p.Session.Conn.CloseAfterFlush(st)
		return so.Message{}, false
	}
	return msg, true
}
