package rtmp

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
)

// memSource is a MediaSource fed by the test.
type memSource struct {
	mu     sync.Mutex
	frames []*av.Frame
	polled int // payload bytes handed out
	err    error
	closed bool
}

func (s *memSource) push(f *av.Frame) {
	s.mu.Lock()
	s.frames = append(s.frames, f)
	s.mu.Unlock()
}

func (s *memSource) Poll(dst []*av.Frame, maxBytes int) ([]*av.Frame, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return dst, s.err
	}
	n := 0
	for len(s.frames) > 0 && (n == 0 || n+len(s.frames[0].Payload) <= maxBytes) {
		f := s.frames[0]
		s.frames = s.frames[1:]
		n += len(f.Payload)
		dst = append(dst, f)
	}
	s.polled += n
	return dst, nil
}

func (s *memSource) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *memSource) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

func (s *memSource) stats() (queued, polled int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.frames), s.polled
}

// flusherPair connects a client to a server connection written by f.
func flusherPair(t *testing.T, f *Flusher, cfg ConnConfig) (server, client *Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg.Flusher = f
	type res struct {
		c   *Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			ch <- res{nil, err}
			return
		}
		c, err := Accept(nc, cfg, nil)
		ch <- res{c, err}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client, err = Client(nc, ConnConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.c.worker == nil {
		t.Fatal("the server connection is not driven by the flusher")
	}
	t.Cleanup(func() { r.c.Close(nil); client.Close(nil) })
	return r.c, client
}

func video(ts uint32, n int) *av.Frame {
	p := make([]byte, n)
	p[0] = 0x27
	return &av.Frame{Kind: av.KindVideo, Timestamp: ts, Payload: p}
}

// Control messages do not wait for the round; media arrives in order.
func TestFlusherControlNowMediaInRounds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := NewFlusher(ctx, time.Second, 1)
	srv, cli := flusherPair(t, f, ConnConfig{})

	start := time.Now()
	if err := srv.SendCommand(0, "onStatus", 0.0, nil, "hello"); err != nil {
		t.Fatal(err)
	}
	cli.SetReadTimeout(5 * time.Second)
	m, err := cli.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if cmd, err := ParseCommand(m); err != nil || cmd.Name != "onStatus" {
		t.Fatalf("got %v %v", cmd, err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("a control message waited %v for the round", d)
	}

	src := &memSource{}
	for i := range 50 {
		src.push(video(uint32(i*40), 3000+i))
	}
	srv.Bind(1, src, nil, nil)
	for i := range 50 {
		m, err := cli.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if m.Type != TypeVideo || m.Timestamp != uint32(i*40) || len(m.Payload) != 3000+i {
			t.Fatalf("frame %d: type %d ts %d len %d", i, m.Type, m.Timestamp, len(m.Payload))
		}
	}
}

// A peer that does not read gets what the kernel takes; the rest of the
// media stays in the source, where a hub drops it and decides when the
// viewer is too slow to keep.
func TestFlusherPeerNotReading(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := NewFlusher(ctx, 10*time.Millisecond, 1)
	srv, _ := flusherPair(t, f, ConnConfig{WriteTimeout: 500 * time.Millisecond})
	src := &memSource{}
	const frames, size = 500, 20000 // 10 MB
	for i := range frames {
		src.push(video(uint32(i*40), size))
	}
	srv.Bind(1, src, nil, nil)
	time.Sleep(time.Second)
	queued, polled := src.stats()
	if polled > 2<<20 {
		t.Errorf("%d bytes were taken from the source for a peer that reads nothing", polled)
	}
	if queued == 0 {
		t.Error("nothing stayed in the source")
	}
	select {
	case <-srv.Done():
		t.Fatalf("closed (%v) while the source still plays", srv.Err())
	default:
	}
}

// A message the socket does not take for WriteTimeout closes the connection.
func TestFlusherWriteTimeout(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := NewFlusher(ctx, 10*time.Millisecond, 1)
	srv, _ := flusherPair(t, f, ConnConfig{WriteTimeout: 300 * time.Millisecond})
	big := make([]byte, 8<<20)
	if err := srv.Send(Message{Type: TypeDataAMF0, StreamID: 1, Payload: big}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a peer that reads nothing was not closed")
	}
	if err := srv.Err(); err == nil || errors.Is(err, ErrClosed) {
		t.Errorf("closed with %v, want a write timeout", err)
	}
}

// A media source that fails: its status message is written, then the
// connection closes.
func TestFlusherSourceError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := NewFlusher(ctx, 10*time.Millisecond, 1)
	srv, cli := flusherPair(t, f, ConnConfig{})
	src := &memSource{err: errors.New("too slow")}
	srv.Bind(1, src, nil, func(err error) []Message {
		return []Message{StatusMessage(1, Status{"error", CodePlayInsufficientBW, err.Error()})}
	})
	cli.SetReadTimeout(5 * time.Second)
	m, err := cli.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := ParseCommand(m)
	if err != nil || cmd.Name != "onStatus" {
		t.Fatalf("got %v %v", cmd, err)
	}
	select {
	case <-srv.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("not closed after the source failed")
	}
}

// Stopping the flusher closes the connections it writes.
func TestFlusherStopClosesConns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := NewFlusher(ctx, 10*time.Millisecond, 2)
	a, _ := flusherPair(t, f, ConnConfig{})
	b, _ := flusherPair(t, f, ConnConfig{})
	time.Sleep(50 * time.Millisecond) // both attached and served once
	cancel()
	for _, c := range []*Conn{a, b} {
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("a connection outlived its flusher")
		}
	}
}
