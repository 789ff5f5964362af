package pull

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/internal/hub"
	"github.com/relaymesh/relaymesh/internal/rtmp"
	"github.com/relaymesh/relaymesh/internal/serve"
)

// slowPlay is an upstream whose play answers after delay (a loaded
// primary); until then nothing in the relay subscribes to the stream.
type slowPlay struct {
	*serve.Handler
	delay time.Duration
}

func (h slowPlay) Play(ctx context.Context, s *rtmp.Session, req *rtmp.StreamRequest) (rtmp.MediaSource, error) {
	select {
	case <-time.After(h.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.Handler.Play(ctx, s, req)
}

// serveUpstream serves h on a loopback listener until the test ends.
func serveUpstream(t *testing.T, h rtmp.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); ln.Close() })
	cfg := rtmp.ConnConfig{}.WithDefaults()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go rtmp.Serve(ctx, nc, &cfg, h, slog.New(slog.DiscardHandler))
		}
	}()
	return ln.Addr().String()
}

// The first viewer of a stream waits for the upstream's answer without a
// subscription of its own yet: an answer slower than Linger is no idle
// pull. Before the fix the linger ended the pull while it started, and
// the viewer waited out StartTimeout for an answer nobody would give (a
// fresh pull on a loaded machine, TestFirstViewerGetsWholeGOP in CI).
func TestSlowUpstreamAnswerOutlastsLinger(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	upHubs := hub.NewRegistry(hub.Config{}.WithDefaults(), log)
	live := upHubs.Acquire("live", "cam")
	live.Begin(hub.PublisherInfo{ID: "test"})
	defer live.Release()
	addr := serveUpstream(t, slowPlay{serve.NewHandler(serve.Options{Hubs: upHubs}), 300 * time.Millisecond})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	u, err := New(ctx, Config{URL: "rtmp://" + addr, RelayID: "r1", Linger: 20 * time.Millisecond, StartTimeout: 5 * time.Second},
		hub.NewRegistry(hub.Config{}.WithDefaults(), log), log)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := u.Ensure(ctx, "live", "cam", ""); err != nil {
		t.Fatalf("ensure after %v: %v", time.Since(start).Round(time.Millisecond), err)
	}
	t.Logf("answered after %v", time.Since(start).Round(time.Millisecond))
	// Nobody subscribed: now the linger ends it.
	done := u.PullDone("live", "cam")
	if done == nil {
		t.Fatal("no pull running after the answer")
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the unwatched pull did not linger out")
	}
}

// An upstream that takes the connection and never answers the play fails
// the attempt after StartTimeout, with a reason, and the pull ends when
// released instead of hanging in the play.
func TestUpstreamThatNeverAnswersThePlay(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	addr := serveUpstream(t, slowPlay{serve.NewHandler(serve.Options{Hubs: hub.NewRegistry(hub.Config{}.WithDefaults(), log)}), time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	u, err := New(ctx, Config{URL: "rtmp://" + addr, RelayID: "r1", Linger: 20 * time.Millisecond, StartTimeout: 300 * time.Millisecond,
		BackoffMin: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond},
		hub.NewRegistry(hub.Config{}.WithDefaults(), log), log)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Hold(ctx, "live", "cam", ""); err == nil {
		t.Fatal("hold from an upstream that never answers succeeded")
	} else {
		t.Log(err)
	}
	released := make(chan struct{})
	go func() { u.Release("live", "cam"); close(released) }()
	select {
	case <-released:
	case <-time.After(5 * time.Second):
		t.Fatal("release hung")
	}
}

// A viewer that comes as the linger ends the pull gets the stream: it
// either keeps that pull or starts a new one, never a pull that is ending
// (it would wait out the relay's grace on a hub nobody feeds). Joins fall
// around the linger's end, many times over.
func TestJoinAsTheLingerEnds(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	upHubs := hub.NewRegistry(hub.Config{}.WithDefaults(), log)
	live := upHubs.Acquire("live", "cam")
	defer live.Release()
	live.Begin(hub.PublisherInfo{ID: "test"})
	stop := make(chan struct{})
	fed := make(chan struct{})
	go func() { // the broadcaster: a keyframe every 100 ms, frames every 10
		defer close(fed)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for ts := uint32(0); ; ts += 10 {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if ts%100 == 0 {
				live.Write(av.KindVideo, ts, []byte{0x17, 0x01, 0, 0, 0})
			} else {
				live.Write(av.KindVideo, ts, []byte{0x27, 0x01, 0, 0, 0})
			}
		}
	}()
	defer func() { close(stop); <-fed }()
	addr := serveUpstream(t, serve.NewHandler(serve.Options{Hubs: upHubs}))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const linger = 30 * time.Millisecond
	relayHubs := hub.NewRegistry(hub.Config{}.WithDefaults(), log)
	u, err := New(ctx, Config{URL: "rtmp://" + addr, RelayID: "r1", Linger: linger, StartTimeout: 5 * time.Second}, relayHubs, log)
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range 60 {
		if err := u.Ensure(ctx, "live", "cam", ""); err != nil {
			t.Fatalf("join %d: %v", i, err)
		}
		h := relayHubs.Acquire("live", "cam")
		sub := h.Subscribe(hub.SubscribeOptions{ID: "v"})
		wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
		// The stream goes on: 150 ms of it, not only the GOP cache a
		// hub that is ending still hands out.
		var first, last uint32
		n := 0
		for n == 0 || last-first < 150 {
			frames, err := sub.Next(wctx, nil, 0)
			if err != nil {
				break
			}
			for _, f := range frames {
				if f.Kind != av.KindVideo {
					continue
				}
				if n == 0 {
					first = f.Timestamp
				}
				last = f.Timestamp
				n++
			}
		}
		wcancel()
		sub.Close()
		h.Release()
		if n == 0 || last-first < 150 {
			t.Fatalf("join %d: %d video frames over %d ms within 3 s (pulls: %+v)", i, n, last-first, u.Pulls())
		}
		// The next join falls around the moment the linger ends this pull
		// (its ticks are Linger/4 apart).
		time.Sleep(linger + time.Duration(rnd.IntN(int(linger/2))))
	}
}
