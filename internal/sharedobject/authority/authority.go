// Package sharedobjects is the primary's authority over RTMP shared objects:
// it holds every object of every application scope, applies write rules,
// hooks and limits, versions each change batch, persists persistent objects
// through a Store, and tells the RTMP layer which message goes to which
// connection. It is pure: no sockets and no goroutines of its own (Run is an
// optional flush loop); the RTMP layer decodes each shared-object message
// with package sharedobject, calls Handle, and encodes and sends what Handle
// returns. Relays connect like any client with role RoleRelay and keep their
// own replicas (package sharedobject/replica).
package authority

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
)

// ClientInfo is what the authority knows of a connection.
type ClientInfo struct {
	Scope string      // application scope: app + "/" + instance, e.g. "live/room"
	Role  access.Role // viewer, publisher or relay
}

// Errors of the server-side API.
var (
	ErrNoObject = errors.New("authority: no such object in use")
	ErrClient   = errors.New("authority: client already connected or invalid")
)

// Authority owns the shared objects of the primary. All methods are safe for
// concurrent use; each call runs under one mutex.
type Authority struct {
	cfg     Config
	log     *slog.Logger
	flushMu sync.Mutex // serialises Flush

	mu      sync.Mutex
	clients map[sharedobject.ClientID]*client
	scopes  map[string]*scope
}

type client struct {
	id        sharedobject.ClientID
	info      ClientInfo
	objects   map[string]*object
	limiter   *rate.Limiter // nil: unlimited
	throttled bool          // a rate-limit status was sent and not yet followed by an accepted message
}

type scope struct {
	name    string
	objects map[string]*object
}

type object struct {
	scope      *scope
	name       string
	persistent bool
	state      *sharedobject.State
	members    sharedobject.Members
	dirty      bool // persistent content changed since the last save
}

// New returns an Authority.
func New(cfg Config) (*Authority, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Rules.Validate(); err != nil {
		return nil, err
	}
	return &Authority{
		cfg:     cfg,
		log:     cfg.Logger,
		clients: map[sharedobject.ClientID]*client{},
		scopes:  map[string]*scope{},
	}, nil
}

// Connect registers a connection before its first message.
func (a *Authority) Connect(id sharedobject.ClientID, info ClientInfo) error {
	if info.Role < access.RoleViewer || info.Role > access.RoleRelay {
		return fmt.Errorf("%w: role %v", ErrClient, info.Role)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.clients[id]; ok {
		return fmt.Errorf("%w: %d", ErrClient, id)
	}
	c := &client{id: id, info: info, objects: map[string]*object{}}
	c.limiter = a.cfg.Limits.Limiter(info.Role)
	a.clients[id] = c
	return nil
}

// Disconnect releases every object the connection uses and forgets it.
func (a *Authority) Disconnect(id sharedobject.ClientID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.clients[id]
	if c == nil {
		return
	}
	for name := range c.objects {
		a.release(c, name)
	}
	delete(a.clients, id)
}

// batch collects the effects of one message on one object.
type batch struct {
	name    string               // the message's object name
	obj     *object              // nil when the client does not use the object
	reply   []sharedobject.Event // to the requester
	others  []sharedobject.Event // to every other member
	sends   []sharedobject.Event // to every member, the requester included
	changed bool
}

// Handle applies one message from a connected client and returns the
// messages to send, in order. Messages from unknown clients are dropped.
func (a *Authority) Handle(id sharedobject.ClientID, m sharedobject.Message) []sharedobject.Outgoing {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.clients[id]
	if c == nil {
		return nil
	}
	if c.limiter != nil && !c.limiter.AllowN(a.cfg.Now(), 1) {
		if c.throttled {
			return nil // one status per burst of refused messages
		}
		c.throttled = true
		return a.emit(reply(id, m, sharedobject.StatusEvent(sharedobject.StatusLimitExceeded)))
	}
	c.throttled = false
	var out []sharedobject.Outgoing
	b := batch{name: m.Name, obj: c.objects[m.Name]}
	for i := range m.Events {
		e := &m.Events[i]
		switch e.Type {
		case sharedobject.EventUse:
			out = a.finish(c, &b, out)
			out = a.use(c, m, out)
			b = batch{name: m.Name, obj: c.objects[m.Name]}
		case sharedobject.EventRelease:
			out = a.finish(c, &b, out)
			a.release(c, m.Name)
			b = batch{name: m.Name}
		case sharedobject.EventRequestChange, sharedobject.EventRequestRemove:
			if b.obj == nil {
				b.reply = append(b.reply, sharedobject.StatusEvent(sharedobject.StatusNoWriteAccess))
				continue
			}
			a.request(c, &b, e)
		case sharedobject.EventSendMessage:
			if b.obj == nil {
				b.reply = append(b.reply, sharedobject.StatusEvent(sharedobject.StatusNoWriteAccess))
				continue
			}
			a.send(c, &b, e)
		default:
			a.log.Debug("shared object: server event from client ignored", "client", id, "object", m.Name, "event", e.Type)
		}
	}
	out = a.finish(c, &b, out)
	return a.emit(out)
}

// emit hands out to Config.Deliver (under the lock) or returns it.
func (a *Authority) emit(out []sharedobject.Outgoing) []sharedobject.Outgoing {
	if a.cfg.Deliver == nil || len(out) == 0 {
		return out
	}
	a.cfg.Deliver(out)
	return nil
}

func reply(id sharedobject.ClientID, m sharedobject.Message, evs ...sharedobject.Event) []sharedobject.Outgoing {
	return []sharedobject.Outgoing{{Client: id, Message: &sharedobject.Message{
		Name: m.Name, Version: m.Version, Persistent: m.Persistent, Events: evs}}}
}

// use subscribes c to the object m.Name and appends the full state for it.
func (a *Authority) use(c *client, m sharedobject.Message, out []sharedobject.Outgoing) []sharedobject.Outgoing {
	fail := func(code string) []sharedobject.Outgoing {
		return append(out, reply(c.id, m, sharedobject.StatusEvent(code))...)
	}
	l := a.cfg.Limits
	if !l.NameOK(m.Name) {
		return fail(sharedobject.StatusCreationFailed)
	}
	obj := c.objects[m.Name]
	if obj == nil {
		if !l.MayUseMore(c.info.Role, len(c.objects)) {
			return fail(sharedobject.StatusLimitExceeded)
		}
		sc := a.scopes[c.info.Scope]
		if sc == nil {
			sc = &scope{name: c.info.Scope, objects: map[string]*object{}}
			a.scopes[sc.name] = sc
		}
		obj = sc.objects[m.Name]
		if obj == nil {
			if len(sc.objects) >= l.ObjectsPerScope {
				a.dropIfEmpty(sc)
				return fail(sharedobject.StatusCreationFailed)
			}
			var err error
			if obj, err = a.create(sc, m.Name, m.Persistent); err != nil {
				a.log.Warn("shared object: load failed", "scope", sc.name, "object", m.Name, "err", err)
				a.dropIfEmpty(sc)
				return fail(sharedobject.StatusCreationFailed)
			}
		}
		if obj.persistent != m.Persistent {
			return fail(sharedobject.StatusBadPersistence)
		}
		obj.members.Add(c.id)
		c.objects[m.Name] = obj
	} else if obj.persistent != m.Persistent {
		return fail(sharedobject.StatusBadPersistence)
	}
	for _, msg := range obj.state.SyncMessages(obj.name, obj.persistent, true, l.SyncChunkBytes) {
		out = append(out, sharedobject.Outgoing{Client: c.id, Message: msg})
	}
	return out
}

// create makes a new object, loading a persistent one from the store.
func (a *Authority) create(sc *scope, name string, persistent bool) (*object, error) {
	obj := &object{scope: sc, name: name, persistent: persistent, state: sharedobject.NewState(1)}
	if persistent && a.cfg.Store != nil {
		snap, ok, err := a.cfg.Store.Load(sc.name, name)
		if err != nil {
			return nil, err
		}
		if ok {
			if err := obj.state.Load(snap.Version, snap.Slots); err != nil {
				return nil, err
			}
		}
	}
	sc.objects[name] = obj
	return obj, nil
}

// release unsubscribes c from an object; an unused transient object is
// dropped, an unused persistent one waits in memory for Flush to save it.
func (a *Authority) release(c *client, name string) {
	obj := c.objects[name]
	if obj == nil {
		return
	}
	delete(c.objects, name)
	obj.members.Remove(c.id)
	if obj.members.Len() == 0 && (!obj.persistent || a.cfg.Store == nil) {
		delete(obj.scope.objects, name)
		a.dropIfEmpty(obj.scope)
	}
}

func (a *Authority) dropIfEmpty(sc *scope) {
	if len(sc.objects) == 0 {
		delete(a.scopes, sc.name)
	}
}

// request applies one RequestChange or RequestRemove to the batch.
func (a *Authority) request(c *client, b *batch, e *sharedobject.Event) {
	obj, st := b.obj, b.obj.state
	remove := e.Type == sharedobject.EventRequestRemove || sharedobject.IsDelete(e.Value)
	size, code := a.check(c, obj, e.Key, e.Value, remove)
	if code != "" {
		// Reject: the requester gets the slot's current content, then the status.
		if cur, ok := st.Get(e.Key); ok {
			b.reply = append(b.reply, sharedobject.Event{Type: sharedobject.EventChange, Key: e.Key, Value: cur})
		} else {
			b.reply = append(b.reply, sharedobject.Event{Type: sharedobject.EventRemove, Key: e.Key})
		}
		b.reply = append(b.reply, sharedobject.StatusEvent(code))
		return
	}
	if remove {
		if st.Delete(e.Key) {
			b.others = append(b.others, sharedobject.Event{Type: sharedobject.EventRemove, Key: e.Key})
			b.changed = true
		}
		// A removal is confirmed by Success to a relay (so that its replica can
		// pair the answer with the request) and by Remove to other clients.
		if e.Type == sharedobject.EventRequestChange || c.info.Role == access.RoleRelay {
			b.reply = append(b.reply, sharedobject.Event{Type: sharedobject.EventSuccess, Key: e.Key})
		} else {
			b.reply = append(b.reply, sharedobject.Event{Type: sharedobject.EventRemove, Key: e.Key})
		}
		return
	}
	st.Set(e.Key, e.Value, size)
	b.changed = true
	b.reply = append(b.reply, sharedobject.Event{Type: sharedobject.EventSuccess, Key: e.Key})
	b.others = append(b.others, sharedobject.Event{Type: sharedobject.EventChange, Key: e.Key, Value: e.Value})
}

// check returns the encoded slot size, or the status code refusing the write.
func (a *Authority) check(c *client, obj *object, key string, v any, remove bool) (int, string) {
	l := a.cfg.Limits
	if !l.NameOK(key) {
		return 0, sharedobject.StatusLimitExceeded
	}
	if !a.cfg.Rules.Allowed(access.OpWrite, obj.scope.name, obj.name, key, c.info.Role) {
		return 0, sharedobject.StatusNoWriteAccess
	}
	size := 0
	if !remove {
		var err error
		if size, err = obj.state.Size(key, v); err != nil {
			return 0, sharedobject.StatusLimitExceeded
		}
		old := obj.state.SizeOf(key)
		_, exists := obj.state.Get(key)
		if size-2-len(key) > l.ValueBytes ||
			!exists && obj.state.Len() >= l.SlotsPerObject ||
			obj.state.Bytes()-old+size > l.ObjectBytes {
			return 0, sharedobject.StatusLimitExceeded
		}
	}
	if a.cfg.Hook != nil {
		r := Request{Client: c.id, Role: c.info.Role, Scope: obj.scope.name, Object: obj.name,
			Op: access.OpWrite, Key: key, Value: v, Remove: remove, Version: obj.state.Version}
		if remove {
			r.Value = nil
		}
		if err := a.cfg.Hook.AllowWrite(r); err != nil {
			a.log.Debug("shared object: hook refused write", "client", c.id, "object", obj.name, "key", key, "err", err)
			return 0, sharedobject.StatusNoWriteAccess
		}
	}
	return size, ""
}

// send queues a SendMessage for every member, the sender included.
func (a *Authority) send(c *client, b *batch, e *sharedobject.Event) {
	obj := b.obj
	ok := a.cfg.Rules.Allowed(access.OpSend, obj.scope.name, obj.name, e.Handler, c.info.Role)
	if ok && a.cfg.Hook != nil {
		err := a.cfg.Hook.AllowWrite(Request{Client: c.id, Role: c.info.Role, Scope: obj.scope.name,
			Object: obj.name, Op: access.OpSend, Key: e.Handler, Args: e.Args, Version: obj.state.Version})
		ok = err == nil
	}
	if !ok {
		b.reply = append(b.reply, sharedobject.StatusEvent(sharedobject.StatusNoWriteAccess))
		return
	}
	b.sends = append(b.sends, sharedobject.Event{Type: sharedobject.EventSendMessage, Handler: e.Handler, Args: e.Args})
}

// finish bumps the version once for the batch and appends its messages: the
// reply to the requester, the changes to the other members, then the sent
// messages to everyone. c is nil for server-side calls (no reply).
func (a *Authority) finish(c *client, b *batch, out []sharedobject.Outgoing) []sharedobject.Outgoing {
	obj := b.obj
	if obj == nil {
		if len(b.reply) > 0 && c != nil {
			out = append(out, sharedobject.Outgoing{Client: c.id, Message: &sharedobject.Message{Name: b.name, Events: b.reply}})
		}
		*b = batch{name: b.name}
		return out
	}
	if b.changed {
		obj.state.Version++
		obj.dirty = obj.persistent
	}
	msg := func(evs []sharedobject.Event) *sharedobject.Message {
		return &sharedobject.Message{Name: obj.name, Version: obj.state.Version, Persistent: obj.persistent, Events: evs}
	}
	if len(b.reply) > 0 && c != nil {
		out = append(out, sharedobject.Outgoing{Client: c.id, Message: msg(b.reply)})
	}
	if len(b.others) > 0 {
		out = fanout(out, &obj.members, c, msg(b.others))
	}
	if len(b.sends) > 0 {
		out = fanout(out, &obj.members, nil, msg(b.sends))
	}
	*b = batch{name: b.name, obj: obj}
	return out
}

// fanout appends m for every member except skip (nil = nobody skipped).
func fanout(out []sharedobject.Outgoing, ms *sharedobject.Members, skip *client, m *sharedobject.Message) []sharedobject.Outgoing {
	out = growOut(out, ms.Len())
	for _, id := range ms.IDs {
		if skip == nil || id != skip.id {
			out = append(out, sharedobject.Outgoing{Client: id, Message: m})
		}
	}
	return out
}

func growOut(out []sharedobject.Outgoing, n int) []sharedobject.Outgoing {
	if cap(out)-len(out) < n {
		grown := make([]sharedobject.Outgoing, len(out), len(out)+n)
		copy(grown, out)
		out = grown
	}
	return out
}

// Set writes a slot from server-side code, bypassing rules and hooks but not
// the size limits; a nil or Undefined value removes it. The object must be
// in use. Every member gets the Change (or Remove).
func (a *Authority) Set(scopeName, name, key string, v any) ([]sharedobject.Outgoing, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	obj := a.lookup(scopeName, name)
	if obj == nil {
		return nil, ErrNoObject
	}
	b := batch{name: name, obj: obj}
	if sharedobject.IsDelete(v) {
		if obj.state.Delete(key) {
			b.others = append(b.others, sharedobject.Event{Type: sharedobject.EventRemove, Key: key})
			b.changed = true
		}
	} else {
		l := a.cfg.Limits
		size, err := obj.state.Size(key, v)
		if err != nil {
			return nil, err
		}
		_, exists := obj.state.Get(key)
		if key == "" || size-2-len(key) > l.ValueBytes || !exists && obj.state.Len() >= l.SlotsPerObject ||
			obj.state.Bytes()-obj.state.SizeOf(key)+size > l.ObjectBytes {
			return nil, fmt.Errorf("authority: slot %q exceeds the limits", key)
		}
		obj.state.Set(key, v, size)
		b.others = append(b.others, sharedobject.Event{Type: sharedobject.EventChange, Key: key, Value: v})
		b.changed = true
	}
	return a.emit(a.finish(nil, &b, nil)), nil
}

// Send delivers a SendMessage from server-side code to every member.
func (a *Authority) Send(scopeName, name, handler string, args ...any) ([]sharedobject.Outgoing, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	obj := a.lookup(scopeName, name)
	if obj == nil {
		return nil, ErrNoObject
	}
	b := batch{name: name, obj: obj, sends: []sharedobject.Event{{Type: sharedobject.EventSendMessage, Handler: handler, Args: args}}}
	return a.emit(a.finish(nil, &b, nil)), nil
}

// Get returns a slot's value and the object's version, for server-side code.
func (a *Authority) Get(scopeName, name, key string) (v any, version uint32, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	obj := a.lookup(scopeName, name)
	if obj == nil {
		return nil, 0, false
	}
	v, ok = obj.state.Get(key)
	return v, obj.state.Version, ok
}

// Snapshot returns a copy of an object's slots and its version, if the
// object is in memory.
func (a *Authority) Snapshot(scopeName, name string) (Snapshot, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	obj := a.lookup(scopeName, name)
	if obj == nil {
		return Snapshot{}, false
	}
	return Snapshot{Version: obj.state.Version, Slots: obj.state.Snapshot()}, true
}

func (a *Authority) lookup(scopeName, name string) *object {
	if sc := a.scopes[scopeName]; sc != nil {
		return sc.objects[name]
	}
	return nil
}

// Flush saves every changed persistent object to the Store and drops
// persistent objects that nobody uses any more once they are saved. Store
// calls run without the authority's lock.
func (a *Authority) Flush() error {
	if a.cfg.Store == nil {
		return nil
	}
	a.flushMu.Lock()
	defer a.flushMu.Unlock()
	type job struct {
		obj  *object
		snap Snapshot
	}
	var jobs []job
	a.mu.Lock()
	for _, sc := range a.scopes {
		for _, obj := range sc.objects {
			if obj.persistent && obj.dirty {
				jobs = append(jobs, job{obj, Snapshot{Version: obj.state.Version, Slots: obj.state.Snapshot()}})
				obj.dirty = false
			}
		}
	}
	a.mu.Unlock()
	var errs []error
	failed := map[*object]bool{}
	for _, j := range jobs {
		if err := a.cfg.Store.Save(j.obj.scope.name, j.obj.name, j.snap); err != nil {
			errs = append(errs, err)
			failed[j.obj] = true
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for obj := range failed {
		obj.dirty = true
	}
	for _, sc := range a.scopes {
		for name, obj := range sc.objects {
			if obj.members.Len() == 0 && !obj.dirty {
				delete(sc.objects, name)
			}
		}
		a.dropIfEmpty(sc)
	}
	return errors.Join(errs...)
}

// Run calls Flush every interval until ctx ends, then once more.
func (a *Authority) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := a.Flush(); err != nil {
				a.log.Error("shared objects: final flush failed", "err", err)
			}
			return
		case <-t.C:
			if err := a.Flush(); err != nil {
				a.log.Warn("shared objects: flush failed", "err", err)
			}
		}
	}
}
