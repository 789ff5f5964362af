package pull

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/hub"
	"github.com/relaymesh/relaymesh/internal/rtmp"
	"github.com/relaymesh/relaymesh/internal/serve"
)

// A relay whose upstream accepts connections and never answers tells its
// viewer StreamNotFound after StartTimeout instead of hanging (issue 13).
func TestPlayWithSilentUpstreamAnswersNotFound(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var conns []net.Conn // held open, silent
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hubs := hub.NewRegistry(hub.Config{}, nil)
	up, err := New(ctx, Config{URL: "rtmp://" + ln.Addr().String(), StartTimeout: 300 * time.Millisecond}, hubs, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	h := serve.NewHandler(serve.Options{Hubs: hubs, Upstream: up})
	start := time.Now()
	_, err = h.Play(ctx, &rtmp.Session{}, &rtmp.StreamRequest{App: "live", Name: "cam"})
	var st rtmp.Status
	if !errors.As(err, &st) || st.Code != rtmp.CodePlayStreamNotFound {
		t.Fatalf("play: %v, want %s", err, rtmp.CodePlayStreamNotFound)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("answered after %v", d)
	}
	t.Logf("%s after %v", st.Description, time.Since(start).Round(time.Millisecond))
}
