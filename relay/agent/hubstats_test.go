package agent

import (
	"maps"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/hub"
)

func TestStatsCountEveryProtocol(t *testing.T) {
	reg := hub.NewRegistry(hub.Config{}, nil)
	h := reg.Acquire("live", "a")
	defer h.Release()
	viewer := h.Subscribe(hub.SubscribeOptions{ID: "v1"})
	defer viewer.Close()
	packager := h.Subscribe(hub.SubscribeOptions{ID: "packager", Lossless: true})
	defer packager.Close()
	http := func() map[string]HTTPStream {
		return map[string]HTTPStream{
			"live/a": {Ready: true, Loads: []bus.ProtocolLoad{{Protocol: bus.ProtoHLS, Viewers: 2, Mbps: 1.5}, {Protocol: bus.ProtoDASH}}},
			"live/b": {Loads: []bus.ProtocolLoad{{Protocol: bus.ProtoHLS}, {Protocol: bus.ProtoDASH, Viewers: 1, Mbps: 0.5}}},
			"live/c": {Loads: []bus.ProtocolLoad{{Protocol: bus.ProtoHLS}}}, // nobody: not listed
		}
	}
	stats := Stats(reg, http)
	got := stats()
	if len(got) != 2 {
		t.Fatalf("streams %+v", got)
	}
	a, b := got[0], got[1]
	if a.Name != "a" || a.Viewers != 3 || a.Mbps != 1.5 || len(a.Protocols) != 2 ||
		a.Protocols[0] != (bus.ProtocolLoad{Protocol: bus.ProtoRTMP, Viewers: 1}) || a.Protocols[1].Protocol != bus.ProtoHLS || a.HTTPViewers() != 2 {
		t.Errorf("live/a: %+v", a)
	}
	if a.HTTPReady {
		t.Errorf("live/a is not live, yet HTTP-ready: %+v", a)
	}
	if b.Name != "b" || b.Live || b.HTTPReady || b.Viewers != 1 || b.Mbps != 0.5 || len(b.Protocols) != 1 || b.Protocols[0].Protocol != bus.ProtoDASH {
		t.Errorf("live/b (no hub): %+v", b)
	}
	// The metric shows the same figures, every protocol of a stream.
	pr := prometheus.NewRegistry()
	pr.MustRegister(ViewersCollector(stats, nil))
	mfs, err := pr.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "relaymesh_viewers" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var k []string
			for _, l := range m.GetLabel() {
				k = append(k, l.GetValue())
			}
			seen[strings.Join(k, "/")] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{"live/dash/a": 0, "live/dash/b": 1, "live/hls/a": 2, "live/hls/b": 0, "live/rtmp/a": 1, "live/rtmp/b": 0}
	if len(seen) != len(want) {
		t.Errorf("relaymesh_viewers: %v", seen)
	}
	for k, v := range want {
		if seen[k] != v {
			t.Errorf("relaymesh_viewers{%s} = %v, want %v (all %v)", k, seen[k], v, seen)
		}
	}
	// Without HTTP the stats are the hub's.
	if got := HubStats(reg)(); len(got) != 1 || got[0].Viewers != 1 {
		t.Errorf("hub stats %+v", got)
	}
}

// TestStatsCarryStreamDetails: a live stream's status names its codecs,
// picture size and bitrate, as the hub knows them.
func TestStatsCarryStreamDetails(t *testing.T) {
	reg := hub.NewRegistry(hub.Config{}, nil)
	h := reg.Acquire("live", "cam")
	defer h.Release()
	h.Begin(hub.PublisherInfo{})
	defer h.End()
	// AVC sequence header of a 640x360 stream, AAC sequence header.
	h.Write(av.KindVideo, 0, []byte{0x17, 0, 0, 0, 0, 1, 0x4d, 0x40, 0x1e, 0xff, 0xe1, 0, 24,
		0x67, 0x4d, 0x40, 0x1e, 0xec, 0xa0, 0x50, 0x17, 0xfc, 0xb8, 0x08, 0x80, 0x00, 0x00,
		0x03, 0x00, 0x80, 0x00, 0x00, 0x19, 0x07, 0x8b, 0x16, 0xcb,
		1, 0, 5, 0x68, 0xeb, 0xe3, 0xcb, 0x20})
	h.Write(av.KindAudio, 0, []byte{0xaf, 0, 0x12, 0x10})
	frame := append([]byte{0x27, 1, 0, 0, 0, 0, 0, 0x0f, 0xa0, 0x41}, make([]byte, 3999)...)
	for i := 0; i < 10; i++ {
		h.Write(av.KindVideo, uint32(i*500), frame)
	}
	got := HubStats(reg)()
	if len(got) != 1 {
		t.Fatalf("streams %+v", got)
	}
	st := got[0]
	if st.VideoCodec != "h264" || st.AudioCodec != "aac" || st.Width != 640 || st.Height != 360 || st.BitrateKbps <= 0 {
		t.Errorf("details: %+v", st)
	}
}

// TestStatsHTTPReady: a live stream whose packager has segments is
// reported HTTP-ready (the redirector steers players there first); one
// that is packaged without segments yet, or not at all, is not.
func TestStatsHTTPReady(t *testing.T) {
	reg := hub.NewRegistry(hub.Config{}, nil)
	for _, n := range []string{"warm", "cold", "none"} {
		h := reg.Acquire("live", n)
		defer h.Release()
		h.Begin(hub.PublisherInfo{})
		defer h.End()
	}
	http := func() map[string]HTTPStream {
		return map[string]HTTPStream{"live/warm": {Ready: true}, "live/cold": {}}
	}
	got := map[string]bool{}
	for _, st := range Stats(reg, http)() {
		if !st.Live {
			t.Errorf("%s not live", st.Name)
		}
		got[st.Name] = st.HTTPReady
	}
	if want := map[string]bool{"warm": true, "cold": false, "none": false}; !maps.Equal(got, want) {
		t.Errorf("HTTP-ready %v, want %v", got, want)
	}
}

// TestViewersKeepTheLabelBound: with the hub's labels, streams beyond the
// bound (and HTTP-only streams without a hub) share stream="_other",
// their viewers summed.
func TestViewersKeepTheLabelBound(t *testing.T) {
	reg := hub.NewRegistry(hub.Config{MetricsStreams: 1}, nil)
	for _, n := range []string{"a", "b", "c"} {
		h := reg.Acquire("live", n)
		defer h.Release()
		v := h.Subscribe(hub.SubscribeOptions{ID: "v-" + n})
		defer v.Close()
	}
	http := func() map[string]HTTPStream {
		return map[string]HTTPStream{"live/d": {Loads: []bus.ProtocolLoad{{Protocol: bus.ProtoHLS, Viewers: 2}}}}
	}
	pr := prometheus.NewRegistry()
	pr.MustRegister(ViewersCollector(Stats(reg, http), reg.StreamLabels))
	mfs, err := pr.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "relaymesh_viewers" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var k []string
			for _, l := range m.GetLabel() {
				k = append(k, l.GetValue())
			}
			seen[strings.Join(k, "/")] = m.GetGauge().GetValue()
		}
	}
	// Labels sort as app, protocol, stream.
	want := map[string]float64{"live/rtmp/a": 1, "live/rtmp/_other": 2, "live/hls/_other": 2, "live/hls/a": 0}
	for k, w := range want {
		if seen[k] != w {
			t.Errorf("%s = %v, want %v (all: %v)", k, seen[k], w, seen)
		}
	}
	if len(seen) != 6 {
		t.Errorf("%d series, want 6 (two label pairs × three protocols): %v", len(seen), seen)
	}
}
