package edge

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/relaymesh/relaymesh/internal/rpc"
	"github.com/relaymesh/relaymesh/internal/rtmp"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
	"github.com/relaymesh/relaymesh/internal/sharedobject/replica"
)

// Config configures a Relay. Zero fields take the defaults noted.
type Config struct {
	// RelayID is this relay's id: sent upstream with connect and the prefix
	// of its clients' mesh-wide ids (required).
	RelayID string
	// Upstream is rtmp://host:port of the primary or a parent relay (required).
	Upstream string
	// Rules are the primary's write rules, applied here to local clients.
	Rules access.Rules
	// Limits of each scope's replica.Proxy.
	Limits replica.Limits
	// Conn configures the upstream links.
	Conn rtmp.ConnConfig
	// BackoffMin and BackoffMax bound the reconnect delay of a link
	// (defaults 250ms and 5s).
	BackoffMin, BackoffMax time.Duration
	// ConnectWait is how long a call waits for a scope link that is
	// connecting before it is refused (default 5s).
	ConnectWait time.Duration
	// Linger keeps a scope's link after its last local client left
	// (default 5s).
	Linger time.Duration
	// CallsPerClient bounds the calls of one local client waiting for an
	// answer (default 8); RelayCallsPerLink those of a downstream relay's
	// link (default 256); PendingCalls those of one upstream link (default
	// 4096). Over a bound a call is answered with _error at once.
	CallsPerClient, RelayCallsPerLink, PendingCalls int
	// FloodPerSecond and FloodBurst: a client sending more shared-object
	// messages and calls than this is closed (defaults in rpc.PeersConfig).
	FloodPerSecond float64
	FloodBurst     int
	Log            *slog.Logger // default slog.Default()
}

func (c Config) withDefaults() Config {
	if c.BackoffMin <= 0 {
		c.BackoffMin = 250 * time.Millisecond
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 5 * time.Second
	}
	if c.ConnectWait <= 0 {
		c.ConnectWait = 5 * time.Second
	}
	if c.Linger <= 0 {
		c.Linger = 5 * time.Second
	}
	if c.CallsPerClient <= 0 {
		c.CallsPerClient = 8
	}
	if c.RelayCallsPerLink <= 0 {
		c.RelayCallsPerLink = 256
	}
	if c.PendingCalls <= 0 {
		c.PendingCalls = 4096
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return c
}

// Relay is a relay's shared-object and RPC layer.
type Relay struct {
	cfg   Config
	log   *slog.Logger
	ctx   context.Context
	peers *rpc.Peers

	mu    sync.Mutex
	host  string // upstream host:port
	tls   bool   // rtmps upstream
	links map[string]*link
}

// peerState is kept per connection and touched only on its read goroutine.
type peerState struct {
	link    *link // the link the peer is a proxy client of
	proxied bool
}

// New returns a Relay whose links live until ctx ends.
func New(ctx context.Context, cfg Config) (*Relay, error) {
	cfg = cfg.withDefaults()
	if cfg.RelayID == "" {
		return nil, fmt.Errorf("edge: relay id required")
	}
	if err := cfg.Rules.Validate(); err != nil {
		return nil, err
	}
	r := &Relay{cfg: cfg, log: cfg.Log.With("component", "so-relay"), ctx: ctx, links: map[string]*link{}}
	r.peers = rpc.NewPeers(rpc.PeersConfig{Node: cfg.RelayID, FloodPerSecond: cfg.FloodPerSecond, FloodBurst: cfg.FloodBurst, Log: r.log})
	if err := r.SetUpstream(cfg.Upstream); err != nil {
		return nil, err
	}
	return r, nil
}

// SetUpstream changes the upstream for links (re)connecting from now on.
func (r *Relay) SetUpstream(raw string) error {
	u, err := rtmp.ParseURL(strings.TrimRight(raw, "/")+"/_", 1)
	if err != nil {
		return fmt.Errorf("edge: upstream url: %w", err)
	}
	r.mu.Lock()
	r.host, r.tls = u.Host, u.TLS
	r.mu.Unlock()
	return nil
}

func (r *Relay) upstreamHost() (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.host, r.tls
}

// Connected registers a connection at connect (serve.Sessions): a client
// of an explicit scope, app/instance, opens the scope's link at once, so
// server-to-client calls reach it.
func (r *Relay) Connected(ss *rtmp.Session, req *rtmp.ConnectRequest) {
	p := r.add(ss, req)
	if p.Link || (!p.Relay && strings.Contains(strings.Trim(req.App, "/"), "/")) {
		r.ensure(p.Scope)
	}
}

// Published: relays refuse broadcasters; nothing to note.
func (r *Relay) Published(*rtmp.Session) {}

// Closed forgets a connection.
func (r *Relay) Closed(ss *rtmp.Session) { r.closed(ss) }

func (r *Relay) add(ss *rtmp.Session, req *rtmp.ConnectRequest) *rpc.Peer {
	p, added := r.peers.Add(ss, req)
	if added {
		p.State = &peerState{}
		if p.Link || strings.Contains(strings.Trim(req.App, "/"), "/") {
			ss.Conn.SetReadTimeout(0) // shared-object clients and links may stay silent
		}
	}
	return p
}

func (r *Relay) closed(ss *rtmp.Session) {
	p, left := r.peers.Remove(ss)
	if p == nil {
		return
	}
	st := p.State.(*peerState)
	if st.proxied {
		st.link.proxy.Disconnect(p.ID)
	}
	if left == 0 {
		r.mu.Lock()
		l := r.links[p.Scope]
		r.mu.Unlock()
		if l != nil {
			l.idle()
		}
	}
}

// ensure returns the link of a scope, starting it if needed.
func (r *Relay) ensure(scope string) *link {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.links[scope]; l != nil {
		l.busy()
		return l
	}
	l, err := newLink(r, scope)
	if err != nil {
		r.log.Error("shared objects: cannot start scope link", "scope", scope, "err", err)
		return nil
	}
	r.links[scope] = l
	return l
}

// drop removes l if it is still the scope's link and nobody uses the scope.
func (r *Relay) drop(l *link) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.links[l.scope] != l || r.peers.Count(l.scope) > 0 {
		return false
	}
	delete(r.links, l.scope)
	return true
}

// Links lists the scopes with a link and whether each is connected.
func (r *Relay) Links() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]bool, len(r.links))
	for s, l := range r.links {
		out[s] = l.conn.Load() != nil
	}
	return out
}

// Message handles shared-object messages and calls of local clients
// (relay.MessageFunc).
func (r *Relay) Message(ctx context.Context, ss *rtmp.Session, m rtmp.Message) {
	p := r.peers.Of(ss)
	if p == nil {
		p = r.add(ss, ss.Connect)
	}
	if !p.Relay && !p.Allow(r.log) {
		return
	}
	l := r.ensure(p.Scope)
	if l == nil {
		return
	}
	st := p.State.(*peerState)
	switch m.Type {
	case rtmp.TypeSharedObjectAMF0, rtmp.TypeSharedObjectAMF3:
		msg, ok := p.Decode(m, r.log)
		if !ok {
			return
		}
		if !st.proxied {
			role := access.RoleViewer
			if p.Relay {
				role = access.RoleRelay
			}
			if err := l.proxy.Connect(p.ID, role); err != nil {
				r.log.Warn("shared objects: connect failed", "client", p.Name, "err", err)
				return
			}
			st.link, st.proxied = l, true
			ss.Conn.SetReadTimeout(0)
		}
		st.link.proxy.FromClient(p.ID, msg)
	case rtmp.TypeCommandAMF0, rtmp.TypeCommandAMF3:
		cmd, err := rtmp.ParseCommand(m)
		if err != nil {
			return
		}
		switch cmd.Name {
		case "_result", "_error", "onStatus", rpc.MeshCall:
			return
		}
		if !rpc.ValidMethod(cmd.Name) {
			if cmd.TransactionID != 0 {
				_ = p.Send(rpc.ErrorMessage(cmd.TransactionID, rpc.CodeCallFailed, "bad method name"))
			}
			return
		}
		l.forward(ctx, p, cmd)
	}
}
