package packager

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/internal/hub"
)

func TestHubSource(t *testing.T) {
	reg := hub.NewRegistry(hub.Config{}, discardLogger())
	src := HubSource{Registry: reg}
	if _, err := src.Subscribe(context.Background(), "live", "none"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("absent stream: %v", err)
	}
	h := reg.Acquire("live", "cam")
	h.Begin(hub.PublisherInfo{Addr: "127.0.0.1:1", ID: "pub"})
	h.Write(av.KindVideo, 0, testAVCSeq)
	sub, err := src.Subscribe(context.Background(), "live", "cam")
	if err != nil {
		t.Fatal(err)
	}
	h.Write(av.KindVideo, 0, keyframe(1000))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var got []*av.Frame
	for len(got) < 2 {
		fr, err := sub.Next(ctx, nil, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fr {
			if f.Kind == av.KindVideo {
				got = append(got, f)
			}
		}
	}
	if !got[0].SeqHeader || !got[1].Keyframe {
		t.Fatalf("frames: %v", got)
	}
	sub.Close()
	h.End()
	h.Release()
	if reg.Lookup("live", "cam") != nil {
		t.Fatal("the packager's reference kept the hub alive after Close")
	}
}

// TestPackagerOverHub runs the packager on a real hub: a publisher writes
// frames, an HTTP request starts packaging, the playlist lists segments.
func TestPackagerOverHub(t *testing.T) {
	reg := hub.NewRegistry(hub.Config{}, discardLogger())
	h := reg.Acquire("live", "test")
	defer h.Release()
	h.Begin(hub.PublisherInfo{Addr: "127.0.0.1:1", ID: "pub"})
	frames := synthGOPs(0, 4, true)
	for _, f := range frames[:len(frames)/4] { // the first GOP: in the GOP cache
		h.Write(f.Kind, f.Timestamp, f.Payload)
	}
	p, err := New(HubSource{Registry: reg}, Config{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	got := make(chan int, 1)
	go func() {
		resp, err := http.Get(srv.URL + "/hls/live/test/index.m3u8")
		if err != nil {
			got <- 0
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	waitUntil(t, "the packager to subscribe", func() bool { return h.SubscriberCount() == 1 })
	for _, f := range frames[len(frames)/4:] {
		h.Write(f.Kind, f.Timestamp, f.Payload)
	}
	if code := <-got; code != http.StatusOK {
		t.Fatalf("index.m3u8: %d", code)
	}
	if resp, _ := get(t, srv.Client(), srv.URL+"/hls/live/absent/index.m3u8"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("absent stream: %d", resp.StatusCode)
	}
}
