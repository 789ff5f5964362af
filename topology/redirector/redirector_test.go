package redirector

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/relaymesh/relaymesh/geo"
	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/bus/bustest"
	"github.com/relaymesh/relaymesh/topology/graph"
)

func newTest(t testing.TB, conn *bus.Conn, cfg Config) *Redirector {
	t.Helper()
	g, err := graph.DevWorld()
	if err != nil {
		t.Fatal(err)
	}
	db, err := geo.OpenDefault()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Graph, cfg.Geo = g, db
	r, err := New(cfg, conn, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func get(t testing.TB, h http.Handler, target string, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", target, nil)
	req.RemoteAddr = "127.0.0.1:5555"
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func choice(t *testing.T, h http.Handler, target string) Choice {
	t.Helper()
	w := get(t, h, target, map[string]string{"Accept": "application/json"})
	if w.Code != 200 {
		t.Fatalf("%s: %d %s", target, w.Code, w.Body)
	}
	var c Choice
	if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestPlayFollowsPlacementsAndPublishesDemand(t *testing.T) {
	_, c := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := c.OpenBuckets(ctx, bus.BucketConfig{})
	if err != nil {
		t.Fatal(err)
	}
	demand := make(chan *nats.Msg, 16)
	sub, _ := c.NC.ChanSubscribe(bus.DemandSubject, demand)
	defer sub.Unsubscribe()

	r := newTest(t, c, Config{DevIP: true, DemandInterval: 50 * time.Millisecond})
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	h := r.Handler()

	// Before any placement: everyone goes to the primary.
	if ch := choice(t, h, "/play/live/a?ip=203.0.113.5"); ch.Relay != "primary" || ch.Viewer != "JP" {
		t.Fatalf("before placement: %+v", ch)
	}
	st, _ := bus.Encode(bus.Status{ID: "relay-as", Location: "as", RTMP: "127.0.0.1:40001", HTTP: "127.0.0.1:40002", Time: time.Now()})
	if _, err := b.Relays.Put(ctx, "relay-as", st); err != nil {
		t.Fatal(err)
	}
	pl, _ := bus.Encode(bus.Placement{App: "live", Name: "a", Relays: []bus.PlacedRelay{{Server: "relay-as", Parent: "primary", State: bus.StateReady}}})
	if _, err := b.Placements.Put(ctx, bus.StreamKey("live", "a"), pl); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "relay-as in the mesh", func() bool { return choice(t, h, "/play/live/a?ip=203.0.113.5").Relay == "relay-as" })

	// Tokyo → relay-as at its reported address; Berlin → the primary (eu).
	w := get(t, h, "/play/live/a?ip=203.0.113.5&proto=hls", nil)
	if w.Code != http.StatusFound || w.Header().Get("Location") != "http://127.0.0.1:40002/hls/live/a/index.m3u8" {
		t.Fatalf("hls redirect: %d %q", w.Code, w.Header().Get("Location"))
	}
	if !strings.Contains(w.Header().Get("Set-Cookie"), TokenCookie) {
		t.Fatal("no sticky cookie")
	}
	if ch := choice(t, h, "/play/live/a?ip=192.0.2.7&proto=rtmp"); ch.Relay != "primary" || ch.URL != "rtmp://127.0.0.1:1935/live/a" {
		t.Fatalf("Berlin: %+v", ch)
	}
	w = get(t, h, "/play/live/a?ip=203.0.113.5&proto=dash", nil)
	if loc := w.Header().Get("Location"); loc != "http://127.0.0.1:40002/dash/live/a/manifest.mpd" {
		t.Fatalf("dash redirect %q", loc)
	}

	// The requests reach the bus as demand batches.
	select {
	case m := <-demand:
		d, err := bus.DecodeDemand(m.Data)
		if err != nil || len(d.Events) == 0 {
			t.Fatalf("demand %v %+v", err, d)
		}
	case <-ctx.Done():
		t.Fatal("no demand published")
	}

	// The mesh API lists the stream and the relay.
	var mv MeshView
	if err := json.Unmarshal(get(t, h, "/api/v1/mesh", nil).Body.Bytes(), &mv); err != nil {
		t.Fatal(err)
	}
	if len(mv.Streams) != 1 || mv.Streams[0].Relays[0] != "relay-as" || mv.Primary.RTMPURL != "rtmp://127.0.0.1:1935" || len(mv.Relays) != 4 {
		t.Fatalf("mesh view %+v", mv)
	}
	// The orchestrator closes the relay: viewers go back to the primary.
	if err := b.Placements.Delete(ctx, bus.StreamKey("live", "a")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "relay-as out of the mesh", func() bool { return choice(t, h, "/play/live/a?ip=203.0.113.5").Relay == "primary" })
}

func TestViewerAddress(t *testing.T) {
	trusted, err := ParseTrusted("10.0.0.0/8, 127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	r := newTest(t, nil, Config{TrustedProxies: trusted})
	for _, tc := range []struct{ remote, xff, want string }{
		{"198.51.100.1:1", "203.0.113.9", "198.51.100.1"},       // untrusted peer: header ignored
		{"127.0.0.1:1", "203.0.113.9", "203.0.113.9"},           // trusted proxy
		{"127.0.0.1:1", "203.0.113.9, 10.1.2.3", "203.0.113.9"}, // chain of trusted proxies
		{"127.0.0.1:1", "1.1.1.1, 203.0.113.9", "203.0.113.9"},  // spoofed first hop is not believed
		{"127.0.0.1:1", "garbage", "127.0.0.1"},
	} {
		req := httptest.NewRequest("GET", "/play/live/a?ip=192.0.2.1", nil)
		req.RemoteAddr = tc.remote
		req.Header.Set("X-Forwarded-For", tc.xff)
		a, ok := r.viewerAddr(req)
		if !ok || a != netip.MustParseAddr(tc.want) {
			t.Errorf("%s + %q: %v, want %s", tc.remote, tc.xff, a, tc.want)
		}
	}
	// Without DevIP, ?ip= is ignored; a bad request is refused.
	h := r.Handler()
	if w := get(t, h, "/play/live/a?proto=ftp", nil); w.Code != 400 {
		t.Fatalf("bad proto: %d", w.Code)
	}
	if w := get(t, h, "/play/live/a%20b", nil); w.Code != 400 {
		t.Fatalf("bad name: %d", w.Code)
	}
}

// FuzzPlay sends hostile paths, queries and headers to the handler: any
// status is fine, a panic is not.
func FuzzPlay(f *testing.F) {
	f.Add("/play/live/a?ip=203.0.113.5&proto=hls", "1.2.3.4, 10.0.0.1", "")
	f.Add("/play/live/a?token=AAAA", "", "relaymesh_sticky=xyz")
	f.Add("/play/live/0a1b2c3d_full_init.mp4", "", "relaymesh_sticky=xyz")
	f.Add("/steer/hls/live/a?base=relay-as&_HLS_pathway=relay-as", "", "")
	f.Add("/steer/dash/live/a?base=%22relay-as%22&ip=203.0.113.5", "", "")
	r := newTest(f, nil, Config{DevIP: true, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	h := r.Handler()
	f.Fuzz(func(t *testing.T, target, xff, cookie string) {
		if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \r\n\t") {
			return
		}
		req, err := http.NewRequest("GET", "http://x"+target, nil)
		if err != nil {
			return
		}
		req.RemoteAddr = "127.0.0.1:1"
		req.Header.Set("X-Forwarded-For", xff)
		req.Header.Set("Cookie", cookie)
		req.Header.Set("Accept", "application/json")
		h.ServeHTTP(httptest.NewRecorder(), req)
	})
}
