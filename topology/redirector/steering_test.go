package redirector

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus"
)

// steerMesh is a redirector without a bus whose relays relay-as and
// relay-na carry live/a.
func steerMesh(t *testing.T) *Redirector {
	t.Helper()
	r := newTest(t, nil, Config{DevIP: true})
	for i, id := range []string{"relay-as", "relay-na", "relay-eu"} {
		port := 40000 + 2*i
		r.onStatus(bus.Status{ID: id, RTMP: "127.0.0.1:" + itoa(port), HTTP: "127.0.0.1:" + itoa(port+1), Time: time.Now()})
	}
	r.onPlacement(bus.Placement{App: "live", Name: "a", Relays: []bus.PlacedRelay{
		{Server: "relay-as", State: bus.StateReady}, {Server: "relay-na", State: bus.StateReady}}})
	return r
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func steering(t *testing.T, h http.Handler, target string) SteeringManifest {
	t.Helper()
	w := get(t, h, target, nil)
	if w.Code != 200 || w.Header().Get("Access-Control-Allow-Origin") != "*" || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%s: %d %v %s", target, w.Code, w.Header(), w.Body)
	}
	var m SteeringManifest
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m.Version != 1 || m.TTL != 5 || m.ReloadURI == "" {
		t.Fatalf("%s: %+v", target, m)
	}
	return m
}

func TestSteeringHLS(t *testing.T) {
	r := steerMesh(t)
	h := r.Handler()
	// A player in Tokyo on relay-as: relay-as, then the others by distance.
	m := steering(t, h, "/steer/hls/live/a?base=relay-as&ip=203.0.113.5&_HLS_pathway=relay-as&_HLS_throughput=5000000")
	if len(m.PathwayPriority) != 3 || m.PathwayPriority[0] != "relay-as" || !slices.Contains(m.PathwayPriority, "primary") ||
		!slices.Contains(m.PathwayPriority, "relay-na") || slices.Contains(m.PathwayPriority, "relay-eu") {
		t.Fatalf("priority %v", m.PathwayPriority)
	}
	if m.ReloadURI != "/steer/hls/live/a?base=relay-as" {
		t.Errorf("reload %q", m.ReloadURI)
	}
	if len(m.PathwayClones) != 2 {
		t.Fatalf("clones %+v", m.PathwayClones)
	}
	for _, c := range m.PathwayClones {
		if c.BaseID != "relay-as" || c.URIReplacement.Host != "127.0.0.1" {
			t.Errorf("clone %+v", c)
		}
		if c.ID == "relay-na" && (c.URIReplacement.PerVariantURIs["full"] != "http://127.0.0.1:40003/hls/live/a/full.m3u8" ||
			c.URIReplacement.PerRenditionURIs["audio"] != "http://127.0.0.1:40003/hls/live/a/audio.m3u8") {
			t.Errorf("relay-na's clone %+v", c)
		}
	}
	// A player in New York is steered to relay-na first.
	if m := steering(t, h, "/steer/hls/live/a?base=relay-as&ip=198.51.100.10"); m.PathwayPriority[0] != "relay-na" {
		t.Errorf("New York: %v", m.PathwayPriority)
	}
	// relay-as drains: it leaves the answer at once, the rest stays.
	r.onAlive(bus.Alive{ID: "relay-as", Draining: true, Time: time.Now()}, time.Now())
	if m := steering(t, h, "/steer/hls/live/a?base=relay-as&ip=203.0.113.5"); slices.Contains(m.PathwayPriority, "relay-as") || len(m.PathwayPriority) != 2 {
		t.Errorf("after relay-as drained: %v", m.PathwayPriority)
	}
	// relay-na says goodbye: only the primary is left.
	r.onAlive(bus.Alive{ID: "relay-na", Bye: true, Time: time.Now()}, time.Now())
	if m := steering(t, h, "/steer/hls/live/a?base=relay-as&ip=203.0.113.5"); !slices.Equal(m.PathwayPriority, []string{"primary"}) {
		t.Errorf("after relay-na left: %v", m.PathwayPriority)
	}
	// A stream nobody relays: the primary; bad requests are refused.
	if m := steering(t, h, "/steer/hls/live/other?base=nobody"); !slices.Equal(m.PathwayPriority, []string{"primary"}) || len(m.PathwayClones) != 0 {
		t.Errorf("unknown stream: %+v", m)
	}
	for _, bad := range []string{"/steer/rtmp/live/a", "/steer/hls/live/a%20b"} {
		if w := get(t, h, bad, nil); w.Code != http.StatusBadRequest {
			t.Errorf("%s: %d", bad, w.Code)
		}
	}
}

func TestSteeringDASH(t *testing.T) {
	r := steerMesh(t)
	m := steering(t, r.Handler(), "/steer/dash/live/a?base=relay-na&ip=198.51.100.10&_DASH_pathway=relay-na")
	if len(m.ServicePriority) != 3 || m.ServicePriority[0] != "relay-na" || len(m.PathwayPriority) != 0 {
		t.Fatalf("priority %+v", m)
	}
	for _, c := range m.PathwayClones {
		if c.ID == "relay-as" && (c.BaseID != "relay-na" || c.URIReplacement.Host != "http://127.0.0.1:40001" || c.URIReplacement.PerVariantURIs != nil) {
			t.Errorf("relay-as's clone %+v", c)
		}
	}
}

func TestCORSAndPreflight(t *testing.T) {
	h := newTest(t, nil, Config{DevIP: true}).Handler()
	for _, target := range []string{"/play/live/a?proto=hls", "/api/v1/mesh", "/steer/hls/live/a?base=primary"} {
		w := get(t, h, target, nil)
		if w.Header().Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("GET %s: %d without CORS headers %v", target, w.Code, w.Header())
		}
		req := httptest.NewRequest("OPTIONS", target, nil)
		req.Header.Set("Origin", "https://player.example")
		req.Header.Set("Access-Control-Request-Method", "GET")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusNoContent || rec.Header().Get("Access-Control-Allow-Origin") != "*" ||
			rec.Header().Get("Access-Control-Allow-Methods") == "" {
			t.Errorf("OPTIONS %s: %d %v", target, rec.Code, rec.Header())
		}
	}
}
