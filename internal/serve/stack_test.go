package serve

import (
	"context"
	"io"
	"net"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// A viewer's connection goroutine waits in a read for the whole of its
// life, so its stack is most of what a viewer costs beyond its buffers: the
// runtime halves a stack at a collection while less than a quarter of it is
// in use, and what is on the stack during that wait decides between 8 KiB
// and 4 KiB a viewer (4 MiB at 1,000 viewers). Playing viewers, their
// goroutines parked after the connect and play have grown their stacks,
// must come down to 4 KiB each.
func TestParkedViewerStack(t *testing.T) {
	const viewers = 200
	h := &idleHandler{}
	srv := &Server{Handler: h, Conn: rtmp.ConnConfig{WriteBatch: 100 * time.Millisecond}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ctx, ln, 0) }()
	defer func() { cancel(); <-done }()

	before, g0 := parkedStacks()
	conns := make([]net.Conn, 0, viewers)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range viewers {
		c, err := rawPlay(ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	deadline := time.Now().Add(20 * time.Second)
	for h.plays.Load() < viewers && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := h.plays.Load(); n < viewers {
		t.Fatalf("%d of %d viewers playing", n, viewers)
	}
	time.Sleep(100 * time.Millisecond) // every session back in its read
	after, g1 := parkedStacks()
	if g1-g0 < viewers {
		t.Fatalf("%d goroutines more for %d viewers", g1-g0, viewers)
	}
	per := float64(after-before) / float64(g1-g0)
	t.Logf("stacks: %.0f bytes per goroutine added (%d goroutines, %d bytes)", per, g1-g0, after-before)
	if limit := float64(stackLimit); per > limit {
		t.Errorf("a parked viewer keeps %.0f bytes of stack, want at most %.0f: what its goroutine has on the stack while it waits for the peer grew (rtmp.Serve, Session.loop, Conn.ReadMessage)", per, limit)
	}
}

// parkedStacks collects until the stacks stop shrinking (each collection
// halves a stack at most once) and returns the bytes of stack in use and the
// number of goroutines.
func parkedStacks() (uint64, int) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	var last uint64
	for range 8 {
		runtime.GC()
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v == last {
			break
		} else {
			last = v
		}
	}
	return last, runtime.NumGoroutine()
}

// rawPlay connects as a player would, writing its side by hand (a simple
// handshake, connect, createStream, play) with no goroutine of its own in
// this process, and leaves the server's answers unread.
func rawPlay(addr string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	c0c1 := make([]byte, 1+1536)
	c0c1[0] = 3
	if _, err := c.Write(c0c1); err != nil {
		c.Close()
		return nil, err
	}
	s := make([]byte, 1+2*1536)
	if _, err := io.ReadFull(c, s); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := c.Write(s[1 : 1+1536]); err != nil { // C2 echoes S1
		c.Close()
		return nil, err
	}
	w := rtmp.NewChunkWriter()
	for _, vals := range [][]any{
		{"connect", 1.0, map[string]any{"app": "live", "tcUrl": "rtmp://" + addr + "/live"}},
		{"createStream", 2.0, nil},
	} {
		m, err := rtmp.CommandMessage(0, vals...)
		if err != nil {
			c.Close()
			return nil, err
		}
		w.Append(&m)
	}
	m, err := rtmp.CommandMessage(1, "play", 3.0, nil, "cam")
	if err != nil {
		c.Close()
		return nil, err
	}
	w.Append(&m)
	if err := w.Flush(c); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// idleHandler accepts every connection and plays a stream that never has a
// frame.
type idleHandler struct{ plays atomic.Int64 }

func (h *idleHandler) Connect(context.Context, *rtmp.Session, *rtmp.ConnectRequest) error {
	return nil
}

func (h *idleHandler) Publish(context.Context, *rtmp.Session, *rtmp.StreamRequest) (rtmp.Publisher, error) {
	return nil, rtmp.Status{Level: "error", Code: rtmp.CodePublishBadName}
}

func (h *idleHandler) Play(context.Context, *rtmp.Session, *rtmp.StreamRequest) (rtmp.MediaSource, error) {
	h.plays.Add(1)
	return idleSource{}, nil
}

func (h *idleHandler) Message(context.Context, *rtmp.Session, rtmp.Message) {}
func (h *idleHandler) Closed(*rtmp.Session, error)                          {}

type idleSource struct{}

func (idleSource) Poll(dst []*av.Frame, _ int) ([]*av.Frame, error) { return dst, nil }
func (idleSource) Err() error                                       { return nil }
func (idleSource) Close()                                           {}
