package redirector

import (
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/placement"
)

// discardWriter is a ResponseWriter that keeps nothing but its header map
// (cleared between requests), so the benchmark measures the redirector.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}

// benchRedirector is the dev world's redirector without a bus, with every
// relay up and one stream placed on relay-na and relay-as.
func benchRedirector(b *testing.B) *Redirector {
	r := newTest(b, nil, Config{DevIP: true, TokenKey: []byte("bench-secret")})
	for _, s := range []bus.Status{
		{ID: "relay-eu", Location: "eu", RTMP: "127.0.0.1:40001", HTTP: "127.0.0.1:40002"},
		{ID: "relay-na", Location: "na", RTMP: "127.0.0.1:40011", HTTP: "127.0.0.1:40012"},
		{ID: "relay-as", Location: "as", RTMP: "127.0.0.1:40021", HTTP: "127.0.0.1:40022"},
		{ID: "relay-sa", Location: "sa", RTMP: "127.0.0.1:40031", HTTP: "127.0.0.1:40032"},
	} {
		s.Time = time.Now()
		r.onStatus(s)
	}
	r.onPlacement(bus.Placement{App: "live", Name: "bench", Relays: []bus.PlacedRelay{
		{Server: "relay-na", Parent: "primary", State: bus.StateReady},
		{Server: "relay-as", Parent: "primary", State: bus.StateReady},
	}})
	return r
}

// benchPlay serves target over and over; every 64 requests the viewer
// counts the redirector added are reset so the servers never fill up.
func benchPlay(b *testing.B, target, accept, want string) {
	r := benchRedirector(b)
	h := r.Handler()
	w := &discardWriter{h: http.Header{}}
	req := httptest.NewRequest("GET", target, nil)
	req.RemoteAddr = "127.0.0.1:5555"
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	first := httptest.NewRecorder()
	h.ServeHTTP(first, req)
	if first.Code != http.StatusOK && first.Code != http.StatusFound {
		b.Fatalf("%s: %d %s", target, first.Code, first.Body)
	}
	if got := first.Header().Get("Location") + first.Body.String(); !strings.Contains(got, want) {
		b.Fatalf("%s: answer %q does not name %s", target, got, want)
	}
	n := len(r.cfg.Graph.Servers())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%64 == 0 {
			for id := range n {
				r.mesh.SetLoad(placement.ServerID(id), 0, 0)
			}
		}
		clear(w.h)
		h.ServeHTTP(w, req)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}

// BenchmarkPlayRedirect is one HTTP /play decision answered with a 302
// (what a player gets): geo lookup, placement, sticky token, demand note.
func BenchmarkPlayRedirect(b *testing.B) {
	benchPlay(b, "/play/live/bench?proto=hls&ip=198.51.100.10", "", "127.0.0.1:40012")
}

// BenchmarkPlayJSON is the same decision answered as JSON.
func BenchmarkPlayJSON(b *testing.B) {
	benchPlay(b, "/play/live/bench?proto=rtmp&ip=203.0.113.10", "application/json", `"relay":"relay-as"`)
}

// BenchmarkChooseSticky is the placement step alone for a known stream.
func BenchmarkChooseSticky(b *testing.B) {
	r := benchRedirector(b)
	sid, ok := r.mesh.Stream("live/bench")
	if !ok {
		b.Fatal("stream not placed")
	}
	v, _ := r.mesh.Graph().Vertex("na")
	rnd := r.rnd.Get().(*mrand.Rand)
	b.ReportAllocs()
	for b.Loop() {
		r.mesh.ChooseSticky(v, sid, placement.Claims{}, rnd)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}
