package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"sync"

	"github.com/relaymesh/relaymesh/internal/rtmp"
	so "github.com/relaymesh/relaymesh/internal/sharedobject"
)

// ClientConfig configures a Client. The callbacks run on the client's reader
// goroutine, in the order the server sent things; they must not block long.
type ClientConfig struct {
	Conn rtmp.ConnConfig
	Log  *slog.Logger // default slog.Default()
	// OnCall receives calls from the server (a method with its arguments).
	OnCall func(method string, args []any)
	// OnObject receives every shared-object message after it was applied
	// to the object's local copy.
	OnObject func(o *Object, m so.Message)
	// OnMedia receives the audio, video and data messages of a stream the
	// client plays (see Client.Play).
	OnMedia func(m rtmp.Message)
}

// StatusError is a refusal from the server: a shared-object Status or the
// info object of a call's _error.
type StatusError struct {
	Code        string
	Description string
}

func (e *StatusError) Error() string {
	if e.Description == "" {
		return e.Code
	}
	return e.Code + ": " + e.Description
}

// ErrClientClosed is returned by calls on a closed client.
var ErrClientClosed = errors.New("rpc: client closed")

// Client is an RTMP connection to an application scope that uses shared
// objects and makes calls, as a Flash client would: for tests and tools.
type Client struct {
	cc  *rtmp.ClientConn
	cfg ClientConfig

	mu      sync.Mutex
	txid    float64
	calls   map[float64]chan callResult
	objects map[string]*Object
	plays   map[uint32]chan rtmp.Status // play answers awaited, by stream id
	err     error
	done    chan struct{}
}

type callResult struct {
	v   any
	err error
}

// Dial connects to rtmp://host[:port]/app/instance and starts reading.
func Dial(ctx context.Context, rawURL string, cfg ClientConfig) (*Client, error) {
	u, err := rtmp.ParseURL(rawURL, 2)
	if err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	cc, err := rtmp.Dial(ctx, u, cfg.Conn, cfg.Log)
	if err != nil {
		return nil, err
	}
	return start(cc, cfg), nil
}

// DialConn is Dial over a connection the caller made (e.g. a throttled one
// in tests); nc is closed when the client is.
func DialConn(ctx context.Context, nc net.Conn, rawURL string, cfg ClientConfig) (*Client, error) {
	u, err := rtmp.ParseURL(rawURL, 2)
	if err != nil {
		nc.Close()
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	cc, err := rtmp.DialConn(ctx, nc, u, cfg.Conn, cfg.Log)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return start(cc, cfg), nil
}

func start(cc *rtmp.ClientConn, cfg ClientConfig) *Client {
	cc.SetReadTimeout(0) // a client of shared objects may hear nothing for long
	c := &Client{cc: cc, cfg: cfg, txid: 1, calls: map[float64]chan callResult{}, objects: map[string]*Object{},
		plays: map[uint32]chan rtmp.Status{}, done: make(chan struct{})}
	go c.read()
	return c
}

// Play creates a stream and plays name on it, on the same connection as
// the client's shared objects and calls; it returns once the server
// answered NetStream.Play.Start (or refused). Media then goes to
// ClientConfig.OnMedia.
func (c *Client) Play(ctx context.Context, name string) error {
	v, err := c.Call(ctx, "createStream")
	if err != nil {
		return fmt.Errorf("createStream: %w", err)
	}
	f, ok := v.(float64)
	if !ok || f < 1 || f > 1<<16 {
		return fmt.Errorf("createStream: bad stream id %v", v)
	}
	id := uint32(f)
	ch := make(chan rtmp.Status, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return ErrClientClosed
	}
	c.plays[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.plays, id)
		c.mu.Unlock()
	}()
	if err := c.cc.SendCommand(id, "play", 0.0, nil, name, -1000.0); err != nil {
		return err
	}
	select {
	case st := <-ch:
		if st.Code != rtmp.CodePlayStart {
			return st
		}
		return nil
	case <-c.done:
		return ErrClientClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close closes the connection.
func (c *Client) Close() {
	c.cc.Close(nil)
	<-c.done
}

// Done is closed when the connection has ended; Err then tells why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the connection ended (nil while it is open).
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *Client) read() {
	var err error
	for {
		var m rtmp.Message
		if m, err = c.cc.ReadMessage(); err != nil {
			break
		}
		switch m.Type {
		case rtmp.TypeCommandAMF0, rtmp.TypeCommandAMF3:
			cmd, perr := rtmp.ParseCommand(m)
			if perr != nil {
				continue
			}
			c.command(cmd)
		case rtmp.TypeAudio, rtmp.TypeVideo, rtmp.TypeDataAMF0:
			if c.cfg.OnMedia != nil {
				c.cfg.OnMedia(m)
			}
		case rtmp.TypeSharedObjectAMF0, rtmp.TypeSharedObjectAMF3:
			msg, derr := so.Decode(m.Payload, m.Type == rtmp.TypeSharedObjectAMF3)
			if derr != nil {
				c.cfg.Log.Warn("bad shared-object message from server", "err", derr)
				continue
			}
			c.sharedObject(msg)
		}
	}
	c.cc.Close(err)
	if st := c.cc.Err(); st != nil {
		err = st
	}
	c.mu.Lock()
	c.err = err
	calls := c.calls
	c.calls = map[float64]chan callResult{}
	objs := c.objects
	c.mu.Unlock()
	for _, ch := range calls {
		ch <- callResult{err: fmt.Errorf("%w: %v", ErrClientClosed, err)}
	}
	for _, o := range objs {
		o.closed(err)
	}
	close(c.done)
}

func (c *Client) command(cmd *rtmp.Command) {
	switch cmd.Name {
	case "_result", "_error":
		c.mu.Lock()
		ch := c.calls[cmd.TransactionID]
		delete(c.calls, cmd.TransactionID)
		c.mu.Unlock()
		if ch == nil {
			return
		}
		if cmd.Name == "_error" {
			code, desc := ErrorOf(cmd)
			ch <- callResult{err: &StatusError{Code: code, Description: desc}}
		} else {
			ch <- callResult{v: ResultOf(cmd)}
		}
	case "onStatus", "onBWDone", "onFCPublish", "onFCUnpublish":
		if cmd.Name == "onStatus" {
			st := rtmp.StatusOf(cmd)
			if st.Code == rtmp.CodePlayStart || st.Level == "error" {
				c.mu.Lock()
				ch := c.plays[cmd.StreamID]
				c.mu.Unlock()
				if ch != nil {
					select {
					case ch <- st:
					default:
					}
				}
			}
			if st.Level == "error" {
				c.cfg.Log.Info("status from server", "code", st.Code, "description", st.Description)
			}
		}
	default:
		if c.cfg.OnCall != nil {
			c.cfg.OnCall(cmd.Name, cmd.Args)
		}
		if cmd.TransactionID != 0 {
			// Servers may expect an answer; this client has no handlers.
			m, err := ResultMessage(cmd.TransactionID, nil)
			if err == nil {
				_ = c.cc.Send(m)
			}
		}
	}
}

// Call calls method on the server with args and waits for its result. A
// refusal is a *StatusError.
func (c *Client) Call(ctx context.Context, method string, args ...any) (any, error) {
	ch := make(chan callResult, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, ErrClientClosed
	}
	c.txid++
	tx := c.txid
	c.calls[tx] = ch
	c.mu.Unlock()
	if err := c.cc.SendCommand(0, append([]any{method, tx, nil}, args...)...); err != nil {
		c.mu.Lock()
		delete(c.calls, tx)
		c.mu.Unlock()
		return nil, err
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.calls, tx)
		c.mu.Unlock()
		return nil, ctx.Err()
	}
}

// Notify calls method on the server without waiting for an answer
// (transaction id 0).
func (c *Client) Notify(method string, args ...any) error {
	return c.cc.SendCommand(0, append([]any{method, 0.0, nil}, args...)...)
}

func (c *Client) sendSO(m so.Message) error {
	b, err := m.AppendEncode(nil, false)
	if err != nil {
		return err
	}
	return c.cc.Send(rtmp.Message{Type: rtmp.TypeSharedObjectAMF0, Payload: b})
}

// Use subscribes to a shared object and waits until the server has sent
// its state (or refused).
func (c *Client) Use(ctx context.Context, name string, persistent bool) (*Object, error) {
	o := &Object{c: c, Name: name, Persistent: persistent, slots: map[string]any{},
		pending: map[string][]pendingSet{}, useWait: make(chan error, 1), changed: make(chan struct{})}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, ErrClientClosed
	}
	if c.objects[name] != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("rpc: object %q already in use", name)
	}
	c.objects[name] = o
	c.mu.Unlock()
	if err := c.sendSO(so.Message{Name: name, Persistent: persistent, Events: []so.Event{{Type: so.EventUse}}}); err != nil {
		return nil, err
	}
	select {
	case err := <-o.useWait:
		if err != nil {
			c.mu.Lock()
			delete(c.objects, name)
			c.mu.Unlock()
			return nil, err
		}
		return o, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *Client) sharedObject(m so.Message) {
	c.mu.Lock()
	o := c.objects[m.Name]
	c.mu.Unlock()
	if o == nil {
		return
	}
	o.apply(m)
	if c.cfg.OnObject != nil {
		c.cfg.OnObject(o, m)
	}
}

// Object is a client's copy of a shared object.
type Object struct {
	c          *Client
	Name       string
	Persistent bool

	mu       sync.Mutex
	slots    map[string]any
	version  uint32
	synced   bool
	useWait  chan error
	pending  map[string][]pendingSet
	vErr     error
	statuses []string
	messages []Sent
	changed  chan struct{} // closed and replaced at every applied message
}

type pendingSet struct {
	value any
	done  chan error
}

// Sent is a SendMessage an object received.
type Sent struct {
	Handler string
	Args    []any
}

func (o *Object) closed(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	select {
	case o.useWait <- fmt.Errorf("%w: %v", ErrClientClosed, err):
	default:
	}
	for k, q := range o.pending {
		for _, p := range q {
			p.done <- ErrClientClosed
		}
		delete(o.pending, k)
	}
}

func (o *Object) apply(m so.Message) {
	o.mu.Lock()
	defer o.mu.Unlock()
	isSync, hasChange, hasStatus := false, false, false
	for _, e := range m.Events {
		switch e.Type {
		case so.EventClear, so.EventUseSuccess:
			isSync = true
		case so.EventChange, so.EventSuccess, so.EventRemove:
			hasChange = true
		case so.EventStatus:
			hasStatus = true
		}
	}
	switch {
	case isSync:
		o.version = m.Version
	case hasChange && !hasStatus:
		if m.Version <= o.version && o.vErr == nil && o.synced {
			o.vErr = fmt.Errorf("object %s: change at version %d after %d", o.Name, m.Version, o.version)
		}
		o.version = m.Version
	}
	evs := m.Events
	for i := 0; i < len(evs); i++ {
		e := evs[i]
		refusal := i+1 < len(evs) && evs[i+1].Type == so.EventStatus
		switch e.Type {
		case so.EventUseSuccess:
			o.synced = true
			select {
			case o.useWait <- nil:
			default:
			}
		case so.EventClear:
			o.slots = map[string]any{}
		case so.EventChange, so.EventRemove:
			if e.Type == so.EventChange {
				o.slots[e.Key] = e.Value
			} else {
				delete(o.slots, e.Key)
			}
			if refusal {
				i++
				if p, ok := o.pop(e.Key); ok {
					p.done <- &StatusError{Code: evs[i].Code}
				}
				o.statuses = append(o.statuses, evs[i].Code)
			}
		case so.EventSuccess:
			if p, ok := o.pop(e.Key); ok {
				if so.IsDelete(p.value) {
					delete(o.slots, e.Key)
				} else {
					o.slots[e.Key] = p.value
				}
				p.done <- nil
			}
		case so.EventStatus:
			o.statuses = append(o.statuses, e.Code)
			if !o.synced {
				select {
				case o.useWait <- &StatusError{Code: e.Code}:
				default:
				}
			}
		case so.EventSendMessage:
			if len(o.messages) < 1<<16 {
				o.messages = append(o.messages, Sent{Handler: e.Handler, Args: e.Args})
			}
		}
	}
	if len(o.statuses) > 1024 {
		o.statuses = o.statuses[len(o.statuses)-1024:]
	}
	close(o.changed)
	o.changed = make(chan struct{})
}

func (o *Object) pop(key string) (pendingSet, bool) {
	q := o.pending[key]
	if len(q) == 0 {
		return pendingSet{}, false
	}
	if len(q) == 1 {
		delete(o.pending, key)
	} else {
		o.pending[key] = q[1:]
	}
	return q[0], true
}

// Set asks the server to set a slot (nil removes it) and waits for the
// answer: nil when applied, a *StatusError when refused.
func (o *Object) Set(ctx context.Context, key string, v any) error {
	done := make(chan error, 1)
	o.mu.Lock()
	o.pending[key] = append(o.pending[key], pendingSet{value: v, done: done})
	version := o.version
	o.mu.Unlock()
	err := o.c.sendSO(so.Message{Name: o.Name, Version: version, Persistent: o.Persistent,
		Events: []so.Event{{Type: so.EventRequestChange, Key: key, Value: v}}})
	if err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Send sends a message to every client of the object (the sender included).
func (o *Object) Send(handler string, args ...any) error {
	return o.c.sendSO(so.Message{Name: o.Name, Persistent: o.Persistent,
		Events: []so.Event{{Type: so.EventSendMessage, Handler: handler, Args: args}}})
}

// Release unsubscribes from the object.
func (o *Object) Release() error {
	o.c.mu.Lock()
	delete(o.c.objects, o.Name)
	o.c.mu.Unlock()
	return o.c.sendSO(so.Message{Name: o.Name, Persistent: o.Persistent, Events: []so.Event{{Type: so.EventRelease}}})
}

// Slots returns a copy of the local slots and the object's version.
func (o *Object) Slots() (map[string]any, uint32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.slots), o.version
}

// Get returns one slot.
func (o *Object) Get(key string) (any, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.slots[key]
	return v, ok
}

// Messages returns the SendMessages received so far.
func (o *Object) Messages() []Sent {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Sent(nil), o.messages...)
}

// Statuses returns the status codes received for this object (the last 1024).
func (o *Object) Statuses() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.statuses...)
}

// VersionError reports the first broadcast change that did not raise the
// version (nil when versions always increased).
func (o *Object) VersionError() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.vErr
}

// Wait blocks until cond, called with the slots and version under the
// object's lock, returns true, or ctx ends.
func (o *Object) Wait(ctx context.Context, cond func(slots map[string]any, version uint32) bool) error {
	for {
		o.mu.Lock()
		ok := cond(o.slots, o.version)
		ch := o.changed
		o.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-o.c.done:
			return ErrClientClosed
		}
	}
}
