package replica

import (
	"time"

	so "github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
)

var timeNow = time.Now

// fan builds the local messages for one upstream message: events for every
// member go into one shared message; a client that also gets personal events
// (a requester's Success, a newcomer's UseSuccess) gets its own copy.
type fan struct {
	common  []so.Event
	special map[so.ClientID][]so.Event
	order   []so.ClientID
}

func (f *fan) ensure(id so.ClientID) {
	if _, ok := f.special[id]; ok {
		return
	}
	if f.special == nil {
		f.special = map[so.ClientID][]so.Event{}
	}
	f.special[id] = append([]so.Event(nil), f.common...)
	f.order = append(f.order, id)
}

// all: every member.
func (f *fan) all(e so.Event) {
	f.common = append(f.common, e)
	for id, evs := range f.special {
		f.special[id] = append(evs, e)
	}
}

// only: one client.
func (f *fan) only(id so.ClientID, evs ...so.Event) {
	f.ensure(id)
	f.special[id] = append(f.special[id], evs...)
}

// others: every member but one.
func (f *fan) others(skip so.ClientID, e so.Event) {
	f.ensure(skip)
	f.common = append(f.common, e)
	for id, evs := range f.special {
		if id != skip {
			f.special[id] = append(evs, e)
		}
	}
}

func (f *fan) build(obj *object, version uint32, out []so.Outgoing) []so.Outgoing {
	msg := func(evs []so.Event) *so.Message {
		return &so.Message{Name: obj.name, Version: version, Persistent: obj.persistent, Events: evs}
	}
	if len(f.common) > 0 {
		shared := msg(f.common)
		if n := obj.members.Len(); cap(out)-len(out) < n {
			out = append(make([]so.Outgoing, 0, len(out)+n), out...)
		}
		for _, id := range obj.members.IDs {
			if _, ok := f.special[id]; !ok {
				out = append(out, so.Outgoing{Client: id, Message: shared})
			}
		}
	}
	for _, id := range f.order {
		if evs := f.special[id]; len(evs) > 0 && obj.members.Has(id) {
			out = append(out, so.Outgoing{Client: id, Message: msg(evs)})
		}
	}
	return out
}

// drainRefused answers the requests refused here that were queued behind the
// request just answered.
func (obj *object) drainRefused(key string, f *fan) {
	for {
		q := obj.pending[key]
		if len(q) == 0 || q[0].refused == "" {
			return
		}
		r, _ := obj.popPending(key)
		f.only(r.client, refusal(obj.state, key, r.refused)...)
	}
}

// popPending removes and returns the oldest pending request for key.
func (obj *object) popPending(key string) (pendingReq, bool) {
	q := obj.pending[key]
	if len(q) == 0 {
		return pendingReq{}, false
	}
	r := q[0]
	if len(q) == 1 {
		delete(obj.pending, key)
	} else {
		obj.pending[key] = q[1:]
	}
	obj.npending--
	return r, true
}

func (p *Proxy) isRelay(id so.ClientID) bool {
	c := p.clients[id]
	return c != nil && c.role == access.RoleRelay
}

// set stores an authoritative value in the replica.
func (p *Proxy) set(obj *object, key string, v any) {
	size, err := obj.state.Size(key, v)
	if err != nil { // cannot happen for decoded values; keep the replica whole anyway
		p.log.Warn("shared object: unencodable value from upstream", "object", obj.name, "key", key, "err", err)
	}
	obj.state.Set(key, v, size)
}

// FromUpstream applies one message from upstream to the replica and returns
// the messages for local clients.
func (p *Proxy) FromUpstream(m so.Message) []so.Outgoing {
	p.mu.Lock()
	defer p.mu.Unlock()
	obj := p.objects[m.Name]
	if obj == nil {
		return nil // released meanwhile
	}
	resync := len(m.Events) > 0 && m.Events[0].Type == so.EventUseSuccess
	if !obj.synced && !resync {
		return p.upstreamStatus(obj, m) // only a refused use can come before UseSuccess
	}
	if obj.synced && !resync && m.Version < obj.state.Version {
		p.log.Warn("shared object: stale message from upstream dropped", "object", obj.name,
			"version", m.Version, "replica", obj.state.Version)
		return nil
	}
	var f fan
	evs := m.Events
	for i := 0; i < len(evs); i++ {
		e := evs[i]
		refused := i+1 < len(evs) && evs[i+1].Type == so.EventStatus &&
			(e.Type == so.EventChange || e.Type == so.EventRemove)
		switch e.Type {
		case so.EventUseSuccess:
			obj.synced = true
			obj.persistent = m.Persistent
			obj.state.Version = m.Version
			for _, id := range obj.waiting.IDs {
				obj.members.Add(id)
				f.only(id, e)
			}
			obj.waiting = so.Members{}
		case so.EventClear:
			obj.state.Clear()
			f.all(e)
		case so.EventChange, so.EventRemove:
			if e.Type == so.EventChange {
				p.set(obj, e.Key, e.Value)
			} else {
				obj.state.Delete(e.Key)
			}
			if refused {
				i++ // the status belongs to the refusal
				if r, ok := obj.popPending(e.Key); ok {
					f.only(r.client, e, evs[i])
					obj.drainRefused(e.Key, &f)
				} else {
					f.all(e) // nobody to tell; keep every local copy equal to the replica
				}
				continue
			}
			f.all(e) // a broadcast: pending requests are answered by Success or a refusal only
		case so.EventSuccess:
			r, ok := obj.popPending(e.Key)
			if !ok {
				p.log.Warn("shared object: success from upstream without a pending request", "object", obj.name, "key", e.Key)
				continue
			}
			if r.remove || so.IsDelete(r.value) {
				obj.state.Delete(e.Key)
				if r.remove && !p.isRelay(r.client) {
					f.only(r.client, so.Event{Type: so.EventRemove, Key: e.Key})
				} else {
					f.only(r.client, e)
				}
				f.others(r.client, so.Event{Type: so.EventRemove, Key: e.Key})
			} else {
				p.set(obj, e.Key, r.value)
				f.only(r.client, e)
				f.others(r.client, so.Event{Type: so.EventChange, Key: e.Key, Value: r.value})
			}
			obj.drainRefused(e.Key, &f)
		case so.EventSendMessage:
			f.all(e)
		case so.EventStatus:
			// Not paired with a slot: a refused send or a limit hit by this
			// relay's own connection. No local client can be singled out.
			p.log.Debug("shared object: unpaired status from upstream", "object", obj.name, "code", e.Code)
		default:
			p.log.Debug("shared object: client event from upstream ignored", "object", obj.name, "event", e.Type)
		}
	}
	if m.Version > obj.state.Version {
		obj.state.Version = m.Version
	}
	_, out := p.emit(nil, f.build(obj, m.Version, nil))
	return out
}

// upstreamStatus handles a message for an object still waiting for
// upstream's UseSuccess: a Status there means upstream refused the use, which
// every waiting client learns; the object is dropped.
func (p *Proxy) upstreamStatus(obj *object, m so.Message) []so.Outgoing {
	var status []so.Event
	for _, e := range m.Events {
		if e.Type == so.EventStatus {
			status = append(status, e)
		}
	}
	if len(status) == 0 {
		return nil
	}
	msg := &so.Message{Name: obj.name, Version: m.Version, Persistent: m.Persistent, Events: status}
	var out []so.Outgoing
	for _, id := range append(obj.waiting.IDs, obj.members.IDs...) {
		out = append(out, so.Outgoing{Client: id, Message: msg})
		if c := p.clients[id]; c != nil {
			delete(c.objects, obj.name)
		}
	}
	delete(p.objects, obj.name)
	_, out = p.emit(nil, out)
	return out
}
