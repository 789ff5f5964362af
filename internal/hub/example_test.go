package hub_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/internal/hub"
)

// A publisher writes a stream into its hub; a viewer that subscribes later
// starts at once from the GOP cache (the last keyframe and what followed it)
// and then receives the live frames as they come.
func Example() {
	reg := hub.NewRegistry(hub.Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	h := reg.Acquire("live", "cam") // the publisher's reference
	defer h.Release()

	h.Begin(hub.PublisherInfo{Addr: "192.0.2.1:50000", ID: "c1"})
	keyframe := []byte{0x17, 0x01, 0, 0, 0} // FLV video tag body: AVC keyframe, NALU
	inter := []byte{0x27, 0x01, 0, 0, 0}    // AVC inter frame
	h.Write(av.KindVideo, 0, keyframe)
	h.Write(av.KindVideo, 33, inter)

	viewer := h.Subscribe(hub.SubscribeOptions{ID: "c2"}) // a viewer arriving mid-GOP
	defer viewer.Close()
	h.Write(av.KindVideo, 66, inter)

	frames, err := viewer.Next(context.Background(), nil, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range frames {
		fmt.Println(f.Kind, f.Timestamp, f.Keyframe)
	}
	// Output:
	// video 0 true
	// video 33 false
	// video 66 false
}
