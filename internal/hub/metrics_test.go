package hub

import (
	"testing"

	"github.com/relaymesh/relaymesh/internal/av"
)

// TestStreamMetricsLabels: a stream's own series count its frames, bytes in
// and out, drops and bitrate.
func TestStreamMetricsLabels(t *testing.T) {
	r := newTestRegistry(Config{ViewerQueueFrames: 4})
	h := r.Acquire("live", "cam")
	defer h.Release()
	h.Begin(PublisherInfo{})
	v := h.Subscribe(SubscribeOptions{})
	defer v.Close()
	l := h.Subscribe(SubscribeOptions{Lossless: true})
	defer l.Close()
	big := avc(2, append([]byte{0x41}, make([]byte, 4000)...)...) // 32 kbit a frame
	bytes := len(idr)
	h.Write(av.KindVideo, 0, idr)
	for i := 1; i < 10; i++ {
		h.Write(av.KindVideo, uint32(i*400), big)
		bytes += len(big)
	}
	drain(t, l)
	m := collect(t, r)
	want := map[string]float64{
		"relaymesh_stream_frames_in_total{live}{cam}":                    10,
		"relaymesh_stream_bytes_in_total{live}{cam}":                     float64(bytes),
		"relaymesh_stream_frames_sent_total{live}{cam}":                  10,
		"relaymesh_stream_bytes_out_total{live}{cam}":                    float64(bytes),
		"relaymesh_stream_subscribers{live}{viewer}{cam}":                1,
		"relaymesh_stream_subscribers{live}{lossless}{cam}":              1,
		"relaymesh_stream_subscribers_closed_total{live}{too_slow}{cam}": 0,
		"relaymesh_hub_streams_unlabelled":                               0,
	}
	for k, w := range want {
		if got, ok := m[k]; !ok || got != w {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, w)
		}
	}
	for _, class := range []string{"inter", "key"} {
		if s, h := m["relaymesh_stream_frames_dropped_total{live}{"+class+"}{cam}"], m["relaymesh_hub_frames_dropped_total{"+class+"}"]; s != h || h == 0 {
			t.Errorf("dropped %s: stream %v, hub %v", class, s, h)
		}
	}
	if m["relaymesh_stream_bitrate_bits_per_second{live}{cam}"] <= 0 {
		t.Errorf("bitrate = %v, want > 0", m["relaymesh_stream_bitrate_bits_per_second{live}{cam}"])
	}
}

// TestStreamMetricsBound: beyond MetricsStreams hubs, streams share
// stream="_other", which keeps its counts when they leave; a freed label
// goes to the next new stream.
func TestStreamMetricsBound(t *testing.T) {
	r := newTestRegistry(Config{MetricsStreams: 2})
	names := []string{"a", "b", "c", "d"}
	hubs := map[string]*Hub{}
	for _, n := range names {
		h := r.Acquire("live", n)
		h.Begin(PublisherInfo{})
		h.Write(av.KindVideo, 0, idr)
		hubs[n] = h
	}
	m := collect(t, r)
	for _, n := range []string{"a", "b"} {
		if m["relaymesh_stream_frames_in_total{live}{"+n+"}"] != 1 {
			t.Errorf("stream %s: not labelled: %v", n, m)
		}
	}
	for _, n := range []string{"c", "d"} {
		if _, ok := m["relaymesh_stream_frames_in_total{live}{"+n+"}"]; ok {
			t.Errorf("stream %s labelled beyond the bound", n)
		}
	}
	if got := m["relaymesh_stream_frames_in_total{live}{_other}"]; got != 2 {
		t.Errorf("_other frames = %v, want 2", got)
	}
	if got := m["relaymesh_hub_streams_unlabelled"]; got != 2 {
		t.Errorf("unlabelled = %v, want 2", got)
	}
	series := 0
	for k := range m {
		if len(k) > len("relaymesh_stream_frames_in_total") && k[:len("relaymesh_stream_frames_in_total")] == "relaymesh_stream_frames_in_total" {
			series++
		}
	}
	if series != 3 {
		t.Errorf("%d frames_in series, want 3 (two streams and _other)", series)
	}

	// c leaves: _other does not go backwards. a leaves: its label is free
	// for the next new stream, e.
	for _, n := range []string{"c", "a"} {
		hubs[n].End()
		hubs[n].Release()
	}
	e := r.Acquire("live", "e")
	e.Begin(PublisherInfo{})
	e.Write(av.KindVideo, 0, idr)
	hubs["d"].Write(av.KindVideo, 40, pRef)
	m = collect(t, r)
	if got := m["relaymesh_stream_frames_in_total{live}{_other}"]; got != 3 {
		t.Errorf("_other frames after c left = %v, want 3", got)
	}
	if _, ok := m["relaymesh_stream_frames_in_total{live}{a}"]; ok {
		t.Error("a's series outlived its hub")
	}
	if m["relaymesh_stream_frames_in_total{live}{e}"] != 1 {
		t.Errorf("e did not take a's label: %v", m)
	}
	if m["relaymesh_hub_frames_in_total"] != 6 {
		t.Errorf("total frames in = %v, want 6", m["relaymesh_hub_frames_in_total"])
	}
	for _, n := range []string{"b", "d"} {
		hubs[n].End()
		hubs[n].Release()
	}
	e.End()
	e.Release()
}

// TestStreamMetricsNone: a negative bound labels no stream.
func TestStreamMetricsNone(t *testing.T) {
	r := newTestRegistry(Config{MetricsStreams: -1})
	h := r.Acquire("live", "a")
	defer h.Release()
	h.Begin(PublisherInfo{})
	h.Write(av.KindVideo, 0, idr)
	m := collect(t, r)
	if _, ok := m["relaymesh_stream_frames_in_total{live}{a}"]; ok {
		t.Error("labelled with a negative bound")
	}
	if m["relaymesh_stream_frames_in_total{_other}{_other}"] != 1 {
		t.Errorf("not under _other: %v", m)
	}
	h.End()
}
