package drills

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DelayProxy is a TCP proxy that delivers every byte a fixed latency after
// it arrived, in each direction: the stand-in for tc netem on kernels
// without sch_netem. The delay is chosen per connection from the client's
// address (so one proxy in front of a server gives each region its own
// latency). What is in flight is bounded per direction: when Buffer bytes
// wait, the proxy stops reading and TCP pushes back on the sender.
type DelayProxy struct {
	// Listener is where clients connect.
	Listener net.Listener
	// Dial connects to the server behind the proxy.
	Dial func(ctx context.Context) (net.Conn, error)
	// Delay is the one-way latency for a client (0: none).
	Delay func(client net.Addr) time.Duration
	// Buffer bounds the bytes waiting in each direction (default 256 KiB).
	Buffer int

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup

	buffered    atomic.Int64 // bytes read and not yet written, all directions
	maxBuffered atomic.Int64 // the most any one direction held
}

const proxyChunk = 16 << 10

var chunkPool = sync.Pool{New: func() any { b := make([]byte, proxyChunk); return &b }}

// Serve accepts connections until ctx ends or Close is called.
func (p *DelayProxy) Serve(ctx context.Context) error {
	if p.Buffer <= 0 {
		p.Buffer = 256 << 10
	}
	stop := context.AfterFunc(ctx, p.Close)
	defer stop()
	for {
		c, err := p.Listener.Accept()
		if err != nil {
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed || ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		if !p.track(c) {
			c.Close()
			return nil
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.handle(ctx, c)
		}()
	}
}

func (p *DelayProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	if p.conns == nil {
		p.conns = map[net.Conn]struct{}{}
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *DelayProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Close stops accepting, closes every connection and waits for them.
func (p *DelayProxy) Close() {
	p.mu.Lock()
	p.closed = true
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	p.Listener.Close()
	for _, c := range conns {
		c.Close()
	}
	p.wg.Wait()
}

// Conns is how many connections (client and server side) are open.
func (p *DelayProxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// MaxBuffered is the most bytes one direction of one connection held.
func (p *DelayProxy) MaxBuffered() int64 { return p.maxBuffered.Load() }

func (p *DelayProxy) handle(ctx context.Context, client net.Conn) {
	defer p.untrack(client)
	defer client.Close()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	server, err := p.Dial(dctx)
	cancel()
	if err != nil {
		return
	}
	if !p.track(server) {
		server.Close()
		return
	}
	defer p.untrack(server)
	defer server.Close()
	var d time.Duration
	if p.Delay != nil {
		d = max(0, p.Delay(client.RemoteAddr()))
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(server, client, d) }()
	go func() { defer wg.Done(); p.pipe(client, server, d) }()
	wg.Wait()
}

type chunk struct {
	buf *[]byte
	n   int
	due time.Time
}

// pipe copies src to dst, each chunk written d after it was read. A read
// error or EOF ends the direction after what was read is delivered (EOF is
// passed on as a half close); a write error closes both ends.
func (p *DelayProxy) pipe(dst, src net.Conn, d time.Duration) {
	slots := max(2, p.Buffer/proxyChunk)
	ch := make(chan chunk, slots)
	var held atomic.Int64 // bytes of this direction waiting
	done := make(chan struct{})
	go func() {
		defer close(done)
		broken := false
		for c := range ch {
			if !broken {
				if wait := time.Until(c.due); wait > 0 {
					time.Sleep(wait)
				}
				if _, err := dst.Write((*c.buf)[:c.n]); err != nil {
					broken = true
					src.Close()
					dst.Close()
				}
			}
			held.Add(-int64(c.n))
			p.buffered.Add(-int64(c.n))
			chunkPool.Put(c.buf)
		}
		if !broken {
			if cw, ok := dst.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
			} else {
				dst.Close()
			}
		}
	}()
	for {
		buf := chunkPool.Get().(*[]byte)
		// Never more than Buffer bytes waiting: read at most what is left.
		room := p.Buffer - int(held.Load())
		for room <= 0 {
			time.Sleep(time.Millisecond)
			room = p.Buffer - int(held.Load())
		}
		n, err := src.Read((*buf)[:min(proxyChunk, room)])
		if n > 0 {
			h := held.Add(int64(n))
			p.buffered.Add(int64(n))
			for {
				m := p.maxBuffered.Load()
				if h <= m || p.maxBuffered.CompareAndSwap(m, h) {
					break
				}
			}
			ch <- chunk{buf: buf, n: n, due: time.Now().Add(d)}
		} else {
			chunkPool.Put(buf)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				dst.Close()
			}
			break
		}
	}
	close(ch)
	<-done
}
