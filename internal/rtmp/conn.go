package rtmp

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/yutopp/go-rtmp/handshake"
)

// ConnConfig holds the timeouts and bounds of one connection.
type ConnConfig struct {
	HandshakeTimeout time.Duration // whole handshake (default 10s)
	ReadTimeout      time.Duration // longest silence from the peer (default 30s)
	WriteTimeout     time.Duration // longest a single writev may take (default 10s)
	MaxMessageSize   uint32        // largest message accepted (default 8 MiB)
	ControlQueue     int           // pending commands, shared-object and RPC messages (default 1024); overflow closes
	BatchBytes       int           // media bytes gathered into one writev at most (default 256 KiB)
	WindowAckSize    uint32        // acknowledgement window announced to the peer (default 2.5 MB)
	SendBuffer       int           // SO_SNDBUF for the socket; 0 keeps the kernel's auto-tuning
	// MaxInflight is how much media (by timestamps) may wait in the kernel's
	// socket buffer for a slow peer before the writer holds further frames
	// back in the hub, where the drop policy applies (default 500ms).
	MaxInflight time.Duration
	// WriteBatch gathers frames for up to this long before a write, so that
	// one writev carries several frames: fewer system calls and wake-ups per
	// viewer at the price of that much latency (default 0: write at once).
	WriteBatch time.Duration
	// MaxNotSent is how many bytes may wait in the kernel unsent (beyond
	// what is in flight on the network) before the writer holds media back
	// (default 16 KiB).
	MaxNotSent int
	// Flusher, when set, writes server connections in its rounds (every
	// Flusher.Interval, which then replaces WriteBatch) instead of with a
	// goroutine per connection.
	Flusher *Flusher
	// Metrics, when set, counts what ends or refuses the server's
	// connections (see Metrics).
	Metrics *Metrics
	// Sessions, when set, holds the server's open sessions (to tell them
	// the server is going away, see Session.Leave).
	Sessions *Sessions

	// ConnectProps are extra properties a client sends in its connect
	// command object (a relay marks itself so upstreams treat it as one).
	ConnectProps map[string]any
	// TLS configures the client side of rtmps:// connections (nil: the
	// system's roots, server name from the URL).
	TLS *tls.Config
}

// WithDefaults fills zero fields.
func (c ConnConfig) WithDefaults() ConnConfig {
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = 30 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = DefaultMaxMessageSize
	}
	if c.ControlQueue <= 0 {
		c.ControlQueue = 1024
	}
	if c.BatchBytes <= 0 {
		c.BatchBytes = 256 << 10
	}
	if c.MaxNotSent <= 0 {
		c.MaxNotSent = 16 << 10
	}
	if c.MaxInflight <= 0 {
		c.MaxInflight = 500 * time.Millisecond
	}
	if c.WindowAckSize == 0 {
		c.WindowAckSize = 2500000
	}
	return c
}

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

	// Owned by the Flusher's worker when one drives the connection.
	worker     *flushWorker
	urgent     atomic.Bool // queued for the worker's next wake-up
	raw        syscall.RawConn
	rawWrite   func(fd uintptr) bool // doRawWrite, bound once
	rawErr     error
	stuckSince time.Time // the socket has taken nothing since
	slowUntil  time.Time // the socket was full lately: feed it in small steps
	failed     error     // a media source ended: close once its status is written
	retry      bool      // the last service left something for a later round
	nextDue    time.Time // no media round for the connection before
	// mediaPending: a media source has frames (MediaReady since the last
	// service); relayLink: the peer is a downstream relay, whose link is
	// written in whole write_batch rounds (see Flusher).
	mediaPending atomic.Bool
	relayLink    atomic.Bool

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

// startWriter hands the writes to the configured Flusher when the socket
// allows non-blocking writes, or starts a writer goroutine of its own.
func (c *Conn) startWriter() {
	if f := c.cfg.Flusher; f != nil && f.ctx.Err() == nil {
		if sc, ok := c.nc.(syscall.Conn); ok {
			if raw, err := sc.SyscallConn(); err == nil {
				c.raw = raw
				c.rawWrite = c.doRawWrite
				if c.inflight != nil {
					c.inflight.setNotSentLowat(c.cfg.MaxNotSent)
				}
				c.worker = f.attach(c)
				c.wake()
				return
			}
		}
	}
	go c.writeLoop()
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

func (c *Conn) handshake(server bool) error {
	deadline := time.Now().Add(c.cfg.HandshakeTimeout)
	_ = c.nc.SetDeadline(deadline)
	defer c.nc.SetDeadline(time.Time{})
	var err error
	if server {
		var b []byte
		b, err = c.br.Peek(1)
		if err == nil && b[0] != 3 {
			return fmt.Errorf("%w: first byte 0x%02x", ErrNotRTMP, b[0])
		}
		if err == nil {
			err = serverHandshake(c.br, c.nc)
		}
	} else {
		err = handshake.HandshakeWithServer(c.br, c.nc, &handshake.Config{SkipHandshakeVerification: true})
	}
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return errHandshakeTimedOut
		}
		return fmt.Errorf("rtmp handshake: %w", err)
	}
	return nil
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
	c.bindings = append(c.bindings, &binding{streamID: streamID, src: src, onEvent: onEvent, onErr: onErr})
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

// ReadMessage returns the next message that is not protocol control.
// Protocol control (chunk size, acknowledgements, window, ping) is handled
// here. Every call waits at most ReadTimeout for the peer.
func (c *Conn) ReadMessage() (Message, error) {
	for {
		if d := time.Duration(c.readTimeout.Load()); d > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(d))
		} else {
			_ = c.nc.SetReadDeadline(time.Time{})
		}
		m, err := c.reader.ReadMessage()
		if err != nil {
			return m, err
		}
		n := c.reader.BytesRead()
		c.BytesIn.Store(n)
		if w := uint64(c.peerWindow.Load()); w > 0 && n-c.lastAck >= w {
			c.lastAck = n
			_ = c.Send(ackMessage(uint32(n)))
		}
		if m.StreamID == 0 || m.Type <= TypeSetPeerBandwidth {
			handled, err := c.control(m)
			if err != nil {
				return m, err
			}
			if handled {
				continue
			}
		}
		return m, nil
	}
}

func (c *Conn) control(m Message) (bool, error) {
	p := m.Payload
	switch m.Type {
	case TypeSetChunkSize:
		if len(p) < 4 {
			return true, protocolErr("short set chunk size")
		}
		return true, c.reader.SetChunkSize(binary.BigEndian.Uint32(p) & 0x7fffffff)
	case TypeAbort:
		if len(p) >= 4 {
			c.reader.Abort(binary.BigEndian.Uint32(p))
		}
		return true, nil
	case TypeAck:
		return true, nil
	case TypeWindowAckSize:
		if len(p) >= 4 {
			c.peerWindow.Store(binary.BigEndian.Uint32(p))
		}
		return true, nil
	case TypeSetPeerBandwidth:
		// Answer with our window, as servers expect from a client.
		if len(p) >= 4 {
			_ = c.Send(windowAckMessage(c.cfg.WindowAckSize))
		}
		return true, nil
	case TypeUserControl:
		if len(p) >= 6 && binary.BigEndian.Uint16(p) == EventPingRequest {
			resp := make([]byte, 6)
			binary.BigEndian.PutUint16(resp, EventPingResponse)
			copy(resp[2:], p[2:6])
			_ = c.Send(Message{Type: TypeUserControl, Payload: resp})
		}
		return false, nil // stream begin/EOF are interesting to clients
	}
	return false, nil
}

// writeLoop is the only writer of the socket when no Flusher drives the
// connection: it waits for work, gathers media for WriteBatch, and writes
// with blocking writevs.
func (c *Conn) writeLoop() {
	var (
		holdOff     *time.Timer // wakes a writer that held media back
		deadlineSet time.Time
		batchTimer  *time.Timer
		lastFlush   time.Time
	)
	holdC := func() <-chan time.Time {
		if holdOff == nil {
			return nil
		}
		return holdOff.C
	}
	for {
		select {
		case <-c.notify:
		case <-holdC():
		case <-c.closed:
			return
		}
		c.mu.Lock()
		mediaOnly := len(c.ctrl) == 0 && len(c.bindings) > 0
		c.mu.Unlock()
		if wait := c.cfg.WriteBatch - time.Since(lastFlush); mediaOnly && wait > 0 {
			// Let frames gather; whatever is pending then goes in one writev.
			if batchTimer == nil {
				batchTimer = time.NewTimer(wait)
			} else {
				batchTimer.Reset(wait)
			}
			select {
			case <-batchTimer.C:
			case <-c.closed:
				return
			}
		}
		for {
			now := time.Now()
			closeAfter, held, failed := c.gather(now)
			if held {
				if holdOff == nil {
					holdOff = time.NewTimer(20 * time.Millisecond)
				} else {
					holdOff.Reset(20 * time.Millisecond)
				}
			}
			if c.writer.Pending() == 0 {
				if closeAfter {
					c.Close(nil)
					return
				}
				break
			}
			// Refresh the write deadline about once a second, not per write.
			if now.Sub(deadlineSet) > time.Second {
				_ = c.nc.SetWriteDeadline(now.Add(c.cfg.WriteTimeout))
				deadlineSet = now
			}
			pending := c.writer.Pending()
			if err := c.writer.Flush(c.nc); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					c.cfg.Metrics.timedOut(timeoutWrite)
					err = fmt.Errorf("%w: %w", ErrWriteTimeout, err)
				}
				err = fmt.Errorf("%w: %w", errWrite, err)
				if failed != nil {
					err = failed // a source ended first; its status did not get out
				}
				c.Close(err)
				return
			}
			lastFlush = now
			c.wrote(pending)
			if failed != nil {
				c.Close(failed)
				return
			}
			if held {
				break
			}
		}
	}
}

// gather moves the queued control messages and, unless the kernel already
// holds enough media for the peer, a batch of media into the chunk writer.
// It reports whether the connection should close once that is written,
// whether media was held back, and the error of a media source that ended.
func (c *Conn) gather(now time.Time) (closeAfter, held bool, failed error) {
	c.mu.Lock()
	c.ctrlSpare, c.ctrl = c.ctrl, c.ctrlSpare[:0]
	c.binds = append(c.binds[:0], c.bindings...)
	closeAfter = c.closeAfter
	c.mu.Unlock()
	for i := range c.ctrlSpare {
		m := &c.ctrlSpare[i]
		c.writer.Append(m)
		if m.Type == TypeSetChunkSize && len(m.Payload) >= 4 {
			c.writer.SetChunkSize(binary.BigEndian.Uint32(m.Payload))
		}
	}
	clear(c.ctrlSpare)
	binds := c.binds
	defer clear(binds)
	// Hold media back while the kernel already holds enough of it; ask it
	// every time for a peer that was slow lately.
	if now.Before(c.slowUntil) {
		c.recheck()
	}
	held = len(binds) > 0 && c.inflight != nil && c.inflight.backlogged(now, c.cfg.MaxNotSent, c.cfg.MaxInflight.Milliseconds())
	if held {
		for _, b := range binds {
			if err := b.src.Err(); err != nil {
				c.failSource(b, err)
				failed = err
			}
		}
		return closeAfter, held, failed
	}
	c.batchMedia = false
	for _, b := range binds {
		if c.writer.Pending() >= c.cfg.BatchBytes {
			c.wake() // more to do after this flush
			break
		}
		frames, err := b.src.Poll(c.frames[:0], min(c.cfg.BatchBytes-c.writer.Pending(), c.pollBytes(now)))
		for _, f := range frames {
			c.appendFrame(b, f)
		}
		clear(frames)
		c.frames = frames[:0]
		if err != nil {
			c.failSource(b, err)
			failed = err
		}
	}
	return closeAfter, false, failed
}

// failSource queues what the peer is told when b's source ended with err.
func (c *Conn) failSource(b *binding, err error) {
	if b.onErr != nil {
		for _, m := range b.onErr(err) {
			c.writer.Append(&m)
		}
	}
}

// wrote accounts for n bytes handed to the kernel.
func (c *Conn) wrote(n int) {
	c.BytesOut.Add(uint64(n))
	if c.inflight != nil {
		c.inflight.wrote(n, c.batchMedia, c.batchFirst, c.batchLast)
	}
}

// service is one round of a Flusher-driven connection. It never blocks: what
// the socket does not take stays pending in the chunk writer and goes first
// in the next round, and while anything is pending no new media or control
// message is taken, so a slow peer's backlog stays in the hub's queue (where
// the drop policy applies) and in the bounded control queue. It reports
// false once the connection is closed.
func (c *Conn) service(now time.Time) bool {
	select {
	case <-c.closed:
		return false
	default:
	}
	c.retry = false
	if c.writer.Pending() > 0 {
		if !c.flushSome(now) {
			return false
		}
		if c.writer.Pending() > 0 {
			c.retry = true
			c.mu.Lock()
			binds := append(c.binds[:0], c.bindings...)
			c.mu.Unlock()
			for _, b := range binds {
				if err := b.src.Err(); err != nil && c.failed == nil {
					c.failed = err // told once the socket takes the rest
					c.failSource(b, err)
				}
			}
			clear(binds)
			return true
		}
		if c.failed != nil {
			c.Close(c.failed)
			return false
		}
	}
	// Gather and write until the socket is full, nothing is left, or a
	// round's share is used up.
	for range maxGathers {
		closeAfter, held, failed := c.gather(now)
		if failed != nil {
			c.failed = failed
		}
		if held {
			c.retry = true // the hub's queue is not polled until then
		}
		if c.writer.Pending() == 0 {
			if closeAfter || c.failed != nil {
				c.Close(c.failed)
				return false
			}
			return true
		}
		full := c.writer.Pending() >= c.pollBytes(now)/2 // the source may have more
		if !c.flushSome(now) {
			return false
		}
		if c.writer.Pending() == 0 && (c.failed != nil || closeAfter) {
			c.Close(c.failed)
			return false
		}
		if c.writer.Pending() > 0 {
			c.recheck() // the socket is full: ask the kernel before more media
			c.slowUntil = now.Add(time.Second)
			c.retry = true
			return true
		}
		if !full {
			return true
		}
	}
	c.wake() // more pending: serve again before the next round
	return true
}

func (c *Conn) recheck() {
	if c.inflight != nil {
		c.inflight.recheck()
	}
}

// maxGathers bounds how many batches one connection writes per round, so a
// fast stream cannot keep a worker from the other connections.
const maxGathers = 8

// flushSome writes what the socket takes now. A socket that took nothing for
// WriteTimeout closes the connection. It reports false when it closed it.
func (c *Conn) flushSome(now time.Time) bool {
	before := c.writer.Pending()
	c.rawErr = nil
	if err := c.raw.Write(c.rawWrite); err != nil && c.rawErr == nil {
		c.rawErr = err
	}
	if c.rawErr != nil {
		c.Close(fmt.Errorf("%w: %w", errWrite, c.rawErr))
		return false
	}
	if n := before - c.writer.Pending(); n > 0 {
		c.wrote(n)
		c.stuckSince = time.Time{}
	} else if c.stuckSince.IsZero() {
		c.stuckSince = now
	} else if now.Sub(c.stuckSince) > c.cfg.WriteTimeout {
		c.cfg.Metrics.timedOut(timeoutWrite)
		err := fmt.Errorf("%w: %w: peer took nothing for %v", errWrite, ErrWriteTimeout, c.cfg.WriteTimeout)
		if c.failed != nil {
			// A source ended first (the hub gave up on a viewer that does
			// not read): that is why it goes; its status never got out.
			err = c.failed
		}
		c.Close(err)
		return false
	}
	return true
}

// doRawWrite is the body of raw.Write: one non-blocking attempt.
func (c *Conn) doRawWrite(fd uintptr) bool {
	_, c.rawErr = c.writer.FlushSome(int(fd))
	return true // never wait for the socket: the next round retries
}

// pollBytes bounds one batch of media. Whole batches go to the kernel, even
// past TCP_NOTSENT_LOWAT, which the kernel checks only between its packets,
// so the steps are small (2 × MaxNotSent), and smaller still for a socket
// found full lately (a slow peer): little sits where nothing can be dropped.
func (c *Conn) pollBytes(now time.Time) int {
	switch {
	case c.inflight == nil:
		return c.cfg.BatchBytes
	case !c.inflight.lowat:
		return 2 * c.cfg.MaxNotSent
	case now.Before(c.slowUntil):
		return max(c.cfg.MaxNotSent/2, 1)
	}
	return 2 * c.cfg.MaxNotSent
}

func (c *Conn) appendFrame(b *binding, f *av.Frame) {
	if f.Kind != av.KindEvent {
		if !c.batchMedia {
			c.batchMedia, c.batchFirst = true, f.Timestamp
		}
		c.batchLast = f.Timestamp
	}
	switch f.Kind {
	case av.KindAudio:
		c.writer.AppendMedia(TypeAudio, b.streamID, f.Timestamp, f.Payload)
	case av.KindVideo:
		c.writer.AppendMedia(TypeVideo, b.streamID, f.Timestamp, f.Payload)
	case av.KindData:
		c.writer.AppendMedia(TypeDataAMF0, b.streamID, f.Timestamp, f.Payload)
	case av.KindEvent:
		if b.onEvent != nil {
			for _, m := range b.onEvent(f.Event) {
				c.writer.Append(&m)
			}
		}
	}
}

func ackMessage(n uint32) Message {
	p := make([]byte, 4)
	binary.BigEndian.PutUint32(p, n)
	return Message{Type: TypeAck, Payload: p}
}

func windowAckMessage(n uint32) Message {
	p := make([]byte, 4)
	binary.BigEndian.PutUint32(p, n)
	return Message{Type: TypeWindowAckSize, Payload: p}
}

func peerBandwidthMessage(n uint32) Message {
	p := make([]byte, 5)
	binary.BigEndian.PutUint32(p, n)
	p[4] = 2 // dynamic
	return Message{Type: TypeSetPeerBandwidth, Payload: p}
}

func chunkSizeMessage(n uint32) Message {
	p := make([]byte, 4)
	binary.BigEndian.PutUint32(p, n)
	return Message{Type: TypeSetChunkSize, Payload: p}
}

// UserControlMessage builds a user control event with a stream id argument.
func UserControlMessage(event uint16, streamID uint32) Message {
	p := make([]byte, 6)
	binary.BigEndian.PutUint16(p, event)
	binary.BigEndian.PutUint32(p[2:], streamID)
	return Message{Type: TypeUserControl, Payload: p}
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

func setBufferLengthMessage(streamID, ms uint32) Message {
	p := make([]byte, 10)
	binary.BigEndian.PutUint16(p, EventSetBufferLength)
	binary.BigEndian.PutUint32(p[2:], streamID)
	binary.BigEndian.PutUint32(p[6:], ms)
	return Message{Type: TypeUserControl, Payload: p}
}

// readBuffer is the size of a connection's read buffer. Viewers send
// little (a thousand of them would keep 4 MiB in 4 KiB buffers); a
// publisher's large chunks bypass the buffer (bufio reads straight into the
// message when the buffer is empty and the read is larger).
const readBuffer = 1 << 10
