package edge

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relaymesh/relaymesh/internal/rpc"
	"github.com/relaymesh/relaymesh/internal/rtmp"
	so "github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/replica"
)

// link is one scope's upstream connection and replica proxy.
type link struct {
	r      *Relay
	scope  string
	log    *slog.Logger
	proxy  *replica.Proxy
	conn   atomic.Pointer[rtmp.ClientConn]
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	ready  chan struct{} // closed while connected; replaced when the link is lost
	txid   float64
	calls  map[float64]pendingCall
	linger *time.Timer
}

// pendingCall is a forwarded call waiting for upstream's answer.
type pendingCall struct {
	peer *rpc.Peer
	tx   float64 // the client's transaction id
}

func newLink(r *Relay, scope string) (*link, error) {
	l := &link{r: r, scope: scope, log: r.log.With("scope", scope), calls: map[float64]pendingCall{},
		done: make(chan struct{}), ready: make(chan struct{})}
	var err error
	l.proxy, err = replica.New(replica.Config{
		Scope: scope, Rules: r.cfg.Rules, Limits: r.cfg.Limits, Logger: l.log,
		Deliver:  r.peers.Deliver,
		Upstream: l.up,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(r.ctx)
	l.cancel = cancel
	go l.run(ctx)
	return l, nil
}

// up sends shared-object messages upstream (under the proxy's lock). With
// no connection they are dropped: the proxy re-uses every object on reset.
func (l *link) up(ms []so.Message) {
	cc := l.conn.Load()
	if cc == nil {
		return
	}
	for _, m := range ms {
		b, err := m.AppendEncode(nil, false)
		if err != nil {
			l.log.Error("shared object: cannot encode message for upstream", "object", m.Name, "err", err)
			continue
		}
		_ = cc.Send(rtmp.Message{Type: rtmp.TypeSharedObjectAMF0, Payload: b})
	}
}

// busy cancels a pending linger.
func (l *link) busy() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.linger != nil {
		l.linger.Stop()
		l.linger = nil
	}
}

// idle starts the linger after which an unused link closes.
func (l *link) idle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.linger != nil {
		l.linger.Stop()
	}
	l.linger = time.AfterFunc(l.r.cfg.Linger, func() {
		if l.r.drop(l) {
			l.log.Debug("no clients left, closing scope link")
			l.cancel()
		}
	})
}

func (l *link) run(ctx context.Context) {
	defer close(l.done)
	backoff := l.r.cfg.BackoffMin
	for ctx.Err() == nil {
		connected := l.once(ctx)
		if ctx.Err() != nil {
			break
		}
		if connected {
			backoff = l.r.cfg.BackoffMin
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, l.r.cfg.BackoffMax)
	}
	l.proxy.UpstreamLost()
	l.failCalls("relay closing")
}

// once connects, serves the connection until it ends, and reports whether
// it connected.
func (l *link) once(ctx context.Context) bool {
	cfg := l.r.cfg.Conn
	cfg.ConnectProps = map[string]any{rtmp.RelayMarker: l.r.cfg.RelayID, rpc.PropScope: true}
	host, tls := l.r.upstreamHost()
	u := rtmp.URL{Host: host, TLS: tls, App: l.scope}
	cc, err := rtmp.Dial(ctx, u, cfg, l.log)
	if err != nil {
		l.log.Info("scope link: upstream unreachable", "upstream", u.Host, "err", err)
		return false
	}
	stop := context.AfterFunc(ctx, func() { cc.Close(context.Canceled) })
	defer stop()
	cc.SetReadTimeout(0)
	l.conn.Store(cc)
	l.proxy.UpstreamReset() // uses every object again; answers re-sync local clients
	l.mu.Lock()
	close(l.ready)
	l.mu.Unlock()
	l.log.Debug("scope link connected", "upstream", u.Host)
	err = l.read(cc)
	l.mu.Lock()
	l.ready = make(chan struct{})
	l.mu.Unlock()
	l.conn.Store(nil)
	cc.Close(err)
	l.proxy.UpstreamLost()
	l.failCalls("upstream connection lost")
	if ctx.Err() == nil {
		l.log.Info("scope link lost, reconnecting", "err", err)
	}
	return true
}

func (l *link) read(cc *rtmp.ClientConn) error {
	for {
		m, err := cc.ReadMessage()
		if err != nil {
			return err
		}
		switch m.Type {
		case rtmp.TypeSharedObjectAMF0, rtmp.TypeSharedObjectAMF3:
			msg, err := so.Decode(m.Payload, m.Type == rtmp.TypeSharedObjectAMF3)
			if err != nil {
				return err // upstream is trusted; a bad message means a broken link
			}
			l.proxy.FromUpstream(msg)
		case rtmp.TypeCommandAMF0, rtmp.TypeCommandAMF3:
			cmd, err := rtmp.ParseCommand(m)
			if err != nil {
				return err
			}
			switch cmd.Name {
			case "_result", "_error":
				l.answer(cmd)
			case rpc.MeshCall:
				t, err := rpc.ParseMeshCall(cmd)
				if err != nil {
					l.log.Warn("bad mesh call from upstream", "err", err)
					continue
				}
				l.deliver(t, m)
			}
		}
	}
}

// forward sends a local client's call upstream with a transaction id of
// the link, remembering whom to answer.
func (l *link) forward(ctx context.Context, p *rpc.Peer, cmd *rtmp.Command) {
	client := p.Name
	if p.Relay {
		if id := rpc.ClientOf(cmd); id != "" {
			client = id
		}
	}
	fail := func(desc string) {
		if cmd.TransactionID != 0 {
			_ = p.Send(rpc.ErrorMessage(cmd.TransactionID, rpc.CodeCallFailed, desc))
		}
	}
	cc := l.connected(ctx)
	if cc == nil {
		fail("upstream not connected")
		return
	}
	obj := map[string]any{rpc.PropClient: client}
	if cmd.TransactionID == 0 {
		if m, err := rtmp.CommandMessage(0, append([]any{cmd.Name, 0.0, obj}, cmd.Args...)...); err == nil {
			_ = cc.Send(m)
		}
		return
	}
	max := l.r.cfg.CallsPerClient
	if p.Relay {
		max = l.r.cfg.RelayCallsPerLink
	}
	if !p.StartCall(max) {
		fail("too many calls in progress")
		return
	}
	l.mu.Lock()
	if len(l.calls) >= l.r.cfg.PendingCalls {
		l.mu.Unlock()
		p.EndCall()
		fail("relay busy: too many calls in progress")
		return
	}
	l.txid++
	if l.txid > 1<<52 {
		l.txid = 2
	}
	tx := l.txid
	l.calls[tx] = pendingCall{peer: p, tx: cmd.TransactionID}
	l.mu.Unlock()
	m, err := rtmp.CommandMessage(0, append([]any{cmd.Name, tx, obj}, cmd.Args...)...)
	if err == nil {
		err = cc.Send(m)
	}
	if err != nil {
		l.mu.Lock()
		_, mine := l.calls[tx]
		delete(l.calls, tx)
		l.mu.Unlock()
		if mine {
			p.EndCall()
			fail("cannot forward the call: " + err.Error())
		}
	}
}

// connected returns the upstream connection, waiting up to ConnectWait for
// a link that is (re)connecting.
func (l *link) connected(ctx context.Context) *rtmp.ClientConn {
	if cc := l.conn.Load(); cc != nil {
		return cc
	}
	l.mu.Lock()
	ready := l.ready
	l.mu.Unlock()
	t := time.NewTimer(l.r.cfg.ConnectWait)
	defer t.Stop()
	select {
	case <-ready:
	case <-t.C:
	case <-ctx.Done():
	}
	return l.conn.Load()
}

// answer routes upstream's _result or _error to the client that called.
func (l *link) answer(cmd *rtmp.Command) {
	l.mu.Lock()
	pc, ok := l.calls[cmd.TransactionID]
	delete(l.calls, cmd.TransactionID)
	l.mu.Unlock()
	if !ok {
		return
	}
	pc.peer.EndCall()
	var obj any
	if cmd.Object != nil {
		obj = cmd.Object
	}
	m, err := rtmp.CommandMessage(0, append([]any{cmd.Name, pc.tx, obj}, cmd.Args...)...)
	if err != nil {
		m = rpc.ErrorMessage(pc.tx, rpc.CodeCallFailed, "answer cannot be encoded")
	}
	_ = pc.peer.Send(m)
}

// failCalls answers every pending call with _error.
func (l *link) failCalls(desc string) {
	l.mu.Lock()
	calls := l.calls
	l.calls = map[float64]pendingCall{}
	l.mu.Unlock()
	for _, pc := range calls {
		pc.peer.EndCall()
		_ = pc.peer.Send(rpc.ErrorMessage(pc.tx, rpc.CodeCallFailed, desc))
	}
}

// deliver hands a server-to-client call to the local clients it is for and
// passes it on to downstream relays' links.
func (l *link) deliver(t rpc.Target, raw rtmp.Message) {
	mine := t.To == "" || strings.HasPrefix(t.To, l.r.cfg.RelayID+":")
	down := t.To == "" || !mine
	call, err := rpc.CallMessage(t.Method, t.Args)
	if err != nil {
		l.log.Warn("mesh call cannot be encoded", "method", t.Method, "err", err)
		return
	}
	for _, p := range l.r.peers.Scope(l.scope) {
		switch {
		case p.Link:
			if down {
				_ = p.Send(raw)
			}
		case !p.Relay:
			if mine && (t.To == "" || t.To == p.Name) {
				_ = p.Send(call)
			}
		}
	}
}
