package packager

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/relaymesh/relaymesh/internal/av"
)

// value reads a counter or gauge.
func value(t testing.TB, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

// waitUntil polls cond (bounded); it is how tests wait for the server side.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// testServer starts a packager over a push source on loopback.
func testServer(t *testing.T, cfg Config, setup ...func(*http.Server)) (*Packager, *pushSource, *httptest.Server) {
	t.Helper()
	src := newPushSource()
	// The tests' streams are a segment or two: their MPDs come at once
	// (TestDASHStartWaitsForWindow checks the wait).
	cfg.DASHStartAtOnce = true
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	p, err := New(src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(p.Handler())
	for _, f := range setup {
		f(srv.Config)
	}
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		p.Close()
	})
	return p, src, srv
}

func get(t testing.TB, c *http.Client, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

var sidRE = regexp.MustCompile(`([0-9a-f]{8})_full_init\.mp4`)

// startStream makes the packager subscribe and produce segment 0 (complete)
// and segment 1 (one keyframe so far); it returns the session id.
func startStream(t *testing.T, src *pushSource, base string) (string, *pushSub) {
	t.Helper()
	done := make(chan []byte, 1)
	go func() {
		resp, err := http.Get(base + "/hls/live/test/full.m3u8")
		if err != nil {
			done <- nil
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- b
	}()
	sub := src.current(t)
	sub.push(synthGOPs(0, 1, true)...)
	sub.push(video(2000, keyframe(5000)))
	pl := <-done
	m := sidRE.FindSubmatch(pl)
	if m == nil {
		t.Fatalf("no session id in playlist:\n%s", pl)
	}
	return string(m[1]), sub
}

// TestThunderingHerd: 200 concurrent clients asking for the same new part,
// the same blocking playlist reload and the same segment in progress cause
// one production each, and all get the same bytes.
func TestThunderingHerd(t *testing.T) {
	const clients = 200
	p, src, srv := testServer(t, Config{MaxWait: 20 * time.Second})
	sid, sub := startStream(t, src, srv.URL)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * clients}}
	defer client.CloseIdleConnections()

	partsFull := p.m.parts.WithLabelValues("full")
	segsFull := p.m.segments.WithLabelValues("full")
	renders := p.m.renders.WithLabelValues("hls")
	p0, s0, r0 := value(t, partsFull), value(t, segsFull), value(t, renders)

	// 1. The next part and the blocking playlist reload that announces it.
	partURL := srv.URL + "/hls/live/test/" + sid + "_full_1.0.m4s"
	plURL := srv.URL + "/hls/live/test/full.m3u8?_HLS_msn=1&_HLS_part=0"
	var wg sync.WaitGroup
	parts := make([][]byte, clients)
	pls := make([][]byte, clients)
	codes := make([]int, 2*clients)
	for i := 0; i < clients; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			resp, err := client.Get(partURL)
			if err != nil {
				return
			}
			parts[i], _ = io.ReadAll(resp.Body)
			codes[i] = resp.StatusCode
			resp.Body.Close()
		}()
		go func() {
			defer wg.Done()
			resp, err := client.Get(plURL)
			if err != nil {
				return
			}
			pls[i], _ = io.ReadAll(resp.Body)
			codes[clients+i] = resp.StatusCode
			resp.Body.Close()
		}()
	}
	waitUntil(t, "every client to wait", func() bool { return value(t, p.m.waiting) == 2*clients })
	if got := value(t, partsFull); got != p0 {
		t.Fatalf("a part was produced before its frames arrived (%v)", got-p0)
	}
	// Frames up to the one that closes part 0 of segment 1 (200 ms), and no more.
	gop := synthGOPs(2000, 1, false)[1:] // after the keyframe already sent
	k := 0
	for gop[k].Kind != av.KindVideo || gop[k].Timestamp < 2200 {
		k++
	}
	sub.push(gop[:k+1]...)
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusOK {
			t.Fatalf("request %d: status %d", i, c)
		}
	}
	for i := 1; i < clients; i++ {
		if !bytes.Equal(parts[i], parts[0]) || !bytes.Equal(pls[i], pls[0]) {
			t.Fatalf("client %d got different bytes", i)
		}
	}
	if len(parts[0]) == 0 || !bytes.Contains(pls[0], []byte(sid+"_full_1.0.m4s")) {
		t.Fatalf("part of %d bytes; playlist:\n%s", len(parts[0]), pls[0])
	}
	if got := value(t, partsFull) - p0; got != 1 {
		t.Fatalf("%v productions of the part for %d clients, want 1", got, clients)
	}
	if got := value(t, renders) - r0; got != 1 {
		t.Fatalf("%v renderings of the playlist for %d clients, want 1", got, clients)
	}

	// 2. The segment in progress (DASH, by time): every client streams it
	// from the one buffer.
	segURL := srv.URL + "/dash/live/test/" + sid + "_full_t180000.m4s"
	segs := make([][]byte, clients)
	var started sync.WaitGroup
	started.Add(clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(segURL)
			started.Done()
			if err != nil {
				return
			}
			segs[i], _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}()
	}
	started.Wait()
	if got := value(t, segsFull); got != s0 {
		t.Fatalf("segment 1 complete too early (%v)", got-s0)
	}
	sub.push(gop[k+1:]...)
	sub.push(video(4000, keyframe(5000)))
	wg.Wait()
	if got := value(t, segsFull) - s0; got != 1 {
		t.Fatalf("%v productions of segment 1 for %d clients, want 1", got, clients)
	}
	_, whole := get(t, client, segURL)
	for i := 0; i < clients; i++ {
		if !bytes.Equal(segs[i], whole) {
			t.Fatalf("client %d: %d bytes, the segment has %d", i, len(segs[i]), len(whole))
		}
	}
	if !bytes.HasPrefix(whole, parts[0]) {
		t.Fatal("the segment does not start with its first part")
	}
}
