package rtmp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
)

// MediaSource is what a playing stream reads frames from: a hub subscriber.
// Poll never blocks; the source signals the connection's Notify channel
// whenever frames become pending.
type MediaSource interface {
	Poll(dst []*av.Frame, maxBytes int) ([]*av.Frame, error)
	// Err reports, without consuming frames, why the source ended (nil while
	// it plays), so that a writer holding media back still notices.
	Err() error
	Close()
}

// Errors that end a connection.
var (
	ErrClosed            = errors.New("rtmp: connection closed")
	ErrControlQueueFull  = errors.New("rtmp: control queue full (peer not reading)")
	ErrNotRTMP           = errors.New("rtmp: not an RTMP handshake")
	ErrServerClosing     = errors.New("rtmp: server shutting down")
	errHandshakeTimedOut = errors.New("rtmp: handshake timed out")
)

// binding is a media source playing on one message stream of the connection.
type binding struct {
	streamID uint32
	src      MediaSource
	// onEvent turns a stream event into messages for the peer.
	onEvent func(e av.Event) []Message
	// onErr is called once (in the writer) when the source fails; it returns
	// the messages to send before the connection is closed.
	onErr func(err error) []Message
	// since is when it was bound (av.Monotonic): frames that arrived in
	// the hub before are the join burst, left out of the write latency.
	since int64
}

// Conn is one RTMP connection after the handshake. One goroutine reads
// (ReadMessage); an internal goroutine owns every write: the control queue
// first, then the frames of the playing streams, batched into writevs.
type Conn struct {
	nc     net.Conn
	cfg    ConnConfig
	log    *slog.Logger
	br     *bufio.Reader
	reader *ChunkReader
	writer *ChunkWriter

	notify chan struct{} // wakes the writer; shared with the media sources

	mu         sync.Mutex
	ctrl       []Message
	bindings   []*binding
	closeAfter bool                 // close once the control queue is flushed
	onClose    []context.CancelFunc // called by Close
	isClosed   bool
	closeErr   error

	readTimeout atomic.Int64 // ns; 0 = none
	peerWindow  atomic.Uint32
	inflight    *inflight // nil when the socket cannot report its queue

	// Owned by the writer: scratch lists and the media timestamps of the
	// batch being built.
	ctrlSpare             []Message
	binds                 []*binding
	frames                []*av.Frame
	batchMedia            bool
	batchFirst, batchLast uint32
	lat                   *latencySample // sampled connections only

	// Owned by the Flusher's worker when one drives the connection.
	worker     *flushWorker
	urgent     atomic.Bool // queued for the worker's next wake-up
	raw        syscall.RawConn
	rawWrite   func(fd uintptr) // doRawWrite, bound once
	rawErr     error
	stuckSince time.Time  // the socket has taken nothing since
	slowUntil  time.Time  // the socket was full lately: feed it in small steps
	failed     error      // a media source ended: close once its status is written
	retry      bool       // the last service left something for a later round
	nextDue    time.Time  // no media round for the connection before
	burst      burstMeter // the media of the current service (burst.go)
	// mediaPending: a media source has frames (MediaReady since the last
	// service); relayLink: the peer is a downstream relay, whose link is
	// written in whole write_batch rounds (see Flusher).
	mediaPending atomic.Bool
	relayLink    atomic.Bool
	// isDone mirrors closed for the worker's check in every round: an
	// atomic load instead of a channel receive per connection and round.
	isDone atomic.Bool

	lastAck   uint64
	closed    chan struct{}
	closeOnce sync.Once

	// Stats.
	BytesIn  atomic.Uint64
	BytesOut atomic.Uint64
}

func newConn(nc net.Conn, cfg ConnConfig, log *slog.Logger) *Conn {
	cfg = cfg.WithDefaults()
	if log == nil {
		log = slog.Default()
	}
	if cfg.SendBuffer > 0 {
		tcp := nc
		if tc, ok := nc.(*tls.Conn); ok {
			tcp = tc.NetConn() // RTMPS: the socket under TLS
		}
		if tc, ok := tcp.(*net.TCPConn); ok {
			_ = tc.SetWriteBuffer(cfg.SendBuffer)
		}
	}
	br := bufio.NewReaderSize(nc, readBuffer)
	c := &Conn{
		nc:     nc,
		cfg:    cfg,
		log:    log,
		br:     br,
		reader: NewChunkReader(br, cfg.MaxMessageSize),
		writer: NewChunkWriter(),
		notify: make(chan struct{}, 1),
		closed: make(chan struct{}),
	}
	c.readTimeout.Store(int64(cfg.ReadTimeout))
	c.inflight = newInflight(nc)
	c.sampleLatency()
	return c
}

// SetReadTimeout changes how long ReadMessage waits for the peer (0: forever).
func (c *Conn) SetReadTimeout(d time.Duration) { c.readTimeout.Store(int64(d)) }

// Accept runs the server side of the handshake on nc and returns the
// connection with its writer running.
func Accept(nc net.Conn, cfg ConnConfig, log *slog.Logger) (*Conn, error) {
	c := newConn(nc, cfg, log)
	if err := c.handshake(true); err != nil {
		nc.Close()
		return nil, err
	}
	c.startWriter()
	return c, nil
}

// Client runs the client side of the handshake on nc.
func Client(nc net.Conn, cfg ConnConfig, log *slog.Logger) (*Conn, error) {
	c := newConn(nc, cfg, log)
	if err := c.handshake(false); err != nil {
		nc.Close()
		return nil, err
	}
	go c.writeLoop()
	return c, nil
}

// RemoteAddr is the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// LocalAddr is this end's address.
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// Done is closed when the connection is closed.
func (c *Conn) Done() <-chan struct{} { return c.closed }

// Err is why the connection closed (nil while open).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

// MediaReady tells the connection's writer that a media source has frames
// pending: the hub calls it when a subscriber's queue stops being empty. It
// never blocks. (The same as signalling Notify, without a channel per
// connection when a Flusher writes it.)
func (c *Conn) MediaReady() {
	if c.worker != nil {
		if !c.mediaPending.Load() {
			c.mediaPending.Store(true)
		}
		c.worker.mediaReady()
		return
	}
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

func (c *Conn) wake() {
	if c.worker != nil {
		c.worker.poke(c)
		return
	}
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// Send queues a message that must not be dropped (command, data,
// shared-object, protocol control). It never blocks: when the peer has let
// ControlQueue messages pile up, the connection is closed instead.
func (c *Conn) Send(m Message) error {
	c.mu.Lock()
	if c.closeErr != nil {
		c.mu.Unlock()
		return ErrClosed
	}
	if len(c.ctrl) >= c.cfg.ControlQueue {
		c.mu.Unlock()
		c.Close(ErrControlQueueFull)
		return ErrControlQueueFull
	}
	c.ctrl = append(c.ctrl, m)
	c.mu.Unlock()
	c.wake()
	return nil
}

// SendCommand encodes and queues an AMF0 command on a message stream.
func (c *Conn) SendCommand(streamID uint32, values ...any) error {
	m, err := CommandMessage(streamID, values...)
	if err != nil {
		return err
	}
	return c.Send(m)
}

// Bind starts sending src's frames on message stream streamID.
func (c *Conn) Bind(streamID uint32, src MediaSource, onEvent func(av.Event) []Message, onErr func(error) []Message) {
	c.mu.Lock()
	c.bindings = append(c.bindings, &binding{streamID: streamID, src: src, onEvent: onEvent, onErr: onErr, since: av.Monotonic()})
	c.mu.Unlock()
	c.wake()
}

// Unbind stops and closes the media source playing on streamID, if any.
func (c *Conn) Unbind(streamID uint32) {
	c.mu.Lock()
	var gone []*binding
	kept := c.bindings[:0]
	for _, b := range c.bindings {
		if b.streamID == streamID {
			gone = append(gone, b)
		} else {
			kept = append(kept, b)
		}
	}
	clear(c.bindings[len(kept):])
	c.bindings = kept
	c.mu.Unlock()
	for _, b := range gone {
		b.src.Close()
	}
}

// CloseAfterFlush closes the connection once what is queued has been sent
// (used after an error status, so the peer learns why).
func (c *Conn) CloseAfterFlush(err error) {
	c.mu.Lock()
	c.closeAfter = true
	if c.closeErr == nil {
		c.closeErr = err
	}
	c.mu.Unlock()
	c.wake()
	// Do not wait for a peer that does not read.
	time.AfterFunc(c.cfg.WriteTimeout, func() { c.Close(err) })
}

// Close closes the connection now and releases its media sources.
func (c *Conn) Close(err error) {
	c.closeOnce.Do(func() {
		if err == nil {
			err = ErrClosed
		}
		c.mu.Lock()
		if c.closeErr == nil {
			c.closeErr = err
		}
		bindings := c.bindings
		c.bindings = nil
		onClose := c.onClose
		c.onClose, c.isClosed = nil, true
		c.mu.Unlock()
		c.isDone.Store(true)
		close(c.closed)
		for _, f := range onClose {
			f()
		}
		c.nc.Close()
		for _, b := range bindings {
			b.src.Close()
		}
	})
}

// Context returns a context cancelled when the connection closes (without a
// goroutine of its own per connection).
func (c *Conn) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	c.mu.Lock()
	if c.isClosed {
		c.mu.Unlock()
		cancel()
		return ctx, cancel
	}
	c.onClose = append(c.onClose, cancel)
	c.mu.Unlock()
	return ctx, cancel
}
