package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/rtmp"
)

func publishAs(t *testing.T, ctx context.Context, addr, name string) (*rtmp.ClientConn, error) {
	t.Helper()
	c, err := rtmp.Dial(ctx, rtmp.URL{Host: addr, App: "live"}, rtmp.ConnConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(nil) })
	_, err = c.Publish(ctx, name)
	return c, err
}

// A second publisher on a live name is refused by default, and replaces the
// first with --takeover (the first is told and closed).
func TestSecondPublisher(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	p := startNode(t, runPrimary, "", "--open")
	if _, err := publishAs(t, ctx, p.rtmp, "cam"); err != nil {
		t.Fatal(err)
	}
	_, err := publishAs(t, ctx, p.rtmp, "cam")
	var st rtmp.Status
	if !errors.As(err, &st) || st.Code != rtmp.CodePublishBadName {
		t.Fatalf("second publisher: %v, want %s", err, rtmp.CodePublishBadName)
	}

	tp := startNode(t, runPrimary, "", "--open", "--takeover")
	first, err := publishAs(t, ctx, tp.rtmp, "cam")
	if err != nil {
		t.Fatal(err)
	}
	second, err := publishAs(t, ctx, tp.rtmp, "cam")
	if err != nil {
		t.Fatalf("takeover refused: %v", err)
	}
	// The first publisher is told and its connection ends.
	for {
		m, err := first.ReadMessage()
		if err != nil {
			break
		}
		if m.Type == rtmp.TypeCommandAMF0 {
			if c, err := rtmp.ParseCommand(m); err == nil && c.Name == "onStatus" {
				if s := rtmp.StatusOf(c); s.Level == "error" {
					t.Logf("first publisher told: %s", s.Code)
				}
			}
		}
	}
	waitLive(t, tp, "live", "cam")
	for _, s := range streams(t, tp) {
		if s["name"] == "cam" && s["publisher_addr"] == second.LocalAddr().String() {
			return // the new publisher holds the stream
		}
	}
	t.Fatalf("the stream is not held by the new publisher: %v", streams(t, tp))
}
