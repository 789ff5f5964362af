package authority

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	so "github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
	"github.com/relaymesh/relaymesh/internal/sharedobject/replica"
)

// box is one direction of one simulated connection: a FIFO worked by its own
// goroutine. inflight counts queued and running messages of every box.
type box struct {
	mu       sync.Mutex
	q        []so.Message
	signal   chan struct{}
	run      sync.Mutex // held while handling a message
	dead     bool
	handle   func(so.Message)
	inflight *atomic.Int64
}

func newBox(ctx context.Context, wg *sync.WaitGroup, inflight *atomic.Int64, handle func(so.Message)) *box {
	b := &box{signal: make(chan struct{}, 1), handle: handle, inflight: inflight}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-b.signal:
			}
			for {
				b.mu.Lock()
				if len(b.q) == 0 || b.dead {
					b.mu.Unlock()
					break
				}
				m := b.q[0]
				b.q = b.q[1:]
				b.run.Lock()
				b.mu.Unlock()
				b.handle(m)
				b.run.Unlock()
				b.inflight.Add(-1)
			}
		}
	}()
	return b
}

func (b *box) push(ms ...so.Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dead {
		return
	}
	b.q = append(b.q, ms...)
	b.inflight.Add(int64(len(ms)))
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

// kill drops everything queued and waits for a running handler: the
// connection is gone.
func (b *box) kill() {
	b.mu.Lock()
	b.dead = true
	b.inflight.Add(-int64(len(b.q)))
	b.q = nil
	b.mu.Unlock()
	b.run.Lock()
	b.run.Unlock() //nolint:staticcheck // wait for the running handler
}

// sim is a Flash-like client: it applies what the server sends.
type sim struct {
	mu      sync.Mutex
	id      so.ClientID
	synced  bool
	slots   map[string]any
	pending map[string][]any
	lastV   uint32
	vErr    error
	got     map[string]int
}

func (c *sim) apply(m so.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	hasChange, hasStatus, isSync := false, false, false
	for _, e := range m.Events {
		switch e.Type {
		case so.EventChange:
			hasChange = true // a Success alone may confirm a change to nothing (null on a missing slot)
		case so.EventStatus:
			hasStatus = true
		case so.EventClear, so.EventUseSuccess:
			isSync = true
		}
	}
	switch {
	case isSync:
		c.lastV = m.Version
	case hasChange && !hasStatus:
		if m.Version <= c.lastV && c.vErr == nil {
			c.vErr = fmt.Errorf("client %d: change at version %d after %d", c.id, m.Version, c.lastV)
		}
		c.lastV = m.Version
	case m.Version < c.lastV && c.vErr == nil:
		c.vErr = fmt.Errorf("client %d: version %d after %d", c.id, m.Version, c.lastV)
	}
	for i, e := range m.Events {
		refusal := i+1 < len(m.Events) && m.Events[i+1].Type == so.EventStatus
		switch e.Type {
		case so.EventUseSuccess:
			c.synced = true
		case so.EventClear:
			c.slots = map[string]any{} // requests in flight are still answered
		case so.EventChange, so.EventRemove:
			// A refusal answers this client's oldest request on the key; a
			// Remove that is not a refusal answers it when it is a remove,
			// or is another client's removal: a viewer cannot tell, which is
			// why only removers (which make no other requests) send
			// RequestRemove here.
			q := c.pending[e.Key]
			if len(q) > 0 && (refusal || e.Type == so.EventRemove && q[0] == removeRequest) {
				c.pending[e.Key] = q[1:]
			}
			if e.Type == so.EventChange {
				c.slots[e.Key] = e.Value
			} else {
				delete(c.slots, e.Key)
			}
		case so.EventSuccess:
			if q := c.pending[e.Key]; len(q) > 0 {
				if so.IsDelete(q[0]) {
					delete(c.slots, e.Key) // a change to null removes the slot
				} else {
					c.slots[e.Key] = q[0]
				}
				c.pending[e.Key] = q[1:]
			}
		case so.EventSendMessage:
			c.got[e.Args[0].(string)]++
		}
	}
}

// removeRequest stands for a RequestRemove among a remover's requests on a
// key: a viewer is answered Remove, or the refusal, not Success.
const removeRequest = "\x00remove"

func (c *sim) request(k string, v any) {
	c.mu.Lock()
	c.pending[k] = append(c.pending[k], v)
	c.mu.Unlock()
}

func (c *sim) isSynced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.synced
}

// TestChainConverges runs 100 clients writing concurrently through
// authority ← relay1 ← relay2, with relay1 reconnecting upstream halfway:
// every client and replica ends with the authority's state, and every send
// message reaches every client exactly once.
func TestChainConverges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	var inflight atomic.Int64

	var routeMu sync.RWMutex
	route := map[so.ClientID]*box{}
	deliver := func(out []so.Outgoing) {
		routeMu.RLock()
		defer routeMu.RUnlock()
		for _, o := range out {
			if b := route[o.Client]; b != nil {
				b.push(*o.Message)
			}
		}
	}
	a := newAuth(t, Config{Deliver: deliver})

	const relay1, relay2 = so.ClientID(1001), so.ClientID(1002)
	var up1Mu sync.Mutex
	var up1 *box
	p1 := mustProxy(t, deliver, func(ms []so.Message) {
		up1Mu.Lock()
		defer up1Mu.Unlock()
		if up1 != nil {
			up1.push(ms...)
		}
	})
	var up2 *box
	p2 := mustProxy(t, deliver, func(ms []so.Message) { up2.push(ms...) })

	relay1ID := relay1
	connectRelay1 := func(id so.ClientID) (*box, *box) {
		if err := a.Connect(id, ClientInfo{Scope: "live/room", Role: access.RoleRelay}); err != nil {
			t.Fatal(err)
		}
		down := newBox(ctx, &wg, &inflight, func(m so.Message) { p1.FromUpstream(m) })
		up := newBox(ctx, &wg, &inflight, func(m so.Message) { a.Handle(id, m) })
		routeMu.Lock()
		route[id] = down
		routeMu.Unlock()
		return up, down
	}
	var down1 *box
	up1, down1 = connectRelay1(relay1ID)
	if err := p1.Connect(relay2, access.RoleRelay); err != nil {
		t.Fatal(err)
	}
	up2 = newBox(ctx, &wg, &inflight, func(m so.Message) { p1.FromClient(relay2, m) })
	routeMu.Lock()
	route[relay2] = newBox(ctx, &wg, &inflight, func(m so.Message) { p2.FromUpstream(m) })
	routeMu.Unlock()

	// 100 clients: 20 on the primary, 40 on each relay.
	var clients []*sim
	send := map[so.ClientID]func(so.Message){}
	for i := 1; i <= 100; i++ {
		c := &sim{id: so.ClientID(i), slots: map[string]any{}, pending: map[string][]any{}, got: map[string]int{}}
		clients = append(clients, c)
		routeMu.Lock()
		route[c.id] = newBox(ctx, &wg, &inflight, c.apply)
		routeMu.Unlock()
		switch {
		case i <= 20:
			connect(t, a, access.RoleViewer, c.id)
			send[c.id] = func(m so.Message) { a.Handle(c.id, m) }
		case i <= 60:
			must(t, p1.Connect(c.id, access.RoleViewer))
			send[c.id] = func(m so.Message) { p1.FromClient(c.id, m) }
		default:
			must(t, p2.Connect(c.id, access.RoleViewer))
			send[c.id] = func(m so.Message) { p2.FromClient(c.id, m) }
		}
	}
	quiesce := func(what string) {
		t.Helper()
		for i := 0; inflight.Load() != 0; i++ {
			if i > 2000 {
				t.Fatalf("%s: %d messages still in flight", what, inflight.Load())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for _, c := range clients {
		send[c.id](use("room", false))
	}
	quiesce("use")
	for _, c := range clients {
		if !c.isSynced() {
			t.Fatalf("client %d not synced", c.id)
		}
	}

	var sends atomic.Int64
	work := func(round int) {
		var cw sync.WaitGroup
		for _, c := range clients {
			cw.Add(1)
			go func() {
				defer cw.Done()
				r := rand.New(rand.NewPCG(uint64(c.id), uint64(round)))
				// Every tenth client is a remover: it deletes slots with
				// RequestRemove and writes nothing else, since a viewer is
				// answered Remove for it, like any other client's removal,
				// and a client that also sets values could not pair its
				// answers. The others delete by setting null (answered
				// Success).
				remover := c.id%10 == 0
				for op := 0; op < 30; op++ {
					key := fmt.Sprintf("k%d", r.IntN(8))
					switch n := r.IntN(10); {
					case remover && n < 8:
						c.request(key, removeRequest)
						send[c.id](so.Message{Name: "room", Events: []so.Event{ev(so.EventRequestRemove, key)}})
					case n < 7:
						v := fmt.Sprintf("%d-%d-%d", c.id, round, op)
						c.request(key, v)
						send[c.id](set("room", key, v))
					case n < 8:
						c.request(key, nil)
						send[c.id](set("room", key, nil))
					default:
						id := fmt.Sprintf("m%d-%d-%d", c.id, round, op)
						sends.Add(1)
						send[c.id](so.Message{Name: "room", Events: []so.Event{{Type: so.EventSendMessage, Handler: "say", Args: []any{id}}}})
					}
				}
			}()
		}
		cw.Wait()
	}
	work(1)
	quiesce("round 1")
	check := func(what string, sendsReliable bool) {
		t.Helper()
		snap, ok := a.Snapshot("live/room", "room")
		if !ok {
			t.Fatalf("%s: object gone", what)
		}
		for _, p := range []*replica.Proxy{p1, p2} {
			slots, v, ok := p.Slots("room")
			if !ok || v != snap.Version || !sameSlots(slots, snap.Slots) {
				t.Errorf("%s: replica v%d %v, authority v%d %v", what, v, slots, snap.Version, snap.Slots)
			}
			if s := p.Stats(); s.Pending != 0 {
				t.Errorf("%s: %d pending requests left", what, s.Pending)
			}
		}
		for _, c := range clients {
			c.mu.Lock()
			if !sameSlots(c.slots, snap.Slots) {
				t.Errorf("%s: client %d has %v, authority %v", what, c.id, c.slots, snap.Slots)
			}
			if c.vErr != nil {
				t.Error(c.vErr)
			}
			if sendsReliable {
				total := 0
				for id, n := range c.got {
					if n != 1 {
						t.Errorf("%s: client %d got message %s %d times", what, c.id, id, n)
					}
					total++
				}
				if int64(total) != sends.Load() {
					t.Errorf("%s: client %d got %d of %d messages", what, c.id, total, sends.Load())
				}
			}
			c.mu.Unlock()
		}
	}
	check("round 1", true)

	// Relay 1 loses its upstream connection and reconnects while clients write.
	var rw sync.WaitGroup
	rw.Add(1)
	go func() {
		defer rw.Done()
		work(2)
	}()
	time.Sleep(time.Millisecond)
	up1Mu.Lock()
	old := up1
	up1 = nil
	up1Mu.Unlock()
	old.kill()
	down1.kill()
	p1.UpstreamLost()
	a.Disconnect(relay1ID)
	relay1ID = relay1 + 100
	nu, nd := connectRelay1(relay1ID)
	up1Mu.Lock()
	up1, down1 = nu, nd
	up1Mu.Unlock()
	p1.UpstreamReset()
	rw.Wait()
	quiesce("round 2")
	// Messages sent during the outage may be lost for relay clients, so only
	// the state is compared; versions must still never go back.
	check("after reconnect", false)
}

func mustProxy(t *testing.T, deliver func([]so.Outgoing), up func([]so.Message)) *replica.Proxy {
	p, err := replica.New(replica.Config{Scope: "live/room", Logger: quiet, Deliver: deliver, Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func sameSlots(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !so.ValueEqual(v, w) {
			return false
		}
	}
	return true
}
