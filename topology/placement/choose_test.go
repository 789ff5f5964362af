package placement

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/topology/graph"
)

// line graph: V —1— A —1— B —1— C, D isolated; primary at C.
func lineMesh(t testing.TB, servers ...graph.Server) (*Mesh, func(string) graph.VertexID, func(string) ServerID) {
	t.Helper()
	var b graph.Builder
	for _, id := range []string{"V", "A", "B", "C", "D"} {
		b.AddLocation(graph.Location{ID: id})
	}
	b.AddLink(graph.Link{From: "V", To: "A", Cost: 1, Symmetric: true})
	b.AddLink(graph.Link{From: "A", To: "B", Cost: 1, Symmetric: true})
	b.AddLink(graph.Link{From: "B", To: "C", Cost: 1, Symmetric: true})
	b.AddServer(graph.Server{ID: "p", Location: "C", Role: graph.RolePrimary, CapacityViewers: 1000})
	for _, s := range servers {
		b.AddServer(s)
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	m := New(g, Config{})
	return m, func(id string) graph.VertexID { v, _ := g.Vertex(id); return v },
		func(id string) ServerID { s, _ := m.ServerByID(id); return s }
}

func TestChooseByHand(t *testing.T) {
	m, vx, sv := lineMesh(t,
		graph.Server{ID: "a", Location: "A", CapacityViewers: 2},
		graph.Server{ID: "b", Location: "B", CapacityViewers: 10},
		graph.Server{ID: "r", Location: "A", Role: graph.RoleReserve, CapacityViewers: 10},
		graph.Server{ID: "d", Location: "D", CapacityViewers: 10},
	)
	s, _ := m.AddStream("live", 0)
	r := rand.New(rand.NewPCG(1, 1))
	check := func(name string, got Result, server string, dist float32, reason Reason) {
		t.Helper()
		want := NoServer
		if server != "" {
			want = sv(server)
		}
		if got.Server != want || (server != "" && got.Dist != dist) || got.Reason != reason {
			t.Errorf("%s: got %+v (%v), want server %q dist %v reason %v", name, got, got.Reason, server, dist, reason)
		}
	}
	check("only the primary", m.Choose(vx("V"), s, r), "p", 3, ReasonNearest)
	m.Open(sv("b"), s)
	check("b at 2", m.Choose(vx("V"), s, r), "b", 2, ReasonNearest)
	m.Open(sv("a"), s)
	m.Open(sv("r"), s)
	check("a at 1", m.Choose(vx("V"), s, r), "a", 1, ReasonNearest)
	m.AddViewers(sv("a"), s, 2)
	check("a full: b", m.Choose(vx("V"), s, r), "b", 2, ReasonNearest)
	m.SetLoad(sv("a"), 0, 0)
	m.SetPredicted(sv("a"), 2)
	check("a predicted full: b", m.Choose(vx("V"), s, r), "b", 2, ReasonNearest)
	m.SetPredicted(sv("a"), 0)
	m.SetDraining(sv("a"), true)
	check("a draining: b", m.Choose(vx("V"), s, r), "b", 2, ReasonNearest)
	m.SetDraining(sv("a"), false)
	m.SetUp(sv("b"), false)
	m.SetLoad(sv("a"), 2, 0)
	// b (distance 2) is down, so the viewer is displaced: the reserve
	// carrier r (distance 1) is nearer than the regular choice, the primary.
	check("a full, b down: the reserve, displaced", m.Choose(vx("V"), s, r), "r", 1, ReasonDisplaced)
	m.SetUp(sv("b"), true)
	m.Close(sv("b"), s)
	check("a full, b not carrying: primary", m.Choose(vx("V"), s, r), "p", 3, ReasonNearest)
	m.Open(sv("b"), s)
	m.SetUp(sv("b"), false)
	m.SetLoad(sv("p"), 1000, 0)
	check("all regular full: reserve", m.Choose(vx("V"), s, r), "r", 1, ReasonReserve)
	m.SetLoad(sv("r"), 10, 0)
	check("everything full", m.Choose(vx("V"), s, r), "", 0, ReasonFull)
	m.SetLoad(sv("p"), 0, 0)
	m.Open(sv("d"), s)
	check("from D only d is reachable", m.Choose(vx("D"), s, r), "d", 0, ReasonNearest)
	m.Close(sv("d"), s)
	check("from D nothing reachable: primary", m.Choose(vx("D"), s, r), "p", float32(math.Inf(1)), ReasonUnreachable)
	check("unknown stream: primary", m.Choose(vx("V"), 42, r), "p", float32(math.Inf(1)), ReasonUnknown)
	check("unknown vertex: primary", m.Choose(-5, s, r), "p", float32(math.Inf(1)), ReasonUnknown)
	if m.Carries(sv("d"), s) || !m.Carries(sv("p"), s) || !m.Carries(sv("a"), s) {
		t.Error("Carries")
	}
}

func TestBandwidthCapacity(t *testing.T) {
	m, vx, sv := lineMesh(t, graph.Server{ID: "a", Location: "A", CapacityMbps: 10})
	s, _ := m.AddStream("hd", 4)
	m.Open(sv("a"), s)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range 2 {
		if got := m.Choose(vx("V"), s, r); got.Server != sv("a") {
			t.Fatalf("viewer %d: %+v", i, got)
		}
		m.AddViewers(sv("a"), s, 1)
	}
	if _, mbps := m.Load(sv("a")); mbps != 8 {
		t.Fatalf("mbps = %v", mbps)
	}
	if got := m.Choose(vx("V"), s, r); got.Server != sv("p") { // 8 + 4 > 10
		t.Fatalf("third viewer: %+v", got)
	}
}

// Weighted ties: three servers at A with weights 1, 3 and 2, the last one
// half full. Expected shares: 1 : 3 : 2×0.5 = 0.2, 0.6, 0.2.
func TestWeightedTieBreaking(t *testing.T) {
	m, vx, sv := lineMesh(t,
		graph.Server{ID: "w1", Location: "A", CapacityViewers: 1000, Weight: 1},
		graph.Server{ID: "w3", Location: "A", CapacityViewers: 1000, Weight: 3},
		graph.Server{ID: "h2", Location: "A", CapacityViewers: 1000, Weight: 2},
	)
	s, _ := m.AddStream("live", 0)
	for _, id := range []string{"w1", "w3", "h2"} {
		m.Open(sv(id), s)
	}
	m.SetLoad(sv("h2"), 500, 0)
	r := rand.New(rand.NewPCG(7, 7))
	const n = 100_000
	counts := map[ServerID]int{}
	for range n {
		res := m.Choose(vx("V"), s, r)
		if res.Reason != ReasonTie || res.Ties != 3 {
			t.Fatalf("%+v", res)
		}
		counts[res.Server]++
	}
	for id, want := range map[string]float64{"w1": 0.2, "w3": 0.6, "h2": 0.2} {
		got := float64(counts[sv(id)]) / n
		if math.Abs(got-want) > 0.01 {
			t.Errorf("%s share = %.4f, want %.2f ± 0.01", id, got, want)
		}
	}
}

// Property: for random loads and carrier sets, a chosen server always has
// headroom, the choice is at the minimal distance among servers with
// headroom, and NoServer comes only when no server carrying the stream has
// headroom.
func TestPropertyNeverOverCapacity(t *testing.T) {
	g, err := graph.World()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 12))
	var servers []graph.Server
	for i := range 60 {
		loc := g.Location(graph.VertexID(r.IntN(g.NumVertices()))).ID
		role := graph.RoleRelay
		if i == 0 {
			role = graph.RolePrimary
		} else if i%10 == 0 {
			role = graph.RoleReserve
		}
		servers = append(servers, graph.Server{ID: fmt.Sprint("s", i), Location: loc, Role: role, CapacityViewers: 1 + r.IntN(20)})
	}
	g, err = g.WithServers(servers...)
	if err != nil {
		t.Fatal(err)
	}
	m := New(g, Config{})
	s, _ := m.AddStream("x", 0)
	for iter := range 300 {
		for i := range m.NumServers() {
			id := ServerID(i)
			if id != m.Primary() && r.IntN(2) == 0 {
				m.Open(id, s)
			} else {
				m.Close(id, s)
			}
			c := int64(m.Server(id).CapacityViewers)
			m.SetLoad(id, r.Int64N(c+2), 0)
			m.SetPredicted(id, 0)
		}
		v := graph.VertexID(r.IntN(g.NumVertices()))
		res := m.Choose(v, s, r)
		headroom := func(id ServerID) bool {
			n, _ := m.Load(id)
			return n < int64(m.Server(id).CapacityViewers)
		}
		anyFree := headroom(m.Primary())
		for _, c := range m.Carriers(s) {
			anyFree = anyFree || headroom(c)
		}
		if res.Server == NoServer {
			if anyFree {
				t.Fatalf("iter %d: NoServer while a carrier has headroom", iter)
			}
			continue
		}
		if !headroom(res.Server) {
			t.Fatalf("iter %d: sent to %s over capacity", iter, m.Server(res.Server).ID)
		}
		if res.Reason == ReasonReserve {
			continue
		}
		row := m.Table().Row(v)
		for _, c := range append([]ServerID{m.Primary()}, m.Carriers(s)...) {
			if m.Server(c).Role != graph.RoleReserve && headroom(c) && row[m.Table().DestIndex(m.Server(c).Vertex)] < res.Dist*(1-1e-6) {
				t.Fatalf("iter %d: %s is nearer than the chosen %s", iter, m.Server(c).ID, m.Server(res.Server).ID)
			}
		}
	}
}

func TestStickyChoice(t *testing.T) {
	m, vx, sv := lineMesh(t,
		graph.Server{ID: "a", Location: "A", CapacityViewers: 10, HardViewers: 12},
		graph.Server{ID: "b", Location: "B", CapacityViewers: 10},
	)
	s, _ := m.AddStream("live", 0)
	m.Open(sv("a"), s)
	m.Open(sv("b"), s)
	r := rand.New(rand.NewPCG(1, 1))
	key := []byte("secret")
	now := time.Unix(1_700_000_000, 0)
	tok, err := Sign(key, Claims{Server: "b", Stream: "live", Expires: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Verify(key, tok, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.ChooseSticky(vx("V"), s, c, r); got.Server != sv("b") || got.Reason != ReasonSticky || got.Dist != 2 {
		t.Fatalf("sticky: %+v", got)
	}
	m.SetLoad(sv("b"), 11, 0) // over soft capacity, below hard (12 = default 1.25×10)
	if got := m.ChooseSticky(vx("V"), s, c, r); got.Server != sv("b") {
		t.Fatalf("between soft and hard: %+v", got)
	}
	m.SetLoad(sv("b"), 12, 0)
	if got := m.ChooseSticky(vx("V"), s, c, r); got.Server != sv("a") || got.Reason != ReasonNearest {
		t.Fatalf("over hard limit: %+v", got)
	}
	m.SetLoad(sv("b"), 0, 0)
	m.SetDraining(sv("b"), true)
	if got := m.ChooseSticky(vx("V"), s, c, r); got.Server != sv("a") {
		t.Fatalf("draining: %+v", got)
	}
	m.SetDraining(sv("b"), false)
	m.Close(sv("b"), s)
	if got := m.ChooseSticky(vx("V"), s, c, r); got.Server != sv("a") {
		t.Fatalf("closed: %+v", got)
	}
	other, _ := m.AddStream("other", 0)
	if got := m.ChooseSticky(vx("V"), other, c, r); got.Reason == ReasonSticky {
		t.Fatalf("token for another stream kept: %+v", got)
	}
}

func TestSetGraphKeepsState(t *testing.T) {
	m, _, sv := lineMesh(t, graph.Server{ID: "a", Location: "A", CapacityViewers: 10})
	s, _ := m.AddStream("live", 1)
	m.Open(sv("a"), s)
	m.AddViewers(sv("a"), s, 3)
	g2, err := m.Graph().WithServers(graph.Server{ID: "z", Location: "B"})
	if err != nil {
		t.Fatal(err)
	}
	m.SetGraph(g2)
	if n, mbps := m.Load(sv("a")); n != 3 || mbps != 3 || !m.Carries(sv("a"), s) || m.NumServers() != 3 {
		t.Fatalf("state lost: %d %v", n, mbps)
	}
}

func TestConcurrentUse(t *testing.T) {
	g, err := graph.DevWorld()
	if err != nil {
		t.Fatal(err)
	}
	m := New(g, Config{})
	s, _ := m.AddStream("live", 2)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range 20_000 {
				res := m.Choose(graph.VertexID(i%g.NumVertices()), s, r)
				if res.Server != NoServer {
					m.AddViewers(res.Server, s, 1)
					m.AddViewers(res.Server, s, -1)
				}
			}
		}()
	}
	for i := range 2000 {
		id := ServerID(1 + i%4)
		m.Open(id, s)
		m.SetLoad(id, int64(i%100), 0)
		m.Close(id, s)
	}
	wg.Wait()
}

func TestTokens(t *testing.T) {
	key := []byte("k")
	now := time.Unix(1_700_000_000, 0)
	tok, _ := Sign(key, Claims{Server: "relay-eu", Stream: "s", Expires: now.Add(time.Second)})
	if _, err := Verify(key, tok, now.Add(time.Second)); err != ErrTokenExpired {
		t.Errorf("expired: %v", err)
	}
	if _, err := Verify([]byte("other"), tok, now); err != ErrTokenSignature {
		t.Errorf("wrong key: %v", err)
	}
	b := []byte(tok)
	b[5] ^= 1
	if _, err := Verify(key, string(b), now); err == nil {
		t.Error("tampered token accepted")
	}
	if _, err := Verify(key, "!!!", now); err != ErrTokenMalformed {
		t.Errorf("garbage: %v", err)
	}
	long := make([]byte, 300)
	if _, err := Sign(key, Claims{Server: string(long)}); err == nil {
		t.Error("long server accepted")
	}
}

func BenchmarkChoose(b *testing.B) {
	g, err := graph.World()
	if err != nil {
		b.Fatal(err)
	}
	var servers []graph.Server
	servers = append(servers, graph.Server{ID: "p", Location: "eu", Role: graph.RolePrimary, CapacityViewers: 1 << 30})
	for i := range 50 { // 50 relays carrying the stream in 25 countries
		loc := g.Location(graph.VertexID(6 + (i*7)%(g.NumVertices()-6))).ID
		servers = append(servers, graph.Server{ID: fmt.Sprint("r", i), Location: loc, CapacityViewers: 1 << 30})
	}
	g, _ = g.WithServers(servers...)
	m := New(g, Config{})
	s, _ := m.AddStream("live", 2.5)
	for i := 1; i <= 50; i++ {
		m.Open(ServerID(i), s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	n := graph.VertexID(g.NumVertices())
	b.ReportAllocs()
	i := graph.VertexID(0)
	for b.Loop() {
		res := m.Choose(i%n, s, r)
		m.AddViewers(res.Server, s, 1)
		i++
	}
}

func BenchmarkVerify(b *testing.B) {
	key := []byte("secret")
	now := time.Unix(1_700_000_000, 0)
	tok, _ := Sign(key, Claims{Server: "relay-eu-17", Stream: "match-of-the-day", Expires: now.Add(time.Hour)})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Verify(key, tok, now); err != nil {
			b.Fatal(err)
		}
	}
}

// With 3 peers, a Mesh counts each of its own assignments three times
// until the next sample.
func TestPeers(t *testing.T) {
	var b graph.Builder
	b.AddLocation(graph.Location{ID: "A"})
	b.AddServer(graph.Server{ID: "p", Location: "A", Role: graph.RolePrimary, CapacityViewers: 10})
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	m := New(g, Config{Peers: 3})
	s, _ := m.AddStream("live", 0)
	r := rand.New(rand.NewPCG(1, 1))
	m.SetLoad(0, 4, 0)
	taken := 0
	for m.Choose(0, s, r).Server == 0 {
		m.AddViewers(0, s, 1)
		taken++
	}
	if taken != 2 { // 4 + 3×2 = 10
		t.Fatalf("took %d viewers before the sample, want 2", taken)
	}
	m.SetLoad(0, 6, 0) // the sample shows the peers took none
	if m.Choose(0, s, r).Server != 0 {
		t.Fatal("full after the sample")
	}
}

// BenchmarkChoose2000Carriers: one stream carried by 2,000 relays (100 in
// each of 20 locations), viewers from every vertex of the world graph:
// the decision rate the issue asks of one core (≥ 100,000/s, i.e. ≤ 10 µs).
func BenchmarkChoose2000Carriers(b *testing.B) {
	g, err := graph.World()
	if err != nil {
		b.Fatal(err)
	}
	locs := []string{"eu", "na", "sa", "as", "af", "oc", "DE", "GB", "FR", "US", "BR", "JP", "IN", "RU", "ES", "MX", "CN", "AU", "ZA", "CA"}
	servers := []graph.Server{{ID: "p", Location: "eu", Role: graph.RolePrimary, CapacityViewers: 1 << 30}}
	for i := range 2000 {
		servers = append(servers, graph.Server{ID: fmt.Sprint("r", i), Location: locs[i%len(locs)], CapacityViewers: 1 << 30})
	}
	g, _ = g.WithServers(servers...)
	m := New(g, Config{})
	s, _ := m.AddStream("live", 2.5)
	for i := 1; i <= 2000; i++ {
		m.Open(ServerID(i), s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	n := graph.VertexID(g.NumVertices())
	b.ReportAllocs()
	i := graph.VertexID(0)
	for b.Loop() {
		res := m.Choose(i%n, s, r)
		m.AddViewers(res.Server, s, 1)
		i++
	}
}

// The grouped choice (many carriers per location) answers the same
// distance, tie count and reason as the single pass over every carrier,
// with some servers full, down or reserve.
func TestGroupedChoiceMatchesLinear(t *testing.T) {
	g, err := graph.World()
	if err != nil {
		t.Fatal(err)
	}
	locs := []string{"eu", "na", "DE", "JP", "US"}
	servers := []graph.Server{{ID: "p", Location: "eu", Role: graph.RolePrimary, CapacityViewers: 10}}
	for i := range 100 {
		role := graph.RoleRelay
		if i%10 == 9 {
			role = graph.RoleReserve
		}
		servers = append(servers, graph.Server{ID: fmt.Sprint("r", i), Location: locs[i%len(locs)], Role: role, CapacityViewers: 10})
	}
	g, _ = g.WithServers(servers...)
	m := New(g, Config{})
	s, _ := m.AddStream("live", 1)
	for i := 1; i <= 100; i++ {
		m.Open(ServerID(i), s)
		switch {
		case i%5 == 2: // every DE relay (and some others) full
			m.SetLoad(ServerID(i), 10, 0)
		case i%7 == 0:
			m.SetUp(ServerID(i), false)
		}
	}
	w := m.view.Load()
	if len(w.groups[s]) != 5 {
		t.Fatalf("%d groups", len(w.groups[s]))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for v := range graph.VertexID(g.NumVertices()) {
		row := w.table.Row(v)
		for _, reserve := range []bool{false, true} {
			lin, ok1 := w.pick(row, w.carriers[s], w.kbps[s], reserve, r, 1e-6)
			grp, ok2 := w.pickGrouped(row, w.groups[s], w.kbps[s], reserve, r, 1e-6)
			if ok1 != ok2 || lin.Dist != grp.Dist || lin.Ties != grp.Ties || lin.Reason != grp.Reason {
				t.Fatalf("vertex %s reserve %v: linear %+v %v, grouped %+v %v", g.Location(v).ID, reserve, lin, ok1, grp, ok2)
			}
			if ok2 {
				if _, ok := w.eligible(grp.Server, w.kbps[s]); !ok {
					t.Fatalf("vertex %s: grouped chose ineligible %d", g.Location(v).ID, grp.Server)
				}
			}
		}
	}
}

// A provisional token keeps its viewer only until a nearer carrier can
// take it; it survives signing and verifying; version-1 tokens still verify.
func TestProvisionalToken(t *testing.T) {
	key := []byte("k")
	now := time.Unix(1_700_000_000, 0)
	for _, prov := range []bool{false, true} {
		tok, err := Sign(key, Claims{Server: "relay-eu", Stream: "live/a", Expires: now.Add(time.Minute), Provisional: prov})
		if err != nil {
			t.Fatal(err)
		}
		c, err := Verify(key, tok, now)
		if err != nil || c.Provisional != prov || c.Server != "relay-eu" || c.Stream != "live/a" {
			t.Fatalf("provisional %v: %+v %v", prov, c, err)
		}
	}
	g, err := graph.World(
		graph.Server{ID: "p", Location: "eu", Role: graph.RolePrimary, CapacityViewers: 1},
		graph.Server{ID: "relay-na", Location: "na", CapacityViewers: 100},
		graph.Server{ID: "relay-jp", Location: "JP", CapacityViewers: 100})
	if err != nil {
		t.Fatal(err)
	}
	m := New(g, Config{})
	s, _ := m.AddStream("live/a", 1)
	na, _ := m.ServerByID("relay-na")
	jp, _ := m.ServerByID("relay-jp")
	m.Open(na, s)
	m.SetLoad(m.Primary(), 1, 0) // the primary is full
	vjp, _ := g.Vertex("JP")
	r := rand.New(rand.NewPCG(1, 2))
	claims := Claims{Server: "relay-na", Stream: "live/a", Provisional: true}
	if res := m.ChooseSticky(vjp, s, claims, r); res.Server != na || res.Reason != ReasonSticky {
		t.Fatalf("before the nearer relay serves: %+v", res)
	}
	m.Open(jp, s)
	if res := m.ChooseSticky(vjp, s, claims, r); res.Server != jp {
		t.Fatalf("provisional token once relay-jp serves: %+v", res)
	}
	claims.Provisional = false
	if res := m.ChooseSticky(vjp, s, claims, r); res.Server != na {
		t.Fatalf("ordinary token: %+v", res)
	}
}

func TestDownNearer(t *testing.T) {
	m, vx, sv := lineMesh(t,
		graph.Server{ID: "a", Location: "A", CapacityViewers: 10},
		graph.Server{ID: "a2", Location: "A", CapacityViewers: 10},
		graph.Server{ID: "b", Location: "B", CapacityViewers: 10},
	)
	s, _ := m.AddStream("live", 0)
	v := vx("V")
	m.SetUnknown(sv("a2"))
	if m.DownNearer(v, 3) {
		t.Fatal("nothing is down (a2 has not reported yet)")
	}
	m.SetUp(sv("a"), false)
	m.SetUp(sv("a"), false) // twice: counted once
	m.Open(sv("b"), s)      // a new view shares the counts
	if !m.DownNearer(v, 2) {
		t.Error("a (distance 1) is down: a viewer given b (distance 2) is displaced")
	}
	if m.DownNearer(v, 1) {
		t.Error("nothing nearer than distance 1 is down")
	}
	m.SetDraining(sv("a"), false) // back up (draining false = up)
	if m.DownNearer(v, 3) {
		t.Error("a is back: nothing is down")
	}
	m.SetUp(sv("b"), false)
	m.SetUp(sv("a2"), false)
	m.SetUp(sv("a2"), true)
	if !m.DownNearer(v, 3) || m.DownNearer(v, 2) {
		t.Error("only b (distance 2) is down")
	}
	m.SetUp(m.Primary(), false) // the primary does not count
	m.SetUp(sv("b"), true)
	if m.DownNearer(v, 10) {
		t.Error("the primary counted as a displacing server")
	}
	if m.DownNearer(graph.NoVertex, 10) {
		t.Error("unknown vertex")
	}
}
