package origin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/relaymesh/relaymesh/internal/rpc"
	"github.com/relaymesh/relaymesh/internal/rtmp"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
	"github.com/relaymesh/relaymesh/internal/sharedobject/authority"
)

// Call is one client-to-server call, as handlers see it.
type Call struct {
	App      string `json:"app"`       // application, e.g. "live"
	Scope    string `json:"scope"`     // application scope, e.g. "live/room"
	ClientID string `json:"client_id"` // mesh-wide id of the caller, e.g. "r1:c7"
	Method   string `json:"method"`
	Args     []any  `json:"args"`
}

// HandlerFunc answers a call: the value is sent back as _result, an error
// as _error (a *rpc.StatusError chooses the code; any other error gives
// NetConnection.Call.Failed with its text).
type HandlerFunc func(ctx context.Context, c Call) (any, error)

// Config configures a Server. Zero fields take the defaults noted.
type Config struct {
	// Node is the primary's id, the prefix of its clients' ids (default "primary").
	Node string
	// SharedObjects configures the Authority; its Deliver is set by the Server.
	SharedObjects authority.Config
	// FlushInterval is how often persistent objects are saved (default 2s).
	FlushInterval time.Duration
	// Webhooks maps an application ("live") or "*" to the URL that answers
	// calls without a Go handler: POST JSON {app, scope, client_id, method,
	// args}; a 2xx JSON body is the result, anything else an _error.
	Webhooks map[string]string
	// WebhookTimeout bounds one webhook request (default 5s).
	WebhookTimeout time.Duration
	// HTTPClient makes webhook requests (default a client without redirects).
	HTTPClient *http.Client
	// CallsPerClient bounds the calls of one client running at once (default
	// 8); RelayCallsPerLink bounds those of one relay link (default 256).
	// Over the bound a call is answered with _error at once.
	CallsPerClient, RelayCallsPerLink int
	// FloodPerSecond and FloodBurst: a client sending more shared-object
	// messages and calls than this is closed (defaults in rpc.PeersConfig).
	FloodPerSecond float64
	FloodBurst     int
	Log            *slog.Logger // default slog.Default()
}

// Server is the primary's shared-object and RPC layer.
type Server struct {
	cfg   Config
	log   *slog.Logger
	peers *rpc.Peers
	auth  *authority.Authority

	mu       sync.RWMutex
	handlers map[string]HandlerFunc
}

// peerState is what the server keeps per connection; it is only touched on
// the connection's read goroutine.
type peerState struct {
	publisher bool
	soClient  bool // connected to the authority
}

// New returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Node == "" {
		cfg.Node = "primary"
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = 2 * time.Second
	}
	if cfg.WebhookTimeout <= 0 {
		cfg.WebhookTimeout = 5 * time.Second
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if cfg.CallsPerClient <= 0 {
		cfg.CallsPerClient = 8
	}
	if cfg.RelayCallsPerLink <= 0 {
		cfg.RelayCallsPerLink = 256
	}
	s := &Server{cfg: cfg, log: cfg.Log.With("component", "so-rpc"), handlers: map[string]HandlerFunc{}}
	s.peers = rpc.NewPeers(rpc.PeersConfig{Node: cfg.Node, FloodPerSecond: cfg.FloodPerSecond, FloodBurst: cfg.FloodBurst, Log: s.log})
	soCfg := cfg.SharedObjects
	soCfg.Deliver = s.peers.Deliver
	if soCfg.Logger == nil {
		soCfg.Logger = s.log
	}
	var err error
	if s.auth, err = authority.New(soCfg); err != nil {
		return nil, err
	}
	s.registerBuiltins()
	return s, nil
}

// Authority is the shared-object authority, for server-side code.
func (s *Server) Authority() *authority.Authority { return s.auth }

// Run saves persistent shared objects every FlushInterval until ctx ends,
// then once more.
func (s *Server) Run(ctx context.Context) { s.auth.Run(ctx, s.cfg.FlushInterval) }

// Register adds (or replaces) the Go handler of a method.
func (s *Server) Register(method string, fn HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[method] = fn
}

func (s *Server) handler(method string) HandlerFunc {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.handlers[method]
}

// Connected registers a connection at connect (serve.Sessions), so that
// server-to-client calls reach clients that never used a shared object.
func (s *Server) Connected(ss *rtmp.Session, req *rtmp.ConnectRequest) { s.add(ss, req) }

// Published notes a broadcaster: role publisher for the write rules.
func (s *Server) Published(ss *rtmp.Session) {
	if peer := s.peers.Of(ss); peer != nil {
		peer.State.(*peerState).publisher = true
	}
}

// Closed forgets a connection and releases its shared objects.
func (s *Server) Closed(ss *rtmp.Session) { s.closed(ss) }

func (s *Server) add(ss *rtmp.Session, req *rtmp.ConnectRequest) *rpc.Peer {
	p, added := s.peers.Add(ss, req)
	if added {
		p.State = &peerState{}
		if p.Link {
			ss.Conn.SetReadTimeout(0) // a scope link may stay silent
		}
	}
	return p
}

func (s *Server) closed(ss *rtmp.Session) {
	p, _ := s.peers.Remove(ss)
	if p != nil && p.State.(*peerState).soClient {
		s.auth.Disconnect(p.ID)
	}
}

// Message handles shared-object messages and calls (relay.MessageFunc).
func (s *Server) Message(ctx context.Context, ss *rtmp.Session, m rtmp.Message) {
	p := s.peers.Of(ss)
	if p == nil {
		p = s.add(ss, ss.Connect) // not registered at connect; Closed will not be seen
	}
	if !p.Relay && !p.Allow(s.log) {
		return
	}
	st := p.State.(*peerState)
	switch m.Type {
	case rtmp.TypeSharedObjectAMF0, rtmp.TypeSharedObjectAMF3:
		msg, ok := p.Decode(m, s.log)
		if !ok {
			return
		}
		if !st.soClient {
			role := access.RoleViewer
			switch {
			case p.Relay:
				role = access.RoleRelay
			case st.publisher:
				role = access.RolePublisher
			}
			if err := s.auth.Connect(p.ID, authority.ClientInfo{Scope: p.Scope, Role: role}); err != nil {
				s.log.Warn("shared objects: connect failed", "client", p.Name, "err", err)
				return
			}
			st.soClient = true
			ss.Conn.SetReadTimeout(0) // a shared-object client may stay silent
		}
		s.auth.Handle(p.ID, msg)
	case rtmp.TypeCommandAMF0, rtmp.TypeCommandAMF3:
		cmd, err := rtmp.ParseCommand(m)
		if err != nil {
			return
		}
		s.command(ctx, p, cmd)
	}
}

func (s *Server) command(ctx context.Context, p *rpc.Peer, cmd *rtmp.Command) {
	switch cmd.Name {
	case "_result", "_error", "onStatus", rpc.MeshCall:
		return // answers to our calls; nothing waits for them
	}
	tx := cmd.TransactionID
	fail := func(desc string) {
		if tx != 0 {
			_ = p.Send(rpc.ErrorMessage(tx, rpc.CodeCallFailed, desc))
		}
	}
	if !rpc.ValidMethod(cmd.Name) {
		fail("bad method name")
		return
	}
	c := Call{App: rpc.AppOf(p.Scope), Scope: p.Scope, ClientID: p.Name, Method: cmd.Name, Args: cmd.Args}
	if p.Relay {
		if id := rpc.ClientOf(cmd); id != "" {
			c.ClientID = id
		}
	}
	max := s.cfg.CallsPerClient
	if p.Relay {
		max = s.cfg.RelayCallsPerLink
	}
	if !p.StartCall(max) {
		fail("too many calls in progress")
		return
	}
	go func() {
		defer p.EndCall()
		v, err := s.dispatch(ctx, c)
		if tx == 0 {
			return
		}
		if err == nil {
			var m rtmp.Message
			if m, err = rpc.ResultMessage(tx, v); err == nil {
				_ = p.Send(m)
				return
			}
			err = fmt.Errorf("result cannot be encoded: %w", err)
		}
		code, desc := rpc.CodeCallFailed, err.Error()
		var se *rpc.StatusError
		if errors.As(err, &se) {
			code, desc = se.Code, se.Description
		}
		_ = p.Send(rpc.ErrorMessage(tx, code, desc))
	}()
}

// dispatch runs the handler of a call: a Go handler, else the webhook of
// the call's application.
func (s *Server) dispatch(ctx context.Context, c Call) (any, error) {
	if h := s.handler(c.Method); h != nil {
		return h(ctx, c)
	}
	url := s.cfg.Webhooks[c.App]
	if url == "" {
		url = s.cfg.Webhooks["*"]
	}
	if url == "" {
		return nil, &rpc.StatusError{Code: rpc.CodeCallFailed, Description: "no handler for method " + c.Method}
	}
	return s.webhook(ctx, url, c)
}

func (s *Server) registerBuiltins() {
	s.Register("echo", func(_ context.Context, c Call) (any, error) {
		switch len(c.Args) {
		case 0:
			return nil, nil
		case 1:
			return c.Args[0], nil
		}
		return c.Args, nil
	})
	s.Register("serverTime", func(context.Context, Call) (any, error) {
		return float64(time.Now().UnixMilli()), nil
	})
	s.Register("clientId", func(_ context.Context, c Call) (any, error) { return c.ClientID, nil })
}
