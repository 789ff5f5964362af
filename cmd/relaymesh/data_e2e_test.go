package main

import (
	"context"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// Custom data messages of a broadcaster (onTextData, onCuePoint, …) reach
// every viewer, on the primary and through a relay, in order with the media.
func TestDataMessagesReachViewers(t *testing.T) {
	m := startMesh(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pub, err := rtmp.Dial(ctx, rtmp.URL{Host: m.primary.rtmp, App: "live"}, rtmp.ConnConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close(nil)
	id, err := pub.Publish(ctx, "cam?key=s3cret")
	if err != nil {
		t.Fatal(err)
	}
	seq := []byte{0x17, 0, 0, 0, 0, 1, 0x64, 0, 0x1f, 0xff, 0xe1, 0, 4, 0x67, 0x64, 0, 0x1f, 1, 0, 2, 0x68, 0xee}
	idr := []byte{0x17, 1, 0, 0, 0, 0, 0, 0, 3, 0x65, 0x88, 0x84}
	pub.Send(rtmp.Message{Type: rtmp.TypeVideo, StreamID: id, Timestamp: 0, Payload: seq})
	pub.Send(rtmp.Message{Type: rtmp.TypeVideo, StreamID: id, Timestamp: 0, Payload: idr})

	type got struct{ names chan string }
	watchData := func(addr string) got {
		g := got{names: make(chan string, 64)}
		cc, err := rtmp.Dial(ctx, rtmp.URL{Host: addr, App: "live"}, rtmp.ConnConfig{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close(nil) })
		if _, err := cc.Play(ctx, "cam"); err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				msg, err := cc.ReadMessage()
				if err != nil {
					return
				}
				if msg.Type == rtmp.TypeDataAMF0 {
					if n := av.DataName(msg.Payload); n == "onTextData" || n == "onCuePoint" {
						g.names <- n
					}
				}
			}
		}()
		return g
	}
	onPrimary := watchData(m.primary.rtmp)
	onRelay := watchData(m.r1.rtmp)
	time.Sleep(500 * time.Millisecond) // both viewers subscribed (the relay pulled)
	for i := 0; i < 3; i++ {
		ts := uint32(40 * (i + 1))
		pub.Send(rtmp.DataMessage(id, "onTextData", map[string]any{"text": "hello", "n": float64(i)}))
		pub.Send(rtmp.Message{Type: rtmp.TypeVideo, StreamID: id, Timestamp: ts, Payload: idr})
		pub.Send(rtmp.DataMessage(id, "onCuePoint", map[string]any{"name": "ad", "time": float64(ts) / 1000}))
	}
	for _, g := range []got{onPrimary, onRelay} {
		var names []string
		for len(names) < 6 {
			select {
			case n := <-g.names:
				names = append(names, n)
			case <-ctx.Done():
				t.Fatalf("data messages received: %v", names)
			}
		}
		for i, n := range names {
			want := "onTextData"
			if i%2 == 1 {
				want = "onCuePoint"
			}
			if n != want {
				t.Fatalf("order: %v", names)
			}
		}
	}
}
