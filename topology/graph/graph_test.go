package graph

import (
	"strings"
	"testing"
)

const small = `
locations:
  - {id: eu, lat: 50, lon: 8, match: [{continent: EU}]}
  - {id: DE, parent: eu, match: [{country: DE}, {country: DE, subdivision: BE}, {geoname_id: 2950159}]}
  - {id: FR, parent: eu, match: [{country: FR}]}
links:
  - {from: DE, to: eu, cost: 1, symmetric: true}
  - {from: FR, to: DE, cost: 2.5}
servers:
  - {id: p, location: eu, role: primary, capacity_viewers: 100}
  - {id: r1, location: DE, capacity_viewers: 10, weight: 2}
`

func mustBuild(t *testing.T, src string) *Graph {
	t.Helper()
	f, err := Parse("small.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var b Builder
	b.AddFile(f)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestSmallGraph(t *testing.T) {
	g := mustBuild(t, small)
	if g.NumVertices() != 3 {
		t.Fatalf("vertices = %d", g.NumVertices())
	}
	de, _ := g.Vertex("DE")
	eu, _ := g.Vertex("eu")
	if g.Parent(de) != eu || g.Region(de) != eu || g.Region(eu) != eu {
		t.Fatalf("parent/region wrong")
	}
	if got := len(g.Edges()); got != 3 {
		t.Fatalf("edges = %d, want 3 (symmetric link counts twice)", got)
	}
	s := g.Servers()
	if g.Primary() != 0 || s[1].Weight != 2 || s[0].Weight != 1 || s[1].Role != RoleRelay || s[1].HardViewers != 12 || s[1].Vertex != de {
		t.Fatalf("servers = %+v", s)
	}
	if r := g.MatchRules(); len(r) != 5 || r[1].Vertex != "DE" || r[1].Country != "DE" || r[3].GeonameID != 2950159 {
		t.Fatalf("rules = %+v", r)
	}
	if g.Location(de).Line != 4 {
		t.Fatalf("line = %d", g.Location(de).Line)
	}
}

func TestValidationErrors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"unknown location", "locations: [{id: a}]\nlinks:\n  - {from: a, to: b, cost: 1}", "x.yaml:3: link: unknown location \"b\""},
		{"negative cost", "locations: [{id: a}, {id: b}]\nlinks:\n  - {from: a, to: b, cost: -1}", "x.yaml:3: link a → b: cost -1"},
		{"duplicate id", "locations:\n  - {id: a}\n  - {id: a}", "x.yaml:3: duplicate location id \"a\" (first at x.yaml line 2)"},
		{"parent cycle", "locations:\n  - {id: a, parent: b}\n  - {id: b, parent: a}", "x.yaml:2: location \"a\": parent cycle"},
		{"self parent", "locations:\n  - {id: a, parent: a}", "parent cycle"},
		{"unknown parent", "locations:\n  - {id: a, parent: z}", "x.yaml:2: location \"a\": unknown parent \"z\""},
		{"unknown field", "locations:\n  - {id: a, colour: red}", "x.yaml:2: unknown field \"colour\""},
		{"unknown match field", "locations:\n  - {id: a, match: [{planet: earth}]}", "unknown match field \"planet\""},
		{"bad rule", "locations:\n  - {id: a, match: [{country: DE, continent: EU}]}", "x.yaml:2: location \"a\": a match rule sets one of"},
		{"subdivision alone", "locations:\n  - {id: a, match: [{subdivision: CA}]}", "subdivision \"CA\" needs its country"},
		{"subdivision other country", "locations:\n  - {id: a, match: [{country: DE, subdivision: US-CA}]}", "needs its country"},
		{"duplicate rule any case", "locations:\n  - {id: a, match: {country: us, subdivision: ca}}\n  - {id: b, match: [{subdivision: US-CA}]}", "x.yaml:3: location \"b\": match rule subdivision US-CA already maps to \"a\""},
		{"duplicate rule", "locations:\n  - {id: a, match: [{country: DE}]}\n  - {id: b, match: [{country: DE}]}", "x.yaml:3: location \"b\": match rule country DE already maps to \"a\""},
		{"unknown section", "planets: []", "unknown section \"planets\""},
		{"type error", "locations:\n  - {id: a, lat: north}", "line 2"},
		{"self link", "locations: [{id: a}]\nlinks: [{from: a, to: a, cost: 1}]", "link from \"a\" to itself"},
		{"duplicate link", "locations: [{id: a}, {id: b}]\nlinks:\n  - {from: a, to: b, cost: 1, symmetric: true}\n  - {from: b, to: a, cost: 1}", "x.yaml:4: duplicate link b → a"},
		{"server unknown location", "locations: [{id: a}]\nservers:\n  - {id: s, location: z}", "x.yaml:3: server \"s\": unknown location \"z\""},
		{"two primaries", "locations: [{id: a}]\nservers:\n  - {id: s, location: a, role: primary}\n  - {id: t, location: a, role: primary}", "x.yaml:4: server \"t\": a second primary"},
		{"duplicate server", "locations: [{id: a}]\nservers:\n  - {id: s, location: a}\n  - {id: s, location: a}", "x.yaml:4: duplicate server id \"s\""},
		{"bad role", "locations: [{id: a}]\nservers:\n  - {id: s, location: a, role: boss}", "unknown role"},
		{"negative capacity", "locations: [{id: a}]\nservers:\n  - {id: s, location: a, capacity_viewers: -1}", "capacities must be ≥ 0"},
		{"hard below soft", "locations: [{id: a}]\nservers:\n  - {id: s, location: a, capacity_viewers: 10, hard_viewers: 5}", "hard_viewers 5 below"},
		{"coordinates", "locations:\n  - {id: a, lat: 91}", "coordinates"},
		{"not a list", "locations: {id: a}", "want a list"},
		{"not a mapping", "- a\n- b", "want a mapping"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse("x.yaml", []byte(c.src))
			if err == nil {
				var b Builder
				b.AddFile(f)
				_, err = b.Build()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestSingleMatchRule(t *testing.T) {
	g := mustBuild(t, "locations:\n  - {id: ca, match: {subdivision: US-CA}}\n  - {id: us, match: {country: US}}")
	if r := g.MatchRules(); len(r) != 2 || r[0].Subdivision != "US-CA" || r[1].Country != "US" {
		t.Fatalf("rules = %+v", r)
	}
}

func TestEmptyAndTooLarge(t *testing.T) {
	if f, err := Parse("e", nil); err != nil || len(f.Locations) != 0 {
		t.Fatalf("empty: %v", err)
	}
	if _, err := Parse("big", make([]byte, MaxFileSize+1)); err == nil {
		t.Fatal("oversized file accepted")
	}
}

func TestWorld(t *testing.T) {
	g, err := DevWorld()
	if err != nil {
		t.Fatal(err)
	}
	if n := g.NumVertices(); n < 200 || n > 300 {
		t.Fatalf("world has %d vertices", n)
	}
	for _, c := range []struct{ country, hub string }{{"DE", "eu"}, {"US", "na"}, {"BR", "sa"}, {"JP", "as"}, {"ZA", "af"}, {"AU", "oc"}, {"MX", "na"}, {"RU", "eu"}} {
		v, ok := g.Vertex(c.country)
		if !ok {
			t.Fatalf("no %s", c.country)
		}
		if got := g.Location(g.Region(v)).ID; got != c.hub {
			t.Errorf("region of %s = %s, want %s", c.country, got, c.hub)
		}
	}
	if p := g.Primary(); p < 0 || g.Servers()[p].ID != "primary" || len(g.Servers()) != 5 {
		t.Fatalf("dev servers: %+v", g.Servers())
	}
	// Every country has a link to its hub.
	hasHubLink := make([]bool, g.NumVertices())
	for _, e := range g.Edges() {
		if g.Parent(e.From) == e.To {
			hasHubLink[e.From] = true
		}
	}
	for v := range g.NumVertices() {
		if g.Parent(VertexID(v)) != NoVertex && !hasHubLink[v] {
			t.Errorf("%s has no link to its hub", g.Location(VertexID(v)).ID)
		}
	}
	if len(worldYAML) > 1<<20 {
		t.Errorf("world.yaml is %d bytes", len(worldYAML))
	}
}

func TestWithServers(t *testing.T) {
	g := mustBuild(t, small)
	g2, err := g.WithServers(Server{ID: "r2", Location: "FR", CapacityViewers: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(g2.Servers()) != 3 || len(g2.Edges()) != 3 {
		t.Fatalf("servers %d edges %d", len(g2.Servers()), len(g2.Edges()))
	}
	if _, err := g.WithServers(Server{ID: "r1", Location: "FR"}); err == nil {
		t.Fatal("duplicate server accepted")
	}
}
