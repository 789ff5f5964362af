package redirector

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus"
)

// steerMesh is a redirector without a bus whose relays relay-as and
// relay-na carry live/a, with segments of it packaged.
func steerMesh(t *testing.T) *Redirector {
	t.Helper()
	r := newTest(t, nil, Config{DevIP: true})
	for i, id := range []string{"relay-as", "relay-na", "relay-eu"} {
		port := 40000 + 2*i
		var streams []bus.StreamStatus
		if id != "relay-eu" {
			streams = []bus.StreamStatus{{App: "live", Name: "a", Live: true, HTTPReady: true}}
		}
		r.onStatus(bus.Status{ID: id, RTMP: "127.0.0.1:" + itoa(port), HTTP: "127.0.0.1:" + itoa(port+1), Streams: streams, Time: time.Now()})
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
	ttl := DefaultSteeringTTL
	if strings.HasPrefix(target, "/steer/dash/") {
		ttl = DefaultDASHSteeringTTL
	}
	if m.Version != 1 || m.TTL != int(ttl/time.Second) || m.ReloadURI == "" {
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
			c.URIReplacement.PerRenditionURIs["audio"] != "http://127.0.0.1:40003/hls/live/a/audio.m3u8" ||
			c.URIReplacement.PerVariantURIs["ts_full"] != "http://127.0.0.1:40003/hls/live/a/ts_full.m3u8") {
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
	// Both names: SERVICE-LOCATION-PRIORITY (DASH-IF) and PATHWAY-PRIORITY
	// (what dash.js reads).
	if len(m.ServicePriority) != 3 || m.ServicePriority[0] != "relay-na" || !slices.Equal(m.PathwayPriority, m.ServicePriority) {
		t.Fatalf("priority %+v", m)
	}
	// Each server a clone of each one before it: dash.js keeps asking
	// with the first answer's RELOAD-URI (base=relay-na) after it moved
	// to another server, whose MPD's BaseURL is the base it can clone;
	// never of one after it (a player with an older answer stays on the
	// server of its newer MPD).
	clones := map[[2]string]string{}
	for _, c := range m.PathwayClones {
		clones[[2]string{c.BaseID, c.ID}] = c.URIReplacement.Host
		if c.URIReplacement.PerVariantURIs != nil {
			t.Errorf("a DASH clone with HLS URIs: %+v", c)
		}
	}
	p := m.PathwayPriority
	if len(clones) != 3 || clones[[2]string{p[0], p[1]}] == "" || clones[[2]string{p[0], p[2]}] == "" || clones[[2]string{p[1], p[2]}] == "" {
		t.Errorf("clones %v of %v", clones, p)
	}
	if clones[[2]string{"relay-na", "relay-as"}] != "http://127.0.0.1:40001" {
		t.Errorf("relay-as's clone %v", clones)
	}
	// relay-na died: out of the answer; the base it started on and the
	// service locations the player reports are bases of every server left.
	id, _ := r.mesh.ServerByID("relay-na")
	r.markDown(id, "test")
	m = steering(t, r.Handler(), "/steer/dash/live/a?base=relay-na&ip=198.51.100.10&_DASH_pathway=%22relay-na,relay-eu,nobody%22")
	if slices.Contains(m.PathwayPriority, "relay-na") || len(m.PathwayPriority) != 2 {
		t.Fatalf("priority after relay-na died: %v", m.PathwayPriority)
	}
	clones = map[[2]string]string{}
	for _, c := range m.PathwayClones {
		clones[[2]string{c.BaseID, c.ID}] = c.URIReplacement.Host
	}
	p = m.PathwayPriority
	if len(clones) != 5 || clones[[2]string{p[0], p[1]}] == "" || clones[[2]string{"relay-na", p[0]}] == "" || clones[[2]string{"relay-na", p[1]}] == "" ||
		clones[[2]string{"relay-eu", p[0]}] == "" || clones[[2]string{"relay-eu", p[1]}] == "" {
		t.Errorf("clones %v of %v", clones, p)
	}
}

// TestSteeringManifestRedirect: the MPD Location of a steered server is
// the redirector's /steer/dash/…/manifest.mpd, which redirects to the
// first server of the steering answer: the base while it is up, another
// one once it is drained (a refresh of dash.js lands on a live server).
func TestSteeringManifestRedirect(t *testing.T) {
	r := steerMesh(t)
	h := r.Handler()
	loc := func(target string) string {
		w := get(t, h, target, nil)
		if w.Code != http.StatusFound || w.Header().Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("%s: %d %v", target, w.Code, w.Header())
		}
		return w.Header().Get("Location")
	}
	if got := loc("/steer/dash/live/a/manifest.mpd?base=relay-as"); got != "http://127.0.0.1:40001/dash/live/a/manifest.mpd" {
		t.Errorf("base relay-as up: %s", got)
	}
	r.onAlive(bus.Alive{ID: "relay-as", Draining: true, Time: time.Now()}, time.Now())
	if got := loc("/steer/dash/live/a/manifest.mpd?base=relay-as"); strings.Contains(got, ":40001/") || !strings.HasSuffix(got, "/dash/live/a/manifest.mpd") {
		t.Errorf("base relay-as drained: %s", got)
	}
	if w := get(t, h, "/steer/dash/live/a%20b/manifest.mpd", nil); w.Code != http.StatusBadRequest {
		t.Errorf("bad name: %d", w.Code)
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

// TestSteeringWarmCarriers: a relay that pulls a stream on its own (a
// viewer went to it directly, no placement) is a pathway of that stream;
// servers without segments of it packaged come after those with, so a
// player is not moved to a packager that has just started (404s, a
// stall) while one that serves is left; a stream the relay no longer
// reports is no longer steered to it.
func TestSteeringWarmCarriers(t *testing.T) {
	r := steerMesh(t)
	h := r.Handler()
	status := func(id string, port int, streams ...bus.StreamStatus) {
		r.onStatus(bus.Status{ID: id, RTMP: "127.0.0.1:" + itoa(port), HTTP: "127.0.0.1:" + itoa(port+1), Streams: streams, Time: time.Now()})
	}
	// relay-eu pulls live/b for a viewer of its own: it is listed, first.
	status("relay-eu", 40004, bus.StreamStatus{App: "live", Name: "b", Live: true, HTTPReady: true})
	m := steering(t, h, "/steer/hls/live/b?base=relay-eu&ip=198.51.100.10")
	if !slices.Equal(m.PathwayPriority, []string{"relay-eu", "primary"}) {
		t.Errorf("live/b from relay-eu, a viewer in New York: %v", m.PathwayPriority)
	}
	// relay-na carries live/a without segments yet: a player in New York
	// on relay-as stays on relay-as (and would move to relay-na only
	// after it); once relay-na has segments it goes first.
	status("relay-na", 40002, bus.StreamStatus{App: "live", Name: "a", Live: true})
	m = steering(t, h, "/steer/hls/live/a?base=relay-as&ip=198.51.100.10")
	if len(m.PathwayPriority) < 2 || m.PathwayPriority[0] != "relay-as" || m.PathwayPriority[1] != "relay-na" {
		t.Errorf("relay-na cold: %v", m.PathwayPriority)
	}
	status("relay-na", 40002, bus.StreamStatus{App: "live", Name: "a", Live: true, HTTPReady: true})
	if m := steering(t, h, "/steer/hls/live/a?base=relay-as&ip=198.51.100.10"); m.PathwayPriority[0] != "relay-na" {
		t.Errorf("relay-na warm: %v", m.PathwayPriority)
	}
	// The same holds for the MPD's location.
	if w := get(t, h, "/steer/dash/live/a/manifest.mpd?base=relay-as&ip=198.51.100.10", nil); !strings.Contains(w.Header().Get("Location"), ":40003/") {
		t.Errorf("manifest location %d %q", w.Code, w.Header().Get("Location"))
	}
	// relay-eu stops carrying live/b: only the primary is left.
	status("relay-eu", 40004)
	if m := steering(t, h, "/steer/hls/live/b?base=relay-eu&ip=198.51.100.10"); !slices.Equal(m.PathwayPriority, []string{"primary"}) {
		t.Errorf("live/b after relay-eu let it go: %v", m.PathwayPriority)
	}
}
