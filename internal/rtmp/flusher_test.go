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

// Rounds of viewers grow with the audience of a worker, up to 9/10 of the
// interval.
func TestFlusherGap(t *testing.T) {
	f := &Flusher{interval: 100 * time.Millisecond, cfg: FlusherConfig{}.withDefaults()}
	for _, c := range []struct {
		n    int
		want time.Duration
	}{{0, 0}, {1, 175781}, {256, 45 * time.Millisecond}, {512, 90 * time.Millisecond}, {5000, 90 * time.Millisecond}} {
		if got := f.Gap(c.n); got != c.want {
			t.Errorf("Gap(%d) = %v, want %v", c.n, got, c.want)
		}
	}
}

// A small audience is served by one worker; the next one takes over once
// the first has ConnsPerWorker connections.
func TestFlusherFewerWorkersForFewViewers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := NewAdaptiveFlusher(ctx, time.Second, FlusherConfig{Workers: 2, ConnsPerWorker: 2})
	var got []*flushWorker
	for range 4 {
		got = append(got, f.attach(&Conn{}))
	}
	if got[0] != f.workers[0] || got[1] != f.workers[0] {
		t.Errorf("the first two connections went to workers %p %p, want both on %p", got[0], got[1], f.workers[0])
	}
	if got[2] != f.workers[1] {
		t.Errorf("the third connection did not go to the second worker")
	}
	for _, w := range f.workers { // not real connections: nothing to close
		w.mu.Lock()
		w.incoming = nil
		w.mu.Unlock()
	}
}

// Frames that become pending later are written without a control message
// or a periodic round: MediaReady schedules the round.
func TestFlusherMediaReady(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := NewFlusher(ctx, 50*time.Millisecond, 1)
	srv, cli := flusherPair(t, f, ConnConfig{})
	src := &memSource{}
	srv.Bind(1, src, nil, nil)
	cli.SetReadTimeout(5 * time.Second)
	for i := range 20 {
		src.push(video(uint32(i*33), 1000+i))
		srv.MediaReady()
		m, err := cli.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if m.Type != TypeVideo || m.Timestamp != uint32(i*33) {
			t.Fatalf("frame %d: type %d ts %d", i, m.Type, m.Timestamp)
		}
	}
}

// A connection with nothing to write costs its worker no round: only the
// housekeeping one, every second.
func TestFlusherIdleConnectionNoRounds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := NewFlusher(ctx, 10*time.Millisecond, 1)
	srv, _ := flusherPair(t, f, ConnConfig{})
	srv.Bind(1, &memSource{}, nil, nil)
	time.Sleep(100 * time.Millisecond) // attached, served once
	before := f.workers[0].rounds.Load()
	time.Sleep(500 * time.Millisecond) // 50 rounds of the interval
	if n := f.workers[0].rounds.Load() - before; n > 1 {
		t.Errorf("%d rounds for an idle connection in 500ms", n)
	}
}

// A downstream relay's link is written in whole rounds on a grid shared by
// every worker.
func TestFlusherRelayLinkOnGrid(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const interval = 200 * time.Millisecond
	f := NewFlusher(ctx, interval, 1)
	srv, cli := flusherPair(t, f, ConnConfig{})
	srv.relayLink.Store(true)
	src := &memSource{}
	srv.Bind(1, src, nil, nil)
	cli.SetReadTimeout(5 * time.Second)
	var at []time.Time
	for i := range 6 {
		src.push(video(uint32(i*33), 1000))
		srv.MediaReady()
		if _, err := cli.ReadMessage(); err != nil {
			t.Fatal(err)
		}
		at = append(at, time.Now())
	}
	// After the first frame, each was written in a later round of the grid.
	for i := 2; i < len(at); i++ {
		if a, b := at[i-1].Truncate(interval), at[i].Truncate(interval); !b.After(a) {
			t.Errorf("frames %d and %d were written in the same grid interval", i-1, i)
		}
	}
}

// A burst that reaches the hub in two parts (the second a little later) is
// written whole as it comes, not its second part a Gap after the first;
// media that trickles in a frame at a time waits for the Gap (burst.go).
func TestFlusherBurstNotHeldByGap(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// One connection already has the whole Gap: 9/10 of a second.
	f := NewAdaptiveFlusher(ctx, time.Second, FlusherConfig{Workers: 1, FullBatchConns: 1})
	srv, cli := flusherPair(t, f, ConnConfig{})
	src := &memSource{}
	srv.Bind(1, src, nil, nil)
	cli.SetReadTimeout(5 * time.Second)
	frame := func(ts uint32) *av.Frame {
		v := video(ts, 500)
		v.Arrived = av.Monotonic()
		return v
	}
	read := func(n int) time.Time {
		t.Helper()
		for range n {
			if _, err := cli.ReadMessage(); err != nil {
				t.Fatal(err)
			}
		}
		return time.Now()
	}
	// The first part of a burst: 100 ms of media arriving at once.
	for i := range 4 {
		src.push(frame(uint32(i * 25)))
	}
	srv.MediaReady()
	first := read(4)
	// Its second part, 5 ms later.
	time.Sleep(5 * time.Millisecond)
	for i := 4; i < 6; i++ {
		src.push(frame(uint32(i * 25)))
	}
	srv.MediaReady()
	if d := read(2).Sub(first); d > 300*time.Millisecond {
		t.Errorf("the rest of a burst was written %v after its first part, want it as it came (the Gap is 900ms)", d)
	}

	// Trickling media: a frame, then the next; the second waits for the Gap.
	time.Sleep(950 * time.Millisecond) // past any Gap of the bursts
	src.push(frame(200))
	srv.MediaReady()
	first = read(1)
	src.push(frame(225))
	srv.MediaReady()
	if d := read(1).Sub(first); d < 500*time.Millisecond {
		t.Errorf("a trickled frame was written %v after the one before, want the Gap (900ms)", d)
	}
}
