package rtmp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/relaymesh/relaymesh/internal/av"
)

// closeLog records the "viewer closed" lines of a server.
type closeLog struct {
	mu      sync.Mutex
	reasons []string
}

func (l *closeLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *closeLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *closeLog) WithGroup(string) slog.Handler            { return l }
func (l *closeLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "viewer closed" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "reason" {
			l.mu.Lock()
			l.reasons = append(l.reasons, a.Value.String())
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

func (l *closeLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reasons...)
}

// testHandler plays src (or refuses with playErr), refuses publishes.
type testHandler struct {
	src     func(s *Session) MediaSource
	playErr error
}

func (h *testHandler) Connect(context.Context, *Session, *ConnectRequest) error { return nil }
func (h *testHandler) Publish(context.Context, *Session, *StreamRequest) (Publisher, error) {
	return nil, Status{"error", CodePublishUnauthorized, "no"}
}
func (h *testHandler) Play(_ context.Context, s *Session, _ *StreamRequest) (MediaSource, error) {
	if h.playErr != nil {
		return nil, h.playErr
	}
	return h.src(s), nil
}
func (h *testHandler) Message(context.Context, *Session, Message) {}
func (h *testHandler) Closed(*Session, error)                     {}

type testServer struct {
	addr   string
	m      *Metrics
	log    *closeLog
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup
}

// startTestServer serves h on a loopback port with cfg and fresh Metrics.
func startTestServer(t *testing.T, cfg ConnConfig, h Handler) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	ts := &testServer{addr: ln.Addr().String(), m: NewMetrics(), log: &closeLog{}, cancel: cancel}
	if cfg.WriteBatch > 0 {
		cfg.Flusher = NewFlusher(ctx, cfg.WriteBatch, 1)
	}
	cfg.Metrics = ts.m
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			ts.wg.Add(1)
			go func() { defer ts.wg.Done(); Serve(ctx, nc, &cfg, h, slog.New(ts.log)) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); cancel(nil); ts.wg.Wait() })
	return ts
}

func (ts *testServer) play(t *testing.T) (*ClientConn, uint32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cc, err := Dial(ctx, URL{Host: ts.addr, App: "live"}, ConnConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close(nil) })
	id, err := cc.Play(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	return cc, id
}

// waitCount waits until the counter reaches want.
func waitCount(t *testing.T, what string, get func() float64, want float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for get() < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v, want %v", what, get(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := get(); got != want {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
}

func (ts *testServer) closed(reason string) func() float64 {
	return func() float64 { return counterValue(ts.m.viewersClosed.WithLabelValues(reason)) }
}

// Every way a playing stream ends is logged once and counted once under
// its reason, with the goroutine writer and with the Flusher.
func TestViewerCloseReasons(t *testing.T) {
	big := func(s *Session) MediaSource {
		src := &memSource{}
		for i := range 4 {
			src.push(video(uint32(i*40), 16<<20)) // more than the socket buffers take
		}
		return src
	}
	failing := func(err error) func(*Session) MediaSource {
		return func(*Session) MediaSource { return &memSource{err: err} }
	}
	quiet := func(*Session) MediaSource { return &memSource{} }
	cases := []struct {
		reason string
		src    func(*Session) MediaSource
		cfg    ConnConfig
		do     func(t *testing.T, ts *testServer, cc *ClientConn, id uint32)
	}{
		{ReasonEOF, quiet, ConnConfig{}, func(t *testing.T, ts *testServer, cc *ClientConn, id uint32) { cc.Close(nil) }},
		{ReasonStopped, quiet, ConnConfig{}, func(t *testing.T, ts *testServer, cc *ClientConn, id uint32) {
			_ = cc.SendCommand(id, "deleteStream", 0.0, nil, float64(id))
		}},
		{ReasonWriteTimeout, big, ConnConfig{WriteTimeout: 300 * time.Millisecond}, nil},
		{ReasonTooSlow, failing(WithReason(ReasonTooSlow, errors.New("hub: viewer too slow"))), ConnConfig{}, nil},
		{ReasonOverflow, failing(WithReason(ReasonOverflow, errors.New("overflow"))), ConnConfig{}, nil},
		{ReasonStreamEnded, failing(WithReason(ReasonStreamEnded, Status{"status", CodePlayStop, "gone"})), ConnConfig{}, nil},
		// The client reads nothing; the server's data messages (sent by the
		// handler, below) pile up.
		{ReasonControlQueue, quiet, ConnConfig{ControlQueue: 16, WriteTimeout: time.Minute}, nil},
		{ReasonProtocol, quiet, ConnConfig{}, func(t *testing.T, ts *testServer, cc *ClientConn, id uint32) {
			_ = cc.Send(Message{Type: TypeSetChunkSize, Payload: []byte{0}}) // short
		}},
		{ReasonDrain, quiet, ConnConfig{}, func(t *testing.T, ts *testServer, cc *ClientConn, id uint32) {
			ts.cancel(WithReason(ReasonDrain, ErrServerClosing))
		}},
		{ReasonShutdown, quiet, ConnConfig{}, func(t *testing.T, ts *testServer, cc *ClientConn, id uint32) { ts.cancel(nil) }},
	}
	for _, writer := range []string{"goroutine", "flusher"} {
		for _, c := range cases {
			t.Run(writer+"/"+c.reason, func(t *testing.T) {
				cfg := c.cfg
				if writer == "flusher" {
					cfg.WriteBatch = 20 * time.Millisecond
				}
				h := &testHandler{src: c.src}
				if c.reason == ReasonControlQueue {
					h.src = func(s *Session) MediaSource {
						go func() {
							time.Sleep(200 * time.Millisecond) // after the play's answers
							payload := make([]byte, 1<<20)
							for range 1000 {
								if s.Conn.Send(Message{Type: TypeDataAMF0, StreamID: 1, Payload: payload}) != nil {
									return
								}
							}
						}()
						return &memSource{}
					}
				}
				ts := startTestServer(t, cfg, h)
				cc, id := ts.play(t)
				if c.do != nil {
					c.do(t, ts, cc, id)
				}
				waitCount(t, c.reason, ts.closed(c.reason), 1)
				time.Sleep(50 * time.Millisecond) // a second count or log would show now
				if got := ts.log.get(); len(got) != 1 || got[0] != c.reason {
					t.Fatalf("logged %q, want one %q", got, c.reason)
				}
				var total float64
				for _, r := range []string{ReasonEOF, ReasonStopped, ReasonWriteTimeout, ReasonWriteError, ReasonTooSlow, ReasonOverflow,
					ReasonStreamEnded, ReasonControlQueue, ReasonIdleTimeout, ReasonProtocol, ReasonDrain, ReasonShutdown, ReasonClosed, ReasonOther} {
					total += ts.closed(r)()
				}
				if total != 1 {
					t.Fatalf("%v closes counted, want 1", total)
				}
				if c.reason == ReasonWriteTimeout {
					if n := counterValue(ts.m.timeouts.WithLabelValues(timeoutWrite)); n != 1 {
						t.Fatalf("write timeouts %v, want 1", n)
					}
				}
			})
		}
	}
}

// Handshake failures by reason, and handshake and idle timeouts.
func TestHandshakeAndTimeoutCounters(t *testing.T) {
	ts := startTestServer(t, ConnConfig{HandshakeTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond}, &testHandler{src: func(*Session) MediaSource { return &memSource{} }})
	dial := func() net.Conn {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		return nc
	}
	hs := func(r string) func() float64 {
		return func() float64 { return counterValue(ts.m.handshake.WithLabelValues(r)) }
	}
	to := func(k string) func() float64 {
		return func() float64 { return counterValue(ts.m.timeouts.WithLabelValues(k)) }
	}

	_, _ = dial().Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	waitCount(t, "not_rtmp", hs(handshakeNotRTMP), 1)

	dial() // says nothing
	waitCount(t, "handshake timeout", hs(handshakeTimeout), 1)
	waitCount(t, "handshake timeouts", to(timeoutHandshake), 1)

	nc := dial()
	_, _ = nc.Write([]byte{3, 1, 2, 3})
	nc.Close()
	waitCount(t, "eof", hs(handshakeEOF), 1)

	// Connected, then silent: the idle timeout.
	cc, err := Dial(context.Background(), URL{Host: ts.addr, App: "live"}, ConnConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close(nil)
	waitCount(t, "idle timeouts", to(timeoutIdle), 1)
	if n := to(timeoutWrite)(); n != 0 {
		t.Fatalf("write timeouts %v", n)
	}
}

// Refused connect, publish and play, by status code.
func TestRefusedCounters(t *testing.T) {
	ts := startTestServer(t, ConnConfig{}, &testHandler{playErr: Status{"error", CodePlayStreamNotFound, "nobody"}})
	ref := func(cmd, code string) func() float64 {
		return func() float64 { return counterValue(ts.m.requests.WithLabelValues(cmd, code)) }
	}
	ctx := context.Background()
	if _, err := Dial(ctx, URL{Host: ts.addr, App: ""}, ConnConfig{}, nil); err == nil {
		t.Fatal("connect without app accepted")
	}
	waitCount(t, "refused connect", ref("connect", CodeConnectRejected), 1)

	cc, err := Dial(ctx, URL{Host: ts.addr, App: "live"}, ConnConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close(nil)
	if _, err := cc.Play(ctx, "s"); err == nil {
		t.Fatal("play accepted")
	}
	waitCount(t, "refused play", ref("play", CodePlayStreamNotFound), 1)
	if _, err := cc.Publish(ctx, "s"); err == nil {
		t.Fatal("publish accepted")
	}
	waitCount(t, "refused publish", ref("publish", CodePublishUnauthorized), 1)
	if got := ts.log.get(); len(got) != 0 {
		t.Fatalf("refused plays logged as viewer closes: %q", got)
	}
}

var _ = av.KindVideo

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// Every reason, from the errors a connection is closed with.
func TestCloseReasonClassifies(t *testing.T) {
	timeout := &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}
	for _, c := range []struct {
		err  error
		want string
	}{
		{io.EOF, ReasonEOF},
		{fmt.Errorf("%w: %w", errWrite, syscall.EPIPE), ReasonEOF},
		{fmt.Errorf("%w: %w", errWrite, syscall.ECONNRESET), ReasonEOF},
		{fmt.Errorf("%w: %w", errWrite, syscall.EHOSTUNREACH), ReasonWriteError},
		{fmt.Errorf("%w: %w: peer took nothing", errWrite, ErrWriteTimeout), ReasonWriteTimeout},
		{fmt.Errorf("%w: %w", errWrite, fmt.Errorf("%w: %w", ErrWriteTimeout, timeout)), ReasonWriteTimeout},
		{WithReason(ReasonTooSlow, errors.New("x")), ReasonTooSlow},
		{WithReason(ReasonOverflow, errors.New("x")), ReasonOverflow},
		{WithReason(ReasonStreamEnded, Status{"status", CodePlayStop, "x"}), ReasonStreamEnded},
		{ErrControlQueueFull, ReasonControlQueue},
		{timeout, ReasonIdleTimeout},
		{protocolErr("short"), ReasonProtocol},
		{WithReason(ReasonDrain, ErrServerClosing), ReasonDrain},
		{ErrServerClosing, ReasonShutdown},
		{ErrClosed, ReasonClosed},
		{Status{"error", CodePublishBadName, "x"}, ReasonClosed},
		{errors.New("something else"), ReasonOther},
	} {
		if got := CloseReason(c.err); got != c.want {
			t.Errorf("CloseReason(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
