// Package replica is the relay side of RTMP shared objects: a Proxy keeps a
// local replica of each shared object its local clients use, holds one
// upstream use per object (ref-counted over local clients), forwards local
// writes and messages upstream, applies the authoritative changes that come
// back in order and fans them out to local clients, answering a local
// requester with Success only when upstream has confirmed its change.
//
// A Proxy serves one application scope over one upstream connection (to the
// primary or to another relay, which sees this relay as one client of role
// relay). It is pure: no sockets, no goroutines.
//
// Answer pairing: upstream answers each forwarded RequestChange and
// RequestRemove, in request order, with exactly one of: Success (accepted; a
// relay's removals are confirmed with Success too, where a viewer gets
// Remove), or the slot's current content (Change or Remove) immediately
// followed by a Status event (refused). The proxy keeps a FIFO of pending
// requests per slot and matches answers to them; broadcast Change and
// Remove events never touch it.
package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"golang.org/x/time/rate"

	so "github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
)

// ErrClient is returned by Connect for a duplicate or invalid client.
var ErrClient = errors.New("replica: client already connected or invalid")

// Proxy is the replica of one scope's shared objects on a relay. All methods
// are safe for concurrent use.
type Proxy struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	clients map[so.ClientID]*client
	objects map[string]*object
}

type client struct {
	id        so.ClientID
	role      access.Role
	objects   map[string]*object
	limiter   *rate.Limiter
	throttled bool
}

type object struct {
	name       string
	persistent bool
	state      *so.State
	synced     bool       // upstream's UseSuccess arrived since the last use was sent
	members    so.Members // local clients that have the state
	waiting    so.Members // local clients waiting for upstream's UseSuccess
	pending    map[string][]pendingReq
	npending   int
}

type pendingReq struct {
	client  so.ClientID
	remove  bool // RequestRemove (else RequestChange)
	value   any
	refused string // refused here with this status; queued behind earlier requests for the slot
}

// New returns a Proxy.
func New(cfg Config) (*Proxy, error) {
	cfg.Limits = cfg.Limits.WithDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = timeNow
	}
	if err := cfg.Rules.Validate(); err != nil {
		return nil, err
	}
	return &Proxy{cfg: cfg, log: cfg.Logger, clients: map[so.ClientID]*client{}, objects: map[string]*object{}}, nil
}

// Connect registers a local connection (a viewer, a publisher or a
// downstream relay).
func (p *Proxy) Connect(id so.ClientID, role access.Role) error {
	if role < access.RoleViewer || role > access.RoleRelay {
		return fmt.Errorf("%w: role %v", ErrClient, role)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.clients[id]; ok {
		return fmt.Errorf("%w: %d", ErrClient, id)
	}
	c := &client{id: id, role: role, objects: map[string]*object{}}
	c.limiter = p.cfg.Limits.Limiter(role)
	p.clients[id] = c
	return nil
}

// Disconnect releases every object of a local connection and returns the
// Release messages for upstream (objects nobody uses any more).
func (p *Proxy) Disconnect(id so.ClientID) []so.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.clients[id]
	if c == nil {
		return nil
	}
	var up []so.Message
	for _, name := range sortedNames(c.objects) {
		up = p.release(c, name, up)
	}
	delete(p.clients, id)
	up, _ = p.emit(up, nil)
	return up
}

func sortedNames(m map[string]*object) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// emit hands messages to the configured callbacks, or returns them.
func (p *Proxy) emit(up []so.Message, out []so.Outgoing) ([]so.Message, []so.Outgoing) {
	if p.cfg.Upstream != nil && len(up) > 0 {
		p.cfg.Upstream(up)
		up = nil
	}
	if p.cfg.Deliver != nil && len(out) > 0 {
		p.cfg.Deliver(out)
		out = nil
	}
	return up, out
}

func reply(id so.ClientID, name string, version uint32, persistent bool, evs ...so.Event) so.Outgoing {
	return so.Outgoing{Client: id, Message: &so.Message{Name: name, Version: version, Persistent: persistent, Events: evs}}
}

// refusal is the answer to a refused request: the slot's current content,
// then the status.
func refusal(st *so.State, key, code string) []so.Event {
	evs := make([]so.Event, 0, 2)
	if v, ok := st.Get(key); ok {
		evs = append(evs, so.Event{Type: so.EventChange, Key: key, Value: v})
	} else {
		evs = append(evs, so.Event{Type: so.EventRemove, Key: key})
	}
	return append(evs, so.StatusEvent(code))
}

// FromClient handles one message from a local client. It returns the
// messages to send upstream and to local clients, in order.
func (p *Proxy) FromClient(id so.ClientID, m so.Message) (toUpstream []so.Message, toClients []so.Outgoing) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.clients[id]
	if c == nil {
		return nil, nil
	}
	var up []so.Message
	var out []so.Outgoing
	if c.limiter != nil && !c.limiter.AllowN(p.cfg.Now(), 1) {
		if !c.throttled {
			c.throttled = true
			out = append(out, reply(id, m.Name, m.Version, m.Persistent, so.StatusEvent(so.StatusLimitExceeded)))
		}
		return p.emit(nil, out)
	}
	c.throttled = false
	var fwd []so.Event
	var local []so.Event // refusals answered here
	flush := func() {
		obj := c.objects[m.Name]
		if obj != nil && len(fwd) > 0 {
			up = append(up, so.Message{Name: m.Name, Version: obj.state.Version, Persistent: obj.persistent, Events: fwd})
		}
		if len(local) > 0 {
			var v uint32
			persistent := m.Persistent
			if obj != nil {
				v, persistent = obj.state.Version, obj.persistent
			}
			out = append(out, reply(id, m.Name, v, persistent, local...))
		}
		fwd, local = nil, nil
	}
	for i := range m.Events {
		e := &m.Events[i]
		switch e.Type {
		case so.EventUse:
			flush()
			up, out = p.use(c, m, up, out)
		case so.EventRelease:
			flush()
			up = p.release(c, m.Name, up)
		case so.EventRequestChange, so.EventRequestRemove:
			obj := c.objects[m.Name]
			if obj == nil || !obj.members.Has(id) {
				local = append(local, so.StatusEvent(so.StatusNoWriteAccess))
				continue
			}
			if code := p.check(c, obj, e); code != "" {
				switch {
				case len(obj.pending[e.Key]) == 0:
					local = append(local, refusal(obj.state, e.Key, code)...)
				case obj.npending >= 4*p.cfg.Limits.PendingPerObject:
					p.log.Warn("shared object: request dropped, too many pending", "client", id, "object", obj.name, "key", e.Key)
				default:
					// Answer in order: after the pending requests for this slot.
					obj.pending[e.Key] = append(obj.pending[e.Key], pendingReq{client: id, refused: code})
					obj.npending++
				}
				continue
			}
			remove := e.Type == so.EventRequestRemove
			obj.pending[e.Key] = append(obj.pending[e.Key], pendingReq{client: id, remove: remove, value: e.Value})
			obj.npending++
			fwd = append(fwd, *e)
		case so.EventSendMessage:
			obj := c.objects[m.Name]
			switch {
			case obj == nil || !obj.members.Has(id):
				local = append(local, so.StatusEvent(so.StatusNoWriteAccess))
			case !obj.synced:
				local = append(local, so.StatusEvent(so.StatusUpstreamFailure))
			case !p.cfg.Rules.Allowed(access.OpSend, p.cfg.Scope, obj.name, e.Handler, c.role):
				local = append(local, so.StatusEvent(so.StatusNoWriteAccess))
			default:
				fwd = append(fwd, so.Event{Type: so.EventSendMessage, Handler: e.Handler, Args: e.Args})
			}
		default:
			p.log.Debug("shared object: server event from local client ignored", "client", id, "object", m.Name, "event", e.Type)
		}
	}
	flush()
	return p.emit(up, out)
}

// check returns the status code refusing a local write, or "".
func (p *Proxy) check(c *client, obj *object, e *so.Event) string {
	l := p.cfg.Limits
	switch {
	case !l.NameOK(e.Key):
		return so.StatusLimitExceeded
	case !obj.synced:
		return so.StatusUpstreamFailure
	case !p.cfg.Rules.Allowed(access.OpWrite, p.cfg.Scope, obj.name, e.Key, c.role):
		return so.StatusNoWriteAccess
	case obj.npending >= l.PendingPerObject:
		return so.StatusLimitExceeded
	}
	return ""
}

// use subscribes a local client: from the replica when it is in sync,
// otherwise after upstream's UseSuccess (sending the upstream use if this is
// the object's first local client).
func (p *Proxy) use(c *client, m so.Message, up []so.Message, out []so.Outgoing) ([]so.Message, []so.Outgoing) {
	l := p.cfg.Limits
	fail := func(code string) []so.Outgoing {
		return append(out, reply(c.id, m.Name, m.Version, m.Persistent, so.StatusEvent(code)))
	}
	if !l.NameOK(m.Name) {
		return up, fail(so.StatusCreationFailed)
	}
	obj := c.objects[m.Name]
	if obj == nil && !l.MayUseMore(c.role, len(c.objects)) {
		return up, fail(so.StatusLimitExceeded)
	}
	if obj == nil {
		obj = p.objects[m.Name]
	}
	if obj == nil {
		obj = &object{name: m.Name, persistent: m.Persistent, state: so.NewState(0), pending: map[string][]pendingReq{}}
		p.objects[m.Name] = obj
		up = append(up, so.Message{Name: m.Name, Persistent: m.Persistent, Events: []so.Event{{Type: so.EventUse}}})
	}
	if obj.persistent != m.Persistent {
		return up, fail(so.StatusBadPersistence)
	}
	c.objects[m.Name] = obj
	if !obj.synced {
		if !obj.members.Has(c.id) {
			obj.waiting.Add(c.id)
		}
		return up, out
	}
	obj.members.Add(c.id)
	for _, msg := range obj.state.SyncMessages(obj.name, obj.persistent, true, l.SyncChunkBytes) {
		out = append(out, so.Outgoing{Client: c.id, Message: msg})
	}
	return up, out
}

// release unsubscribes a local client; the last one releases upstream.
func (p *Proxy) release(c *client, name string, up []so.Message) []so.Message {
	obj := c.objects[name]
	if obj == nil {
		return up
	}
	delete(c.objects, name)
	obj.members.Remove(c.id)
	obj.waiting.Remove(c.id)
	if obj.members.Len() == 0 && obj.waiting.Len() == 0 {
		delete(p.objects, name)
		up = append(up, so.Message{Name: name, Version: obj.state.Version, Persistent: obj.persistent,
			Events: []so.Event{{Type: so.EventRelease}}})
	}
	return up
}

// UpstreamLost is called as soon as the upstream connection is gone (its
// reader stopped). Every object goes back to waiting for upstream's state;
// every pending request is answered, in order, with its slot's current
// content and SharedObject.UpstreamFailure (it may or may not have been
// applied: the re-sync tells); until the re-sync, local writes are refused
// the same way, so nothing but uses is forwarded meanwhile. It returns the
// messages for local clients. Messages produced for the old connection must
// be dropped.
func (p *Proxy) UpstreamLost() []so.Outgoing {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, out := p.emit(nil, p.lost())
	return out
}

func (p *Proxy) lost() []so.Outgoing {
	var out []so.Outgoing
	for _, name := range sortedNames(p.objects) {
		obj := p.objects[name]
		obj.synced = false
		var f fan
		keys := make([]string, 0, len(obj.pending))
		for k := range obj.pending {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			for _, r := range obj.pending[k] {
				code := r.refused
				if code == "" {
					code = so.StatusUpstreamFailure
				}
				f.only(r.client, refusal(obj.state, k, code)...)
			}
		}
		clear(obj.pending)
		obj.npending = 0
		out = f.build(obj, obj.state.Version, out)
	}
	return out
}

// UpstreamReset is called when a new upstream connection is up: it returns
// one Use per object, to send on the new connection. When upstream answers,
// every local client gets Clear and the full state; clients that were
// waiting also get UseSuccess. Call UpstreamLost first; if it was not
// called, UpstreamReset does its work and hands the refusals to
// Config.Deliver (they are dropped when Deliver is not set).
func (p *Proxy) UpstreamReset() []so.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	refusals := p.lost()
	var up []so.Message
	for _, name := range sortedNames(p.objects) {
		obj := p.objects[name]
		up = append(up, so.Message{Name: name, Persistent: obj.persistent, Events: []so.Event{{Type: so.EventUse}}})
	}
	up, _ = p.emit(up, refusals)
	return up
}

// Stats describes a proxy's objects, for monitoring and tests.
type Stats struct {
	Objects, Members, Waiting, Pending int
}

// Stats returns the proxy's current counts.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	var s Stats
	for _, o := range p.objects {
		s.Objects++
		s.Members += o.members.Len()
		s.Waiting += o.waiting.Len()
		s.Pending += o.npending
	}
	return s
}

// Slots returns a copy of an object's replica and its version.
func (p *Proxy) Slots(name string) (map[string]any, uint32, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	obj := p.objects[name]
	if obj == nil || !obj.synced {
		return nil, 0, false
	}
	return obj.state.Snapshot(), obj.state.Version, true
}
