package swarm

import (
	"context"
	"encoding/binary"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/internal/hub"
	"github.com/relaymesh/relaymesh/internal/serve"
)

var (
	testAVCSeq = []byte{0x17, 0x00, 0x00, 0x00, 0x00, 0x01, 0x64, 0x00, 0x1e, 0xff, 0xe1, 0x00, 0x1a, 0x67, 0x64, 0x00, 0x1e, 0xac, 0xd9, 0x40, 0xa0, 0x2f, 0xf9, 0x70, 0x11, 0x00, 0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x03, 0x00, 0x32, 0x0f, 0x16, 0x2d, 0x96, 0x01, 0x00, 0x06, 0x68, 0xeb, 0xe3, 0xcb, 0x22, 0xc0, 0xfd, 0xf8, 0xf8, 0x00}
	testAACSeq = []byte{0xaf, 0x00, 0x12, 0x08, 0x56, 0xe5, 0x00}
)

// testServer is an RTMP server with one stream, live/test, fed in real
// time with 25 fps video in 1 s GOPs while it is live.
type testServer struct {
	addr   string
	hub    *hub.Hub
	cancel context.CancelFunc
	done   chan struct{}
	live   atomic.Bool
}

func startServer(t *testing.T) *testServer {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	reg := hub.NewRegistry(hub.Config{}, log)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &testServer{addr: ln.Addr().String(), hub: reg.Acquire("live", "test"), cancel: cancel, done: make(chan struct{})}
	srv := &serve.Server{Handler: serve.NewHandler(serve.Options{Hubs: reg, Log: log}), Log: log}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_ = srv.Serve(ctx, ln, 0)
	}()
	go func() {
		defer wg.Done()
		s.feed(ctx)
	}()
	go func() {
		wg.Wait()
		close(s.done)
	}()
	s.begin()
	t.Cleanup(func() { s.kill() })
	return s
}

func (s *testServer) begin() {
	s.hub.Begin(hub.PublisherInfo{ID: "test"})
	s.hub.Write(av.KindVideo, 0, append([]byte(nil), testAVCSeq...))
	s.hub.Write(av.KindAudio, 0, append([]byte(nil), testAACSeq...))
	s.live.Store(true)
}

// unpublish ends the stream: its viewers get NetStream.Play.UnpublishNotify.
func (s *testServer) unpublish() {
	s.live.Store(false)
	s.hub.End()
}

// kill closes the server and every connection at once.
func (s *testServer) kill() {
	s.cancel()
	<-s.done
}

func (s *testServer) feed(ctx context.Context) {
	t := time.NewTicker(40 * time.Millisecond)
	defer t.Stop()
	start := time.Now()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !s.live.Load() {
			i = -1 // start again with a keyframe
			continue
		}
		ts := uint32(time.Since(start).Milliseconds())
		ft, nal, n := byte(2), byte(0x41), 1500
		if i%25 == 0 {
			ft, nal, n = 1, 0x65, 8000
		}
		b := []byte{ft<<4 | av.CodecAVC, 1, 0, 0, 0}
		b = binary.BigEndian.AppendUint32(b, uint32(n))
		b = append(b, nal)
		b = append(b, make([]byte, n-1)...)
		s.hub.Write(av.KindVideo, ts, b)
		s.hub.Write(av.KindAudio, ts, append([]byte{0xaf, 1}, make([]byte, 200)...))
	}
}

// TestReconnectVia: players follow the redirector after an unpublish on one
// server and after another server is killed, and the report counts the
// reconnects and their time to picture.
func TestReconnectVia(t *testing.T) {
	a, b := startServer(t), startServer(t)
	var target atomic.Value
	target.Store(a.addr)
	var asked atomic.Int64
	redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Redirect(w, r, "rtmp://"+target.Load().(string)+"/live/test", http.StatusFound)
	}))
	defer redir.Close()

	go func() {
		time.Sleep(2 * time.Second)
		target.Store(b.addr)
		a.unpublish()
		time.Sleep(2 * time.Second)
		target.Store(a.addr)
		a.begin()
		b.kill()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := Run(ctx, Config{ReconnectVia: redir.URL + "/play/live/test", Viewers: 3, Ramp: 200 * time.Millisecond, Duration: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Connected != 3 {
		t.Fatalf("%d of 3 connected: %v", r.Connected, r.Errors)
	}
	if r.Reconnects != 6 || asked.Load() < 9 {
		t.Errorf("%d reconnects, redirector asked %d times: want 2 per player after 1 each", r.Reconnects, asked.Load())
	}
	for _, v := range r.PerViewer {
		if len(v.Servers) != 3 || v.Servers[0] != a.addr || v.Servers[1] != b.addr || v.Servers[2] != a.addr {
			t.Errorf("player %d played from %v, want a, b, a", v.ID, v.Servers)
		}
		if len(v.ReconnectMs) != 2 {
			t.Errorf("player %d: reconnect times %v", v.ID, v.ReconnectMs)
		}
		// It played on after each loss: no error, the last loss kept apart.
		if v.Error != "" || v.LastLoss == "" {
			t.Errorf("player %d: error %q, last loss %q: want no error and the loss's reason", v.ID, v.Error, v.LastLoss)
		}
	}
	if r.ReconnectP50 <= 0 || r.ReconnectMax < r.ReconnectP95 || r.ReconnectP95 < r.ReconnectP50 {
		t.Errorf("time to picture after a reconnect: p50 %.0f p95 %.0f max %.0f ms", r.ReconnectP50, r.ReconnectP95, r.ReconnectMax)
	}
	t.Logf("reconnects %d, failures %d, time to picture p50 %.0f ms p95 %.0f ms max %.0f ms",
		r.Reconnects, r.ReconnectFailures, r.ReconnectP50, r.ReconnectP95, r.ReconnectMax)
}

// TestPlainRun: without ReconnectVia a player whose server goes away stops
// with an error, and the others' figures are as before.
func TestPlainRun(t *testing.T) {
	a := startServer(t)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		a.kill()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := Run(ctx, Config{URL: "rtmp://" + a.addr + "/live/test", Viewers: 2, Duration: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Connected != 2 || !r.AllFirstOK || r.Reconnects != 0 {
		t.Fatalf("connected %d, first video ok %v, reconnects %d", r.Connected, r.AllFirstOK, r.Reconnects)
	}
	for _, v := range r.PerViewer {
		if v.Error == "" || len(v.Servers) != 1 {
			t.Errorf("player %d: error %q, servers %v: want the connection's end as its error", v.ID, v.Error, v.Servers)
		}
	}
}
