package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/loadtest/swarm"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/orchestrator"
	"github.com/relaymesh/relaymesh/topology/redirector"
	"github.com/relaymesh/relaymesh/topology/scaling"
)

// scaleServers: the primary in Europe and two small relays in North
// America, so that a crowd there needs both.
const scaleServers = `servers:
  - {id: primary, location: eu, role: primary, rtmp: "127.0.0.1:1935", http: "127.0.0.1:8080", capacity_viewers: 200, capacity_mbps: 1000}
  - {id: relay-na1, location: na, rtmp: "127.0.0.1:1937", http: "127.0.0.1:8082", capacity_viewers: 10, capacity_mbps: 100}
  - {id: relay-na2, location: na, rtmp: "127.0.0.1:1938", http: "127.0.0.1:8083", capacity_viewers: 10, capacity_mbps: 100}
`

// scaleConfig: short holds and lifetimes, so scale-in happens in seconds.
var scaleConfig = scaling.Config{Hold: time.Second, MinLifetime: time.Second, Horizon: 2 * time.Second,
	Window: 4, DrainTimeout: 3 * time.Second}

// startScaleMesh is startTestMesh on the scaleServers graph.
func startScaleMesh(t *testing.T) *testMesh {
	t.Helper()
	f, err := graph.Parse("scale.yaml", []byte(scaleServers))
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.World(f.Servers...)
	if err != nil {
		t.Fatal(err)
	}
	return startMeshOn(t, g)
}

// startLiveScaleMesh starts the test mesh with a scaling orchestrator that
// leads and its four relays up, and publishes stream to the primary for d at
// kbps until it is live there.
func startLiveScaleMesh(ctx context.Context, t *testing.T, stream string, d time.Duration, kbps int) (*testMesh, *testControl, redirector.MeshView) {
	t.Helper()
	m := startTestMesh(t)
	ctl := m.startScaleControl(ctx, "orch")
	waitFor(t, "the orchestrator leads", 10*time.Second, ctl.o.Leader)
	mv := ctl.web.waitRelaysUp(4)
	startPublisher(t, "rtmp://"+m.primary+"/"+stream, d, kbps)
	waitLiveAt(t, mv.Primary.HTTPURL, stream)
	return m, ctl, mv
}

// relayHTTPURL is the HTTP URL of relay id in mv.
func relayHTTPURL(t *testing.T, mv redirector.MeshView, id string) string {
	t.Helper()
	for _, r := range mv.Relays {
		if r.ID == id {
			return r.HTTPURL
		}
	}
	t.Fatalf("no relay %s in the mesh view", id)
	return ""
}

// startScaleControl is startControl with scaleConfig.
func (m *testMesh) startScaleControl(ctx context.Context, id string) *testControl {
	return m.startControlWith(ctx, id, scaleConfig)
}

// hasDecision reports whether o took a decision with action on server
// (any server when empty) whose reason contains why.
func hasDecision(o *orchestrator.Orchestrator, action, server, why string) bool {
	return slices.ContainsFunc(o.Decisions(), func(d orchestrator.Decision) bool {
		return d.Action == action && (server == "" || d.Server == server) && strings.Contains(d.Reason, why)
	})
}

// swarmChosen asks the redirector n times where a viewer at ip plays
// stream and starts a swarm per answer for d; it returns the reports by
// relay.
func swarmChosen(ctx context.Context, c rdClient, stream, ip string, n int, d time.Duration) map[string][]<-chan *swarm.Report {
	out := map[string][]<-chan *swarm.Report{}
	for range n {
		ch := c.choose(stream, ip)
		out[ch.Relay] = append(out[ch.Relay], startSwarm(ctx, ch.URL, 1, d))
	}
	return out
}

// TestScaleOutAndIn: a stream opens on one of two small relays in North
// America (capacity 10); once its viewers are predicted past the high
// watermark (9.5: nine came in one burst) the orchestrator opens the
// sibling at the same location and later viewers land on it; after
// everyone leaves and the hold time passes, relays are drained and closed.
func TestScaleOutAndIn(t *testing.T) {
	t.Parallel()
	requireTool(t, "ffmpeg")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := startScaleMesh(t)
	ctl := m.startScaleControl(ctx, "orch")
	defer logDecisions(t, ctl.o)
	waitFor(t, "the orchestrator leads", 10*time.Second, ctl.o.Leader)
	c := ctl.web
	mv := c.waitRelaysUp(2)
	const stream = "live/scale"
	startPublisher(t, "rtmp://"+m.primary+"/"+stream, 40*time.Second, 400)
	waitLiveAt(t, mv.Primary.HTTPURL, stream)

	// Demand from North America opens the stream on one relay there. It
	// is asked for until the orchestrator opens it, not until the mesh
	// shows it: each answer is a viewer placed, and on a loaded machine
	// the asks while the relay started were a growth that opened the
	// sibling before the first wave (8 a second: it failed so once).
	waitFor(t, "a relay in North America to open", 20*time.Second, func() bool {
		if !hasDecision(ctl.o, "open", "", "demand bonus") {
			c.choose(stream, ipUS)
		}
		mv = c.mesh()
		return len(carriers(mv, stream)) >= 1
	})
	first := carriers(mv, stream)[0]
	relayHTTP := map[string]string{}
	for _, r := range mv.Relays {
		relayHTTP[r.ID] = r.HTTPURL
	}
	if len(carriers(mv, stream)) != 1 || !strings.HasPrefix(first, "relay-na") {
		t.Fatalf("carriers after demand: %v", carriers(mv, stream))
	}
	sibling := "relay-na1"
	if first == sibling {
		sibling = "relay-na2"
	}

	// Nine viewers come at once and play from it: a burst that the
	// predictor carries past the high watermark (9.5) within the horizon.
	wave1 := swarmChosen(ctx, c, stream, ipUS, 9, 10*time.Second)
	if len(wave1[first]) < 9 {
		t.Fatalf("first wave placed %v, want all 9 on %s", keysOf(wave1), first)
	}
	waitFor(t, "9 viewers on "+first, 10*time.Second, func() bool { return relayViewers(t, relayHTTP[first], stream) >= 9 })

	// The orchestrator opens the sibling; the redirector sends viewers there.
	waitFor(t, sibling+" to open", 15*time.Second, func() bool {
		return slices.Contains(carriers(c.mesh(), stream), sibling)
	})
	if !hasDecision(ctl.o, "open", sibling, "high watermark") {
		t.Errorf("no scaling decision opened %s: %+v", sibling, ctl.o.Decisions())
	}
	wave2 := swarmChosen(ctx, c, stream, ipUS, 4, 4*time.Second)
	if len(wave2[sibling]) == 0 {
		t.Fatalf("second wave placed %v, none on %s", keysOf(wave2), sibling)
	}
	waitFor(t, "viewers on "+sibling, 10*time.Second, func() bool { return relayViewers(t, relayHTTP[sibling], stream) >= 1 })
	for relayID, chs := range wave2 {
		for _, ch := range chs {
			checkPlayed(t, "second wave on "+relayID, <-ch, 20)
		}
	}
	for _, ch := range wave1[first] {
		checkPlayed(t, "first wave on "+first, <-ch, 100)
	}

	// Everyone has left: after the hold time relays drain and close.
	waitFor(t, "a relay to be drained and closed", 20*time.Second, func() bool {
		return hasDecision(ctl.o, "drain", "", "below the low watermark") && hasDecision(ctl.o, "close", "", "")
	})
	waitFor(t, "fewer than two carriers", 10*time.Second, func() bool { return len(carriers(c.mesh(), stream)) < 2 })
}

// logDecisions logs every decision o took, for a test that has failed (or
// runs with -v): what the orchestrator saw is then in the output.
func logDecisions(t *testing.T, o *orchestrator.Orchestrator) {
	if !t.Failed() && !testing.Verbose() {
		return
	}
	for _, d := range o.Decisions() {
		t.Logf("%s %s %s: %s", d.Action, d.Server, d.Name, d.Reason)
	}
}

func keysOf[V any](m map[string]V) map[string]int {
	out := map[string]int{}
	for k := range m {
		out[k]++
	}
	return out
}
