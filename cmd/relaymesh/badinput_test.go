package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/amf"
	"github.com/relaymesh/relaymesh/internal/rtmp"
	"github.com/yutopp/go-rtmp/handshake"
)

// hostilePrimary runs a primary with short timeouts and a small message limit.
func hostilePrimary(t *testing.T) *testNode {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "relaymesh.yaml")
	if err := os.WriteFile(cfg, []byte(`rtmp:
  handshake_timeout: 1s
  idle_timeout: 3s
  write_timeout: 2s
  max_message_size: 65536
  drain: 0s
publish:
  keys:
    cam: s3cret
    flood: s3cret
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return startNode(t, runPrimary, "", "--config", cfg)
}

// raw is a client that speaks chunks directly, to send what no library would.
type raw struct {
	t  *testing.T
	nc net.Conn
	w  *rtmp.ChunkWriter
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *raw {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	br := bufio.NewReader(nc)
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if err := handshake.HandshakeWithServer(br, nc, &handshake.Config{SkipHandshakeVerification: true}); err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Time{})
	return &raw{t: t, nc: nc, w: rtmp.NewChunkWriter(), br: br}
}

func (r *raw) send(m rtmp.Message) {
	r.w.Append(&m)
	_ = r.w.Flush(r.nc)
}

func (r *raw) command(streamID uint32, values ...any) {
	m, err := rtmp.CommandMessage(streamID, values...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.send(m)
}

func (r *raw) connect(app string) {
	r.command(0, "connect", 1.0, map[string]any{"app": app, "tcUrl": "rtmp://x/" + app})
}

// closedWithin reports whether the server closes the connection within d
// (whatever it sends before that is read and discarded).
func closedWithin(nc net.Conn, br io.Reader, d time.Duration) bool {
	nc.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, br)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func stillServing(t *testing.T, n *testNode) {
	t.Helper()
	cc, err := rtmp.Dial(context.Background(), rtmp.URL{Host: n.rtmp, App: "live"}, rtmp.ConnConfig{}, nil)
	if err != nil {
		t.Fatalf("server no longer serves: %v", err)
	}
	cc.Close(nil)
}

func TestBadInput(t *testing.T) {
	n := hostilePrimary(t)

	t.Run("publish without key", func(t *testing.T) {
		for _, name := range []string{"cam", "cam?key=wrong"} {
			cc, err := rtmp.Dial(context.Background(), rtmp.URL{Host: n.rtmp, App: "live"}, rtmp.ConnConfig{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = cc.Publish(context.Background(), name)
			var st rtmp.Status
			if !errors.As(err, &st) || st.Code != rtmp.CodePublishUnauthorized {
				t.Fatalf("%s: %v", name, err)
			}
			if _, err := cc.ReadMessage(); err == nil {
				// Drain until the server closes.
				for err == nil {
					_, err = cc.ReadMessage()
				}
			}
			cc.Close(nil)
		}
	})

	t.Run("idle publisher", func(t *testing.T) {
		cc, err := rtmp.Dial(context.Background(), rtmp.URL{Host: n.rtmp, App: "live"}, rtmp.ConnConfig{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close(nil)
		if _, err := cc.Publish(context.Background(), "cam?key=s3cret"); err != nil {
			t.Fatal(err)
		}
		// Nothing more is sent: idle_timeout (3s here) closes it.
		done := make(chan error, 1)
		go func() {
			for {
				if _, err := cc.ReadMessage(); err != nil {
					done <- err
					return
				}
			}
		}()
		select {
		case <-done:
		case <-time.After(8 * time.Second):
			t.Fatal("an idle publisher was not closed")
		}
	})

	t.Run("not an RTMP handshake", func(t *testing.T) {
		nc, err := net.Dial("tcp", n.rtmp)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		if !closedWithin(nc, nc, 3*time.Second) {
			t.Fatal("HTTP request on the RTMP port not closed")
		}
	})

	t.Run("slowloris handshake", func(t *testing.T) {
		nc, err := net.Dial("tcp", n.rtmp)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.Write(append([]byte{3}, make([]byte, 700)...)) // C0 and part of C1, then nothing
		if !closedWithin(nc, nc, 4*time.Second) {
			t.Fatal("unfinished handshake not closed after the handshake timeout")
		}
	})

	for _, size := range []uint32{0, 1 << 31} {
		t.Run("chunk size "+itoa(int(size)), func(t *testing.T) {
			r := dialRaw(t, n.rtmp)
			p := []byte{byte(size >> 24), byte(size >> 16), byte(size >> 8), byte(size)}
			r.send(rtmp.Message{Type: rtmp.TypeSetChunkSize, Payload: p})
			if !closedWithin(r.nc, r.br, 3*time.Second) {
				t.Fatal("not closed")
			}
		})
	}

	t.Run("message over the limit", func(t *testing.T) {
		r := dialRaw(t, n.rtmp)
		r.connect("live")
		// Only the header matters: it declares 1 MiB against a 64 KiB limit.
		r.nc.Write([]byte{0x06, 0, 0, 0, 0x10, 0, 0, rtmp.TypeVideo, 1, 0, 0, 0})
		if !closedWithin(r.nc, r.br, 3*time.Second) {
			t.Fatal("not closed")
		}
	})

	t.Run("unknown message type", func(t *testing.T) {
		r := dialRaw(t, n.rtmp)
		r.connect("live")
		r.send(rtmp.Message{Type: 0x55, Payload: []byte("whatever")})
		r.command(0, "createStream", 2.0, nil)
		// The connection survives: the createStream result arrives.
		cr := rtmp.NewChunkReader(r.br, 0)
		r.nc.SetReadDeadline(time.Now().Add(3 * time.Second))
		for {
			m, err := cr.ReadMessage()
			if err != nil {
				t.Fatalf("connection lost after an unknown message type: %v", err)
			}
			if m.Type == rtmp.TypeSetChunkSize {
				cr.SetChunkSize(uint32(m.Payload[0])<<24 | uint32(m.Payload[1])<<16 | uint32(m.Payload[2])<<8 | uint32(m.Payload[3]))
			}
			if m.Type == rtmp.TypeCommandAMF0 {
				if c, err := rtmp.ParseCommand(m); err == nil && c.Name == "_result" && c.TransactionID == 2 {
					return
				}
			}
		}
	})

	t.Run("truncated AMF", func(t *testing.T) {
		r := dialRaw(t, n.rtmp)
		p := amf.MustEncode("connect", 1.0, map[string]any{"app": "live"})
		r.send(rtmp.Message{Type: rtmp.TypeCommandAMF0, Payload: p[:len(p)-5]})
		if !closedWithin(r.nc, r.br, 3*time.Second) {
			t.Fatal("not closed")
		}
	})

	t.Run("garbage video from a publisher", func(t *testing.T) {
		pub, err := rtmp.Dial(context.Background(), rtmp.URL{Host: n.rtmp, App: "live"}, rtmp.ConnConfig{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer pub.Close(nil)
		id, err := pub.Publish(context.Background(), "cam?key=s3cret")
		if err != nil {
			t.Fatal(err)
		}
		viewer, err := rtmp.Dial(context.Background(), rtmp.URL{Host: n.rtmp, App: "live"}, rtmp.ConnConfig{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer viewer.Close(nil)
		if _, err := viewer.Play(context.Background(), "cam"); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(7, 7))
		for i := 0; i < 300; i++ {
			p := make([]byte, rng.IntN(300))
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
			typ := []uint8{rtmp.TypeVideo, rtmp.TypeAudio, rtmp.TypeDataAMF0}[i%3]
			pub.Send(rtmp.Message{Type: typ, StreamID: id, Timestamp: uint32(i * 10), Payload: p})
		}
		time.Sleep(200 * time.Millisecond)
		stillServing(t, n)
	})

	t.Run("viewer that never reads", func(t *testing.T) {
		pub, err := rtmp.Dial(context.Background(), rtmp.URL{Host: n.rtmp, App: "live"}, rtmp.ConnConfig{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer pub.Close(nil)
		id, err := pub.Publish(context.Background(), "flood?key=s3cret")
		if err != nil {
			t.Fatal(err)
		}
		// A viewer that plays and then never reads a byte.
		r := dialRaw(t, n.rtmp)
		r.connect("live")
		r.command(0, "createStream", 2.0, nil)
		r.command(1, "play", 0.0, nil, "flood")
		// A well-behaved viewer of the same stream.
		good, err := rtmp.Dial(context.Background(), rtmp.URL{Host: n.rtmp, App: "live"}, rtmp.ConnConfig{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer good.Close(nil)
		if _, err := good.Play(context.Background(), "flood"); err != nil {
			t.Fatal(err)
		}
		got := make(chan int, 1)
		go func() {
			n := 0
			for {
				m, err := good.ReadMessage()
				if err != nil {
					got <- n
					return
				}
				if m.Type == rtmp.TypeVideo {
					n++
				}
			}
		}()
		key := append([]byte{0x17, 1, 0, 0, 0}, make([]byte, 20000)...)
		inter := append([]byte{0x27, 1, 0, 0, 0}, make([]byte, 20000)...)
		start := time.Now()
		for i := 0; time.Since(start) < 6*time.Second; i++ {
			p := inter
			if i%25 == 0 {
				p = key
			}
			pub.Send(rtmp.Message{Type: rtmp.TypeVideo, StreamID: id, Timestamp: uint32(i * 40), Payload: p})
			time.Sleep(10 * time.Millisecond)
		}
		good.Close(nil)
		if n := <-got; n < 400 {
			t.Errorf("the good viewer got %d video frames", n)
		}
		// The stalled viewer was closed by the server (write timeout or too slow).
		r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		nread, err := io.Copy(io.Discard, r.br)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the viewer that never reads is still connected (%d bytes were pending)", nread)
		}
	})
	stillServing(t, n)

	// Every hostile client above was counted where operators look.
	t.Run("counters", func(t *testing.T) {
		for _, c := range []struct {
			name  string
			match []string
		}{
			{"relaymesh_rtmp_requests_total", []string{`op="publish"`, `result="NetStream.Publish.Unauthorized"`}},
			{"relaymesh_rtmp_timeouts_total", []string{`kind="idle"`}},
			{"relaymesh_rtmp_handshake_failures_total", []string{`reason="not_rtmp"`}},
			{"relaymesh_rtmp_handshake_failures_total", []string{`reason="timeout"`}},
			{"relaymesh_rtmp_timeouts_total", []string{`kind="handshake"`}},
		} {
			if v := metricSum(t, n, c.name, c.match...); v < 1 {
				t.Errorf("%s%v = %v", c.name, c.match, v)
			}
		}
		waitFor(t, "the viewer that never read counted as closed", 10*time.Second, func() bool {
			return metricSum(t, n, "relaymesh_rtmp_viewers_closed_total", `reason="too_slow"`)+
				metricSum(t, n, "relaymesh_rtmp_viewers_closed_total", `reason="write_timeout"`) >= 1
		})
	})
}

func itoa(i int) string {
	const digits = "0123456789"
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{digits[i%10]}, b...)
	}
	return string(b)
}
