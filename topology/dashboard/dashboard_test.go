package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/orchestrator"
	"github.com/relaymesh/relaymesh/topology/redirector"
)

// fakeMesh is a mesh view that changes when told to.
type fakeMesh struct {
	viewers atomic.Int64
}

func (f *fakeMesh) view() redirector.MeshView {
	return redirector.MeshView{
		Relays:  []redirector.MeshRelay{{ID: "relay-na", Location: "na", Status: "up", Viewers: f.viewers.Load(), Capacity: 100}},
		Streams: []redirector.MeshStream{{App: "live", Name: "cam", Relays: []string{"relay-na"}}},
		Bonus:   []redirector.BonusInfo{{App: "live", Name: "cam", Location: "as", Value: 0.5, Threshold: 1}},
		Primary: redirector.MeshPrimary{ID: "primary"},
	}
}

func newTest(t *testing.T, cfg Config) (*Dashboard, *httptest.Server, context.CancelFunc) {
	t.Helper()
	g, err := graph.DevWorld()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Graph = g
	d, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = d.Run(ctx) }()
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() { cancel(); wg.Wait(); srv.Close() })
	return d, srv, cancel
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func TestPageAndAssets(t *testing.T) {
	var fm fakeMesh
	_, srv, _ := newTest(t, Config{Mesh: fm.view})
	resp, body := get(t, srv.URL+"/")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("page: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{"/dashboard/hls.min.js", "/dashboard/app.js", "/dashboard/style.css", `id="map"`,
		`id="pause"`, "<th>codecs</th>", "<th>bitrate</th>"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	resp, body = get(t, srv.URL+"/dashboard/hls.min.js")
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), "javascript") {
		t.Fatalf("hls.min.js: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	if len(body) < 100000 || !strings.Contains(body, "Hls") {
		t.Fatalf("hls.min.js is not the player (%d bytes)", len(body))
	}
	for _, p := range []string{"/dashboard/app.js", "/dashboard/style.css", "/dashboard/hls.js.LICENSE"} {
		if resp, _ := get(t, srv.URL+p); resp.StatusCode != 200 {
			t.Errorf("%s: %s", p, resp.Status)
		}
	}
	for _, p := range []string{"/nope", "/dashboard/", "/dashboard/nope.js", "/dashboard/../dashboard.go"} {
		if resp, _ := get(t, srv.URL+p); resp.StatusCode != 404 {
			t.Errorf("%s: %s, want 404", p, resp.Status)
		}
	}
}

func TestGraph(t *testing.T) {
	var fm fakeMesh
	_, srv, _ := newTest(t, Config{Mesh: fm.view})
	resp, body := get(t, srv.URL+"/api/v1/graph")
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	var gv GraphView
	if err := json.Unmarshal([]byte(body), &gv); err != nil {
		t.Fatal(err)
	}
	if len(gv.Locations) < 6 || len(gv.Links) == 0 || len(gv.Servers) != 5 {
		t.Fatalf("graph: %d locations, %d links, %d servers", len(gv.Locations), len(gv.Links), len(gv.Servers))
	}
	for _, l := range gv.Links {
		if l[0] < 0 || l[1] >= len(gv.Locations) || l[0] >= l[1] {
			t.Fatalf("bad link %v", l)
		}
	}
}

// readEvent reads one "mesh" event, skipping comments and the retry line.
func readEvent(t *testing.T, r *bufio.Reader) Snapshot {
	t.Helper()
	var event, data string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("event stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if event == "mesh" {
				var s Snapshot
				if err := json.Unmarshal([]byte(data), &s); err != nil {
					t.Fatalf("event data %q: %v", data, err)
				}
				return s
			}
			event, data = "", ""
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data += line[len("data: "):]
		}
	}
}

func TestEventsFollowTheMesh(t *testing.T) {
	var fm fakeMesh
	decisions := []orchestrator.Decision{{Action: "open", App: "live", Name: "cam", Server: "relay-na", Reason: "demand bonus 1.2 ≥ 1"}}
	_, srv, _ := newTest(t, Config{Mesh: fm.view, Interval: 10 * time.Millisecond,
		Decisions: func() []orchestrator.Decision { return decisions }, Leader: func() bool { return true }})
	resp, err := http.Get(srv.URL + "/api/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	s := readEvent(t, r)
	if len(s.Relays) != 1 || s.Relays[0].Viewers != 0 || len(s.Streams) != 1 || len(s.Bonus) != 1 ||
		!s.Leader || len(s.Decisions) != 1 || s.Decisions[0].Reason == "" {
		t.Fatalf("first event %+v", s)
	}
	fm.viewers.Store(42)
	for i := 0; ; i++ {
		s = readEvent(t, r)
		if s.Relays[0].Viewers == 42 {
			break
		}
		if i > 100 {
			t.Fatal("the change never came")
		}
	}
	// The same fields as /api/v1/mesh, at the top level.
	var raw map[string]json.RawMessage
	data, _ := json.Marshal(s)
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"relays", "streams", "bonus", "primary", "decisions", "leader"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("snapshot lacks %q", k)
		}
	}
}

func TestEventsBoundedAndStopped(t *testing.T) {
	var fm fakeMesh
	_, srv, cancel := newTest(t, Config{Mesh: fm.view, MaxClients: 2, Heartbeat: 20 * time.Millisecond})
	var bodies []io.ReadCloser
	for range 2 {
		resp, err := http.Get(srv.URL + "/api/v1/events")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Fatal(resp.Status)
		}
		bodies = append(bodies, resp.Body)
	}
	readEvent(t, bufio.NewReader(bodies[0]))
	resp, _ := get(t, srv.URL+"/api/v1/events")
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third client: %s", resp.Status)
	}
	// Heartbeats arrive while nothing changes.
	r := bufio.NewReader(bodies[1])
	readEvent(t, r)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == ": ping\n" {
			break
		}
	}
	// Stopping the dashboard ends the streams.
	cancel()
	for _, b := range bodies {
		if _, err := io.Copy(io.Discard, b); err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
}

func TestNewRequiresGraphAndMesh(t *testing.T) {
	if _, err := New(Config{}, nil); err == nil {
		t.Fatal("no error")
	}
}

// BenchmarkRefresh is the cost of one snapshot, paid once per interval
// whatever the number of event streams (they all write the same bytes).
func BenchmarkRefresh(b *testing.B) {
	g, _ := graph.DevWorld()
	var fm fakeMesh
	d, _ := New(Config{Graph: g, Mesh: fm.view}, nil)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		fm.viewers.Store(int64(i))
		d.refresh()
	}
}
