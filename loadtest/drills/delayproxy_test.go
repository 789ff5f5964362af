package drills

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"
)

// startProxy puts a DelayProxy with the given delay in front of the server on ln.
func startProxy(t *testing.T, server net.Listener, delay func(net.Addr) time.Duration, buffer int) *DelayProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &DelayProxy{
		Listener: ln,
		Dial: func(ctx context.Context) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "tcp", server.Addr().String())
		},
		Delay:  delay,
		Buffer: buffer,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return p
}

func fixed(d time.Duration) func(net.Addr) time.Duration {
	return func(net.Addr) time.Duration { return d }
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// echo serves each connection by copying it back, then half-closing.
func echo(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_, _ = io.Copy(c, c)
			_ = c.(*net.TCPConn).CloseWrite()
		}()
	}
}

// Every byte arrives intact, in order, both ways, and the client's half
// close reaches the server (which answers its EOF with its own).
func TestDelayProxyCopiesBothWays(t *testing.T) {
	srv := listen(t)
	go echo(srv)
	p := startProxy(t, srv, fixed(2*time.Millisecond), 64<<10)
	c, err := net.Dial("tcp", p.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := make([]byte, 3<<20)
	_, _ = rand.Read(want)
	go func() {
		_, _ = c.Write(want)
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("echoed %d bytes, want the %d sent", len(got), len(want))
	}
	if m := p.MaxBuffered(); m > 64<<10 {
		t.Errorf("one direction held %d bytes, bound is %d", m, 64<<10)
	}
}

// A round trip through the proxy takes at least twice the one-way delay
// (a lower bound: the proxy must never deliver early).
func TestDelayProxyDelaysEachDirection(t *testing.T) {
	srv := listen(t)
	go echo(srv)
	const d = 40 * time.Millisecond
	p := startProxy(t, srv, fixed(d), 0)
	c, err := net.Dial("tcp", p.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 1)
	for i := 0; i < 3; i++ {
		start := time.Now()
		if _, err := c.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		if rtt := time.Since(start); rtt < 2*d {
			t.Fatalf("round trip %v, want at least %v", rtt, 2*d)
		}
	}
}

// The delay is chosen from the client's address.
func TestDelayProxyDelayPerClient(t *testing.T) {
	srv := listen(t)
	go echo(srv)
	var asked net.Addr
	seen := make(chan net.Addr, 1)
	p := startProxy(t, srv, func(a net.Addr) time.Duration { seen <- a; return 0 }, 0)
	c, err := net.Dial("tcp", p.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case asked = <-seen:
	case <-time.After(5 * time.Second):
		t.Fatal("Delay not asked")
	}
	if asked.String() != c.LocalAddr().String() {
		t.Fatalf("Delay asked for %v, client is %v", asked, c.LocalAddr())
	}
}

// A server that reads nothing makes the proxy stop reading once Buffer
// bytes wait: the proxy's memory stays bounded and the sender is held back.
func TestDelayProxyBoundsWhatWaits(t *testing.T) {
	srv := listen(t)
	stuck := make(chan net.Conn, 1)
	go func() {
		c, err := srv.Accept()
		if err == nil {
			_ = c.(*net.TCPConn).SetReadBuffer(16 << 10)
			stuck <- c // never read
		}
	}()
	const bound = 32 << 10
	p := startProxy(t, srv, fixed(time.Millisecond), bound)
	c, err := net.Dial("tcp", p.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetWriteDeadline(time.Now().Add(2 * time.Second))
	block := make([]byte, 64<<10)
	var sent int
	for sent < 256<<20 {
		n, err := c.Write(block)
		sent += n
		if err != nil {
			break // the deadline: the sender is held back
		}
	}
	if sent >= 256<<20 {
		t.Fatalf("sent %d bytes into a server that reads nothing", sent)
	}
	if m := p.MaxBuffered(); m > bound {
		t.Fatalf("proxy held %d bytes in one direction, bound %d", m, bound)
	}
	(<-stuck).Close()
}

// Close ends every connection through the proxy.
func TestDelayProxyCloseCutsConnections(t *testing.T) {
	srv := listen(t)
	go echo(srv)
	p := startProxy(t, srv, fixed(0), 0)
	c, err := net.Dial("tcp", p.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	p.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(buf); err == nil {
		t.Fatal("read after Close succeeded")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("connection still open after Close")
	}
	if n := p.Conns(); n != 0 {
		t.Fatalf("%d connections tracked after Close", n)
	}
}
