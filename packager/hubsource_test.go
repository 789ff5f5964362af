package packager

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/relay/hub"
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
