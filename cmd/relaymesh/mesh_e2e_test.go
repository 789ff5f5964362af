package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/relaymesh/relaymesh/geo"
	"github.com/relaymesh/relaymesh/ingest"
	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/hub"
	"github.com/relaymesh/relaymesh/internal/serve"
	"github.com/relaymesh/relaymesh/loadtest/swarm"
	"github.com/relaymesh/relaymesh/relay/agent"
	"github.com/relaymesh/relaymesh/relay/pull"
	"github.com/relaymesh/relaymesh/topology/dashboard"
	"github.com/relaymesh/relaymesh/topology/demand"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/orchestrator"
	"github.com/relaymesh/relaymesh/topology/redirector"
	"github.com/relaymesh/relaymesh/topology/scaling"
)

// Viewer addresses of the built-in demo GeoIP database.
const (
	ipDE = "192.0.2.10"    // Berlin: the primary's region
	ipUS = "198.51.100.10" // New York: relay-na
	ipJP = "203.0.113.10"  // Tokyo: relay-as
)

// rdClient talks to a redirector's HTTP.
type rdClient struct {
	t   *testing.T
	ctx context.Context
	web string // http://host:port
}

func (c rdClient) getJSON(path string, v any) error {
	req, err := http.NewRequestWithContext(c.ctx, "GET", c.web+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: %s %s", path, resp.Status, b)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// choose asks /play where a viewer at ip plays stream (app/name) over RTMP.
func (c rdClient) choose(stream, ip string) redirector.Choice {
	c.t.Helper()
	var ch redirector.Choice
	if err := c.getJSON("/play/"+stream+"?proto=rtmp&ip="+url.QueryEscape(ip), &ch); err != nil {
		c.t.Fatal(err)
	}
	return ch
}

func (c rdClient) mesh() redirector.MeshView {
	c.t.Helper()
	var mv redirector.MeshView
	if err := c.getJSON("/api/v1/mesh", &mv); err != nil {
		c.t.Fatal(err)
	}
	return mv
}

func (c rdClient) waitRelaysUp(n int) redirector.MeshView {
	c.t.Helper()
	var mv redirector.MeshView
	// The primary too: until it reports, the view has its configured
	// URLs, not those it listens on (a test then published to a port
	// nothing listened on).
	waitFor(c.t, "relays up", 15*time.Second, func() bool {
		mv = c.mesh()
		if mv.Primary.Status != "up" {
			return false
		}
		up := 0
		for _, r := range mv.Relays {
			if r.Status == "up" {
				up++
			}
		}
		return up >= n
	})
	return mv
}

// carriers returns the relays the mesh view places stream on.
func carriers(mv redirector.MeshView, stream string) []string {
	for _, s := range mv.Streams {
		if s.App+"/"+s.Name == stream {
			return s.Relays
		}
	}
	return nil
}

// buildDemand keeps asking for stream from ips (as new viewers would)
// until every relay in want carries it.
func (c rdClient) buildDemand(stream string, ips []string, want ...string) redirector.MeshView {
	c.t.Helper()
	var mv redirector.MeshView
	waitFor(c.t, fmt.Sprintf("relays %v to open for %s", want, stream), 20*time.Second, func() bool {
		for _, ip := range ips {
			c.choose(stream, ip)
		}
		mv = c.mesh()
		have := carriers(mv, stream)
		for _, w := range want {
			if !slices.Contains(have, w) {
				return false
			}
		}
		return true
	})
	return mv
}

// relayViewers is how many viewers a server's /api/v1/streams reports for stream.
func relayViewers(t *testing.T, httpURL, stream string) int {
	t.Helper()
	resp, err := http.Get(httpURL + "/api/v1/streams")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Streams []hub.Info `json:"streams"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	for _, s := range out.Streams {
		if s.App+"/"+s.Name == stream {
			return s.Viewers
		}
	}
	return 0
}

// startSwarm plays n viewers of url for d in the background.
func startSwarm(ctx context.Context, rawURL string, n int, d time.Duration) <-chan *swarm.Report {
	ch := make(chan *swarm.Report, 1)
	go func() {
		rep, err := swarm.Run(ctx, swarm.Config{URL: rawURL, Viewers: n, Duration: d, Warmup: time.Second})
		if err != nil {
			rep = &swarm.Report{URL: rawURL, Errors: []string{err.Error()}}
		}
		ch <- rep
	}()
	return ch
}

// checkPlayed fails unless every viewer of rep played at least minVideo
// video frames without an error.
func checkPlayed(t *testing.T, what string, rep *swarm.Report, minVideo int64) {
	t.Helper()
	if rep.Failed > 0 || rep.Connected != rep.Viewers || len(rep.Errors) > 0 || len(rep.PerViewer) != rep.Viewers {
		t.Errorf("%s: %d/%d connected, errors %v", what, rep.Connected, rep.Viewers, rep.Errors)
		return
	}
	for _, v := range rep.PerViewer {
		if v.Error != "" || v.VideoFrames < minVideo || !v.FirstVideoOK {
			t.Errorf("%s: viewer %d: %d video frames (want ≥ %d), first ok %v, error %q",
				what, v.ID, v.VideoFrames, minVideo, v.FirstVideoOK, v.Error)
		}
	}
}

// waitLiveAt waits until a server's /api/v1/streams lists stream as live.
func waitLiveAt(t *testing.T, httpURL, stream string) {
	t.Helper()
	waitFor(t, stream+" live at "+httpURL, 15*time.Second, func() bool {
		resp, err := http.Get(httpURL + "/api/v1/streams")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var out struct {
			Streams []hub.Info `json:"streams"`
		}
		if json.NewDecoder(resp.Body).Decode(&out) != nil {
			return false
		}
		for _, s := range out.Streams {
			if s.App+"/"+s.Name == stream && s.Live {
				return true
			}
		}
		return false
	})
}

// waitSnapshot reads the "mesh" events of the dashboard's stream until
// one satisfies cond (the stream sends the current one, then every change).
func waitSnapshot(t *testing.T, ctx context.Context, web string, cond func(dashboard.Snapshot) bool) dashboard.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", web+"/api/v1/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	event := ""
	var s dashboard.Snapshot
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "event: ") {
			event = line[7:]
		}
		if event == "mesh" && strings.HasPrefix(line, "data: ") {
			s = dashboard.Snapshot{}
			if err := json.Unmarshal([]byte(line[6:]), &s); err != nil {
				t.Fatal(err)
			}
			if cond(s) {
				return s
			}
		}
	}
	t.Fatalf("no mesh event as wanted (%v); the last: %+v", sc.Err(), s)
	return s
}

// TestMeshOpensRelaysWhereDemandIs runs relaymesh dev in-process: viewers
// from Germany, the United States and Japan join one stream at the
// primary; the demand bonus opens relays in North America and Asia (not in
// Europe, where the primary is); later viewers are sent to those relays and
// really play from them. The dashboard shows the decisions.
func TestMeshOpensRelaysWhereDemandIs(t *testing.T) {
	t.Parallel()
	requireTool(t, "ffmpeg")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr, stop := startDev(t, ctx, cancel)
	defer stop()
	c := rdClient{t: t, ctx: ctx, web: "http://" + addr}
	mv := c.waitRelaysUp(4)
	const stream = "live/e2e"
	startPublisher(t, mv.Primary.RTMPURL+"/"+stream, 40*time.Second, 600)
	waitLiveAt(t, mv.Primary.HTTPURL, stream)

	// First wave: everyone plays from the primary.
	var first []<-chan *swarm.Report
	for _, ip := range []string{ipDE, ipUS, ipJP} {
		ch := c.choose(stream, ip)
		if ch.Relay != "primary" {
			t.Fatalf("first viewer at %s sent to %s (%s)", ip, ch.Relay, ch.Reason)
		}
		first = append(first, startSwarm(ctx, ch.URL, 2, 8*time.Second))
	}
	mv = c.buildDemand(stream, []string{ipDE, ipUS, ipJP}, "relay-na", "relay-as")
	if slices.Contains(carriers(mv, stream), "relay-eu") {
		t.Errorf("a relay opened at the primary's location: %v", carriers(mv, stream))
	}

	// The dashboard serves the page, the player and the decisions.
	page, err := http.Get(c.web + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != 200 || !strings.Contains(string(body), "/dashboard/hls.min.js") {
		t.Errorf("dashboard page: %s", page.Status)
	}
	opened := func(s dashboard.Snapshot, id string) bool {
		return slices.ContainsFunc(s.Decisions, func(d orchestrator.Decision) bool {
			return d.Action == "open" && d.Server == id && d.App+"/"+d.Name == stream && strings.Contains(d.Reason, "demand bonus")
		})
	}
	snap := waitSnapshot(t, ctx, c.web, func(s dashboard.Snapshot) bool {
		return s.Leader && opened(s, "relay-na") && opened(s, "relay-as") && len(carriers(s.MeshView, stream)) >= 2
	})
	t.Logf("decisions: %+v", snap.Decisions)

	// Later viewers go to the relays near them and play from them.
	relayHTTP := map[string]string{"primary": mv.Primary.HTTPURL}
	for _, r := range mv.Relays {
		relayHTTP[r.ID] = r.HTTPURL
	}
	want := map[string]string{ipUS: "relay-na", ipJP: "relay-as", ipDE: "primary"}
	reps := map[string]<-chan *swarm.Report{}
	for ip, relayID := range want {
		ch := c.choose(stream, ip)
		if ch.Relay != relayID {
			t.Fatalf("viewer at %s sent to %s (%s), want %s", ip, ch.Relay, ch.Reason, relayID)
		}
		reps[ip] = startSwarm(ctx, ch.URL, 3, 6*time.Second)
	}
	for _, id := range []string{"relay-na", "relay-as"} {
		waitFor(t, "3 viewers on "+id, 10*time.Second, func() bool { return relayViewers(t, relayHTTP[id], stream) >= 3 })
	}
	// The relays the orchestrator opened package the stream from the
	// start, not from their first HTTP request (hls.package_held): no HTTP
	// viewer has asked them, and their first one will find segments.
	for _, id := range []string{"relay-na", "relay-as"} {
		waitFor(t, id+" packaging the held stream", 10*time.Second, func() bool {
			return packagedWithoutRequests(t, relayHTTP[id])
		})
	}
	for ip, ch := range reps {
		checkPlayed(t, "viewers at "+ip+" on "+want[ip], <-ch, 50)
	}
	for i, ch := range first {
		rep := <-ch
		if rep.Connected != rep.Viewers {
			t.Errorf("first wave %d: %d/%d connected %v", i, rep.Connected, rep.Viewers, rep.Errors)
		}
	}
}

// Short intervals and TTLs for the failure tests.
var (
	testBuckets  = bus.BucketConfig{StatusTTL: 2 * time.Second, LeaseTTL: 2 * time.Second}
	testInterval = 250 * time.Millisecond
)

// testMesh is the dev mesh assembled piece by piece, so a test can stop
// NATS, an orchestrator or a relay on its own.
type testMesh struct {
	t       *testing.T
	log     *slog.Logger
	graph   *graph.Graph
	geo     *geo.DB
	nats    *bus.Embedded
	natsOff sync.Once
	primary string // RTMP address
	stops   map[string]func()
}

func (m *testMesh) connect(name string) *bus.Conn {
	m.t.Helper()
	c, err := bus.Connect(bus.Options{InProcess: m.nats.Server(), Name: name}, m.log)
	if err != nil {
		m.t.Fatal(err)
	}
	return c
}

// stopNATS shuts the bus down (once).
func (m *testMesh) stopNATS() { m.natsOff.Do(m.nats.Shutdown) }

// run starts f with its own context; stop(name) cancels it and waits.
func (m *testMesh) run(name string, f func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	var once sync.Once
	m.stops[name] = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					m.t.Errorf("%s: %v", name, err)
				}
			case <-time.After(15 * time.Second):
				m.t.Errorf("%s did not stop", name)
			}
		})
	}
}

func (m *testMesh) stop(name string) { m.stops[name]() }

func startTestMesh(t *testing.T) *testMesh {
	t.Helper()
	g, err := graph.DevWorld()
	if err != nil {
		t.Fatal(err)
	}
	return startMeshOn(t, g)
}

// startMeshOn runs a primary and every relay of graph g, each with its agent,
// on an embedded NATS server.
func startMeshOn(t *testing.T, g *graph.Graph) *testMesh {
	t.Helper()
	level := slog.LevelWarn
	if os.Getenv("RELAYMESH_TEST_LOG") == "debug" {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	db, err := geo.OpenDefault()
	if err != nil {
		t.Fatal(err)
	}
	nats, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir()}, log)
	if err != nil {
		t.Fatal(err)
	}
	m := &testMesh{t: t, log: log, graph: g, geo: db, nats: nats, stops: map[string]func(){}}
	t.Cleanup(func() {
		for _, f := range m.stops {
			f()
		}
		m.stopNATS()
	})
	ps := g.Servers()[g.Primary()]
	pn, err := devNodeFree(ps, log.With("role", "primary"))
	if err != nil {
		t.Fatal(err)
	}
	in := ingest.New(ingest.Config{Auth: ingest.Auth{Open: true}}, pn.hubs, pn.log)
	ph := serve.NewHandler(serve.Options{Hubs: pn.hubs, Publish: in.Publish, Grace: pn.cfg.RTMP.Grace, Log: pn.log})
	m.primary = pn.rtmpLn.Addr().String()
	m.startServer(ps, pn, ph, nil)
	for _, s := range g.Servers() {
		if s.Role == graph.RolePrimary {
			continue
		}
		n, err := devNodeFree(s, log.With("relay", s.ID))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		up, err := pull.New(ctx, pull.Config{URL: "rtmp://" + m.primary, RelayID: s.ID, Conn: connConfig(n.cfg.RTMP)}, n.hubs, n.log)
		if err != nil {
			t.Fatal(err)
		}
		n.src = pullingSource(n.hubs, up) // HTTP viewers pull too, as on a relay of its own
		h := serve.NewHandler(serve.Options{Hubs: n.hubs, Upstream: up, Grace: n.cfg.RTMP.Grace, Log: n.log})
		m.startServer(s, n, h, up)
	}
	return m
}

// startServer runs a node and its agent under the server's id.
func (m *testMesh) startServer(s graph.Server, n *node, h *serve.Handler, up *pull.Upstream) {
	conn := m.connect(s.ID)
	var p agent.Puller
	if up != nil {
		p = up
	}
	a, err := agent.New(agent.Config{ID: s.ID, Location: s.Location, RTMP: n.rtmpLn.Addr().String(), HTTP: n.httpLn.Addr().String(),
		CapacityViewers: s.CapacityViewers, CapacityMbps: s.CapacityMbps, Interval: testInterval, Buckets: testBuckets},
		conn, n.stats(), p, n.log)
	if err != nil {
		m.t.Fatal(err)
	}
	m.run(s.ID, func(ctx context.Context) error {
		var wg sync.WaitGroup
		var aerr error
		wg.Add(1)
		go func() { defer wg.Done(); defer conn.Close(); aerr = a.Run(ctx) }()
		err := n.run(ctx, h)
		wg.Wait()
		return errors.Join(err, aerr)
	})
}

// controlPlane is one orchestrator with its redirector.
type testControl struct {
	o   *orchestrator.Orchestrator
	web rdClient
}

// startControl runs an orchestrator and redirector named id on a free port.
func (m *testMesh) startControl(ctx context.Context, id string) *testControl {
	return m.startControlWith(ctx, id, scaling.Config{})
}

// startControlWith is startControl with the given scaling parameters.
func (m *testMesh) startControlWith(ctx context.Context, id string, sc scaling.Config) *testControl {
	m.t.Helper()
	conn := m.connect(id)
	o, err := orchestrator.New(orchestrator.Config{ID: id, Graph: m.graph, Demand: demand.Config{Threshold: 1},
		Scaling: sc, Interval: testInterval, Buckets: testBuckets}, conn, m.log)
	if err != nil {
		m.t.Fatal(err)
	}
	r, err := redirector.New(redirector.Config{ID: id, Graph: m.graph, Geo: m.geo, DevIP: true, TokenKey: []byte("test-secret"),
		DemandInterval: testInterval, StatusTTL: testBuckets.StatusTTL, Bonus: bonusAdapter(o)}, conn, m.log)
	if err != nil {
		m.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		m.t.Fatal(err)
	}
	m.run(id, func(ctx context.Context) error {
		defer conn.Close()
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i, f := range []func() error{
			func() error { return o.Run(ctx) },
			func() error { return r.Run(ctx) },
			func() error { return serveHTTP(ctx, ln, r.Handler()) },
		} {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = f() }()
		}
		wg.Wait()
		return errors.Join(errs...)
	})
	return &testControl{o: o, web: rdClient{t: m.t, ctx: ctx, web: "http://" + ln.Addr().String()}}
}

// TestMeshSurvivesFailures: with two orchestrators, relays opened by
// demand and viewers playing everywhere, a relay is killed (new viewers of
// its stream go elsewhere and really play; its registry entry expires), the
// leading orchestrator stops (the other takes over and keeps the
// placements), then NATS stops: every viewer still attached keeps playing
// to the end, and the redirector keeps answering from its last copy.
func TestMeshSurvivesFailures(t *testing.T) {
	t.Parallel()
	requireTool(t, "ffmpeg")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := startTestMesh(t)
	a := m.startControl(ctx, "orch-a")
	waitFor(t, "orch-a leads", 10*time.Second, a.o.Leader)
	b := m.startControl(ctx, "orch-b")
	c := a.web
	mv := c.waitRelaysUp(4)
	const stream = "live/fail"
	startPublisher(t, "rtmp://"+m.primary+"/"+stream, 40*time.Second, 600)
	waitLiveAt(t, mv.Primary.HTTPURL, stream)
	mv = c.buildDemand(stream, []string{ipUS, ipJP}, "relay-na", "relay-as")

	// Viewers everywhere for the rest of the test.
	const playFor = 16 * time.Second
	started := time.Now()
	reps := map[string]<-chan *swarm.Report{}
	for ip, id := range map[string]string{ipDE: "primary", ipUS: "relay-na", ipJP: "relay-as"} {
		ch := c.choose(stream, ip)
		if ch.Relay != id {
			t.Fatalf("viewer at %s sent to %s, want %s", ip, ch.Relay, id)
		}
		reps[ip] = startSwarm(ctx, ch.URL, 2, playFor)
	}
	time.Sleep(2 * time.Second)

	// A relay dies: its entry expires, viewers of its stream go elsewhere.
	m.stop("relay-as")
	probe := m.connect("probe")
	defer probe.Close()
	bk, err := probe.OpenBuckets(ctx, testBuckets)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "relay-as's status to expire", 10*time.Second, func() bool {
		_, err := bk.Relays.Get(ctx, "relay-as")
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
	var moved redirector.Choice
	waitFor(t, "viewers in Japan to be sent elsewhere", 10*time.Second, func() bool {
		moved = c.choose(stream, ipJP)
		return moved.Relay != "relay-as"
	})
	if mv := c.mesh(); slices.Contains(carriers(mv, stream), "relay-as") {
		t.Errorf("relay-as still carries %s: %v", stream, carriers(mv, stream))
	}
	checkPlayed(t, "a viewer in Japan moved to "+moved.Relay, <-startSwarm(ctx, moved.URL, 1, 2*time.Second), 20)

	// The leader stops: the other orchestrator takes over with the placements.
	m.stop("orch-a")
	waitFor(t, "orch-b to lead", 10*time.Second, b.o.Leader)
	if ch := b.web.choose(stream, ipUS); ch.Relay != "relay-na" {
		t.Errorf("after the takeover a viewer in the US is sent to %s (%s)", ch.Relay, ch.Reason)
	}

	// NATS stops: viewers keep playing, the redirector still answers.
	m.stopNATS()
	time.Sleep(time.Second)
	if ch := b.web.choose(stream, ipUS); ch.Relay != "relay-na" {
		t.Errorf("with NATS down a viewer in the US is sent to %s (%s)", ch.Relay, ch.Reason)
	}
	if time.Since(started) > playFor-3*time.Second {
		t.Logf("the failures took %v of the viewers' %v", time.Since(started), playFor)
	}
	// 25 frames/s for the whole run, less a few seconds of slack.
	minVideo := int64(25 * (playFor - 3*time.Second) / time.Second)
	checkPlayed(t, "viewers in Germany on the primary", <-reps[ipDE], minVideo)
	checkPlayed(t, "viewers in the US on relay-na", <-reps[ipUS], minVideo)
	<-reps[ipJP] // on the relay that was killed
}

// packagedWithoutRequests tells whether the server at httpURL has
// produced segments (of its one stream) while its packager has answered no
// request.
func packagedWithoutRequests(t *testing.T, httpURL string) bool {
	t.Helper()
	resp, err := http.Get(httpURL + "/metrics")
	if err != nil {
		return false
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	produced := regexp.MustCompile(`relaymesh_packager_segments_produced_total\{rendition="full"\} (\S+)`).FindSubmatch(body)
	if produced == nil || string(produced[1]) == "0" {
		return false
	}
	if regexp.MustCompile(`(?m)^relaymesh_packager_http_requests_total\{[^}]*\} [1-9]`).Match(body) {
		t.Errorf("%s: the packager answered requests: %s", httpURL, regexp.MustCompile(`(?m)^relaymesh_packager_http_requests_total.*$`).FindAll(body, -1))
	}
	return true
}
