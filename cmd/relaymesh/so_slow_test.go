package main

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/relaymesh/relaymesh/internal/rpc"
	"github.com/relaymesh/relaymesh/internal/rtmp"
	so "github.com/relaymesh/relaymesh/internal/sharedobject"
)

// slowConn reads at most a few KiB at a time, paced by a token bucket: a
// viewer on a thin link.
type slowConn struct {
	net.Conn
	lim *rate.Limiter
	ctx context.Context
}

func (s *slowConn) Read(p []byte) (int, error) {
	if len(p) > 2048 {
		p = p[:2048]
	}
	if err := s.lim.WaitN(s.ctx, len(p)); err != nil {
		return 0, err
	}
	return s.Conn.Read(p)
}

// synthPublish pushes a 4 Mbit/s video stream (20 KB frames, 25 per second,
// a keyframe every second) with AAC-like audio to url, whose application
// has appSegments path segments, until ctx ends, and returns how many video
// frames it sent.
func synthPublish(ctx context.Context, t *testing.T, url string, appSegments int) <-chan int {
	t.Helper()
	u, err := rtmp.ParseURL(url, appSegments)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := rtmp.Dial(ctx, u, rtmp.ConnConfig{}, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	id, err := pub.Publish(ctx, u.Name)
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan int, 1)
	go func() {
		defer pub.Close(nil)
		key := append([]byte{0x17, 1, 0, 0, 0}, make([]byte, 20000)...)
		inter := append([]byte{0x27, 1, 0, 0, 0}, make([]byte, 20000)...)
		audio := append([]byte{0xaf, 1}, make([]byte, 200)...)
		pub.Send(rtmp.Message{Type: rtmp.TypeAudio, StreamID: id, Payload: []byte{0xaf, 0, 0x12, 0x10}})
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		start := time.Now()
		n := 0
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				sent <- n
				return
			case <-tick.C:
			}
			ts := uint32(time.Since(start).Milliseconds())
			pub.Send(rtmp.Message{Type: rtmp.TypeAudio, StreamID: id, Timestamp: ts, Payload: audio})
			if i%2 == 0 {
				p := inter
				if n%25 == 0 {
					p = key
				}
				pub.Send(rtmp.Message{Type: rtmp.TypeVideo, StreamID: id, Timestamp: ts, Payload: p})
				n++
			}
		}
	}()
	return sent
}

// TestSlowViewerGetsEverySharedObjectChange is the acceptance test "media
// viewers on a relay under frame dropping still receive every shared-object
// change and call": a viewer on a relay reads at 320 kbit/s a 4 Mbit/s
// stream, so the hub drops most of its video, while on the same connection
// it uses a shared object that the primary changes a hundred times, gets
// messages sent on the object and server-to-client calls. It must get every
// one of them, in order, and keep its connection.
func TestSlowViewerGetsEverySharedObjectChange(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := soConfigFile(t, "  messages_per_second: 1000\n  burst: 1000\n")
	primary := startNode(t, runPrimary, "", "--config", cfg, "--open", "--data", t.TempDir())
	r1 := startNode(t, runRelay, "", "--config", cfg, "--id", "r1", "--upstream", "rtmp://"+primary.rtmp)

	pubCtx, stopPub := context.WithCancel(ctx)
	defer stopPub()
	sentFrames := synthPublish(pubCtx, t, "rtmp://"+primary.rtmp+"/live/room/cam", 2)

	// The slow viewer: small receive buffer, paced reads.
	nc, err := net.Dial("tcp", r1.rtmp)
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(16 << 10)
	}
	slow := &slowConn{Conn: nc, lim: rate.NewLimiter(40_000, 4096), ctx: ctx}
	var (
		mu      sync.Mutex
		changes []string // Change keys of "chat", in arrival order
		sends   []any    // first argument of each "line" message
		calls   []any    // first argument of each "notice" call
	)
	var video, audio atomic.Int64
	viewer, err := rpc.DialConn(ctx, slow, "rtmp://"+r1.rtmp+"/live/room", rpc.ClientConfig{
		Log: quietLog,
		OnMedia: func(m rtmp.Message) {
			switch m.Type {
			case rtmp.TypeVideo:
				video.Add(1)
			case rtmp.TypeAudio:
				audio.Add(1)
			}
		},
		OnObject: func(o *rpc.Object, m so.Message) {
			mu.Lock()
			defer mu.Unlock()
			for _, e := range m.Events {
				switch e.Type {
				case so.EventChange:
					changes = append(changes, e.Key)
				case so.EventSendMessage:
					if len(e.Args) > 0 {
						sends = append(sends, e.Args[0])
					}
				}
			}
		},
		OnCall: func(method string, args []any) {
			if method == "notice" && len(args) > 0 {
				mu.Lock()
				calls = append(calls, args[0])
				mu.Unlock()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer viewer.Close()
	if err := viewer.Play(ctx, "cam"); err != nil {
		t.Fatalf("play: %v", err)
	}
	vobj, err := viewer.Use(ctx, "chat", false)
	if err != nil {
		t.Fatalf("use: %v", err)
	}
	// Let the viewer fall behind before the changes start.
	for video.Load() == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the slow viewer got no video")
		case <-time.After(10 * time.Millisecond):
		}
	}
	time.Sleep(2 * time.Second)

	// The primary's side: a client changes the object, sends messages, and
	// the HTTP API calls every client of the scope.
	writer := dialMesh(t, ctx, "rtmp://"+primary.rtmp+"/live/room")
	wobj, err := writer.Use(ctx, "chat", false)
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	callURL := "http://" + primary.http + "/api/v1/apps/live/scopes/room/call"
	for i := 0; i < n; i++ {
		if err := wobj.Set(ctx, fmt.Sprintf("k%03d", i), float64(i)); err != nil {
			t.Fatalf("set %d: %v", i, err)
		}
		if i%5 == 0 {
			if err := wobj.Send("line", float64(i)); err != nil {
				t.Fatal(err)
			}
			if code, out := postJSON(t, callURL, map[string]any{"method": "notice", "args": []any{float64(i)}}); code != 200 {
				t.Fatalf("call: %d %v", code, out)
			}
		}
		time.Sleep(30 * time.Millisecond)
	}
	err = vobj.Wait(ctx, func(s map[string]any, _ uint32) bool { _, ok := s[fmt.Sprintf("k%03d", n-1)]; return ok })
	if err != nil {
		t.Fatalf("the slow viewer did not get the last change: %v", err)
	}
	for {
		// OnObject runs after the object is updated (and Wait returns): the
		// last change may still be on its way to the list.
		mu.Lock()
		done := len(sends) == n/5 && len(calls) == n/5 && len(changes) >= n
		mu.Unlock()
		if done {
			break
		}
		select {
		case <-ctx.Done():
			mu.Lock()
			t.Fatalf("slow viewer: %d of %d messages, %d of %d calls, %d of %d changes", len(sends), n/5, len(calls), n/5, len(changes), n)
		case <-viewer.Done():
			t.Fatalf("the slow viewer was closed: %v", viewer.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	stopPub()
	sent := <-sentFrames

	mu.Lock()
	defer mu.Unlock()
	if len(changes) != n {
		t.Fatalf("slow viewer got %d changes, want %d: %v", len(changes), n, changes)
	}
	for i, k := range changes {
		if k != fmt.Sprintf("k%03d", i) {
			t.Fatalf("change %d is %s", i, k)
		}
	}
	for i := range n / 5 {
		if sends[i] != float64(i*5) || calls[i] != float64(i*5) {
			t.Fatalf("message/call %d: %v %v", i, sends[i], calls[i])
		}
	}
	if err := vobj.VersionError(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-viewer.Done():
		t.Fatalf("the slow viewer was closed: %v", viewer.Err())
	default:
	}
	got := video.Load()
	t.Logf("video frames: %d sent, %d reached the slow viewer; %d audio frames", sent, got, audio.Load())
	if got == 0 || got*2 > int64(sent) {
		t.Fatalf("the slow viewer got %d of %d video frames: it was not throttled into dropping", got, sent)
	}
}
