package hub

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/relaymesh/relaymesh/internal/av"
)

func TestRegistryLifecycle(t *testing.T) {
	r := newTestRegistry(Config{})
	if r.Lookup("live", "a") != nil {
		t.Fatal("lookup of an absent hub")
	}
	a := r.Acquire("live", "a")
	if r.Acquire("live", "a") != a {
		t.Fatal("second Acquire made a new hub")
	}
	r.Acquire("app", "z").Release() // idle: removed at once
	b := r.Acquire("app", "b")
	c := r.Acquire("live", "0")
	if got := r.List(); len(got) != 3 || got[0] != b || got[1] != c || got[2] != a {
		t.Fatalf("List order: %v", names(got))
	}
	if r.Lookup("live", "a") != a || a.App() != "live" || a.Name() != "a" {
		t.Fatal("lookup")
	}

	a.Begin(PublisherInfo{})
	a.Release()
	a.Release() // no references, but live
	if r.Lookup("live", "a") != a {
		t.Fatal("live hub removed")
	}
	s := a.Subscribe(SubscribeOptions{})
	a.End() // no references, a subscriber
	if r.Lookup("live", "a") != a {
		t.Fatal("hub with a subscriber removed")
	}
	s.Close()
	if r.Lookup("live", "a") != nil {
		t.Fatal("idle hub kept")
	}
	if n := r.Acquire("live", "a"); n == a || n.Live() {
		t.Fatal("Acquire after removal returned the old hub")
	}
	a.Release() // a stale extra Release is harmless
	b.Release()
	c.Release()
	if got := r.List(); len(got) != 1 {
		t.Fatalf("left: %v", names(got))
	}
}

func names(hs []*Hub) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.App()+"/"+h.Name())
	}
	return out
}

func TestInfo(t *testing.T) {
	r := newTestRegistry(Config{})
	h := r.Acquire("live", "cam")
	defer h.Release()
	h.Begin(PublisherInfo{Addr: "127.0.0.1:5000", ID: "c7"})
	h.Write(av.KindData, 0, amfMeta(1920, 1080))
	if in := h.Info(); in.Width != 1920 || in.Height != 1080 {
		t.Fatalf("size from metadata: %dx%d", in.Width, in.Height)
	}
	h.Write(av.KindVideo, 0, avcSeq) // the SPS says 640x360 and wins
	h.Write(av.KindAudio, 0, aacSeq)
	v := h.Subscribe(SubscribeOptions{ID: "v1", Addr: "127.0.0.1:6000"})
	defer v.Close()
	l := h.Subscribe(SubscribeOptions{ID: "r1", Lossless: true})
	defer l.Close()
	payload := make([]byte, 1000)
	copy(payload, idr)
	for ts := uint32(0); ts < 6000; ts += 10 { // 100 kB/s = 800 kbps
		h.Write(av.KindVideo, ts, payload)
	}
	in := h.Info()
	if in.App != "live" || in.Name != "cam" || !in.Live || in.PublisherAddr != "127.0.0.1:5000" || in.PublisherID != "c7" {
		t.Fatalf("info %+v", in)
	}
	if in.VideoCodec != "h264" || in.AudioCodec != "aac" || in.Width != 640 || in.Height != 360 {
		t.Fatalf("media %s %s %dx%d", in.VideoCodec, in.AudioCodec, in.Width, in.Height)
	}
	if in.BitrateKbps != 800 {
		t.Fatalf("bitrate %d kbps", in.BitrateKbps)
	}
	if in.Viewers != 1 || len(in.Subscribers) != 2 || in.Subscribers[0].ID != "v1" || in.Subscribers[1].Kind != "lossless" {
		t.Fatalf("subscribers %+v", in.Subscribers)
	}
	h.End()
	if in := h.Info(); in.Live || in.VideoCodec != "" || in.BitrateKbps != 0 {
		t.Fatalf("after End: %+v", in)
	}
}

func TestBitrateStart(t *testing.T) {
	var b bitrate
	if b.kbps(0) != 0 {
		t.Fatal("empty")
	}
	b.add(500, 1000)
	b.add(900, 1000)
	if got := b.kbps(900); got != 0 {
		t.Fatalf("no whole second yet: %d", got)
	}
	b.add(1500, 1000)
	if got := b.kbps(1500); got != 16 {
		t.Fatalf("first second: %d", got)
	}
	b.add(9000, 500) // a jump: old buckets age out
	if got := b.kbps(9000); got != 0 {
		t.Fatalf("after a gap: %d", got)
	}
}

// collect gathers the registry's metrics as name{label} → value.
func collect(t testing.TB, r *Registry) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := r.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			k := mf.GetName()
			for _, l := range m.GetLabel() {
				k += "{" + l.GetValue() + "}"
			}
			out[k] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return m.GetGauge().GetValue()
}

func TestMetrics(t *testing.T) {
	r := newTestRegistry(Config{ViewerQueueFrames: 4})
	h := r.Acquire("live", "m")
	h.Begin(PublisherInfo{})
	v := h.Subscribe(SubscribeOptions{})
	l := h.Subscribe(SubscribeOptions{Lossless: true})
	h.Write(av.KindVideo, 0, idr)
	for i := 1; i < 10; i++ {
		h.Write(av.KindVideo, uint32(i), pRef)
	}
	drain(t, l)
	m := collect(t, r)
	want := map[string]float64{
		"relaymesh_hub_streams":                     1,
		"relaymesh_hub_streams_live":                1,
		"relaymesh_hub_subscribers{viewer}":         1,
		"relaymesh_hub_subscribers{lossless}":       1,
		"relaymesh_hub_frames_in_total":             10,
		"relaymesh_hub_frames_sent_total":           10, // the lossless subscriber
		"relaymesh_hub_frames_dropped_total{inter}": 8,  // the viewer: after 2 queued
		"relaymesh_hub_frames_dropped_total{key}":   0,
	}
	for k, w := range want {
		if m[k] != w {
			t.Errorf("%s = %v, want %v", k, m[k], w)
		}
	}
	// Counters survive subscribers and hubs leaving.
	v.Close()
	l.Close()
	h.End()
	h.Release()
	m = collect(t, r)
	if m["relaymesh_hub_streams"] != 0 || m["relaymesh_hub_frames_sent_total"] != 10 ||
		m["relaymesh_hub_frames_dropped_total{inter}"] != 8 || m["relaymesh_hub_frames_in_total"] != 10 {
		t.Fatalf("after removal: %v", m)
	}
}
