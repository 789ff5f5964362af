package redirector

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/bus/bustest"
)

// TestMeshListsLiveStreams: a stream live on the primary is in the mesh API
// before any placement, with the codecs and bitrate of the primary's status
// and its viewers by protocol; a relay that reports it live is among its
// relays.
func TestMeshListsLiveStreams(t *testing.T) {
	_, c := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := c.OpenBuckets(ctx, bus.BucketConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := newTest(t, c, Config{DevIP: true})
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	h := r.Handler()

	put := func(s bus.Status) {
		t.Helper()
		s.Time = time.Now()
		data, _ := bus.Encode(s)
		if _, err := b.Relays.Put(ctx, s.ID, data); err != nil {
			t.Fatal(err)
		}
	}
	put(bus.Status{ID: "primary", Location: "eu", Streams: []bus.StreamStatus{{
		App: "live", Name: "cam", Live: true, Viewers: 1,
		Protocols:  []bus.ProtocolLoad{{Protocol: bus.ProtoRTMP, Viewers: 1, Mbps: 1}},
		VideoCodec: "h264", AudioCodec: "aac", Width: 640, Height: 360, BitrateKbps: 1000,
	}}})
	put(bus.Status{ID: "relay-as", Location: "as", Streams: []bus.StreamStatus{{
		App: "live", Name: "cam", Live: true, Viewers: 2,
		Protocols:  []bus.ProtocolLoad{{Protocol: bus.ProtoHLS, Viewers: 2, Mbps: 2}},
		VideoCodec: "h264", AudioCodec: "aac", BitrateKbps: 990,
	}}})
	var mv MeshView
	waitFor(t, "the stream in the mesh", func() bool {
		mv = MeshView{}
		if err := json.Unmarshal(get(t, h, "/api/v1/mesh", nil).Body.Bytes(), &mv); err != nil {
			t.Fatal(err)
		}
		return len(mv.Streams) == 1 && mv.Streams[0].Viewers == 3
	})
	s := mv.Streams[0]
	if s.App != "live" || s.Name != "cam" || !s.Live || s.VideoCodec != "h264" || s.AudioCodec != "aac" ||
		s.Width != 640 || s.BitrateKbps != 1000 || len(s.Relays) != 1 || s.Relays[0] != "relay-as" {
		t.Fatalf("stream %+v", s)
	}
	if len(s.Protocols) != 2 || s.Protocols[0].Protocol != bus.ProtoHLS || s.Protocols[0].Viewers != 2 || s.Protocols[1].Viewers != 1 {
		t.Fatalf("protocols %+v", s.Protocols)
	}
}
