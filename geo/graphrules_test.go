package geo

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const sampleGraph = `# a graph file as the topology package writes it
locations:
  - {id: eu, name: "Europe", lat: 50.11, lon: 8.68, match: [{continent: EU}]}
  - {id: na, match: {continent: NA}}
  - id: GB
    parent: eu
    match:
      - {country: GB}
  - id: london
    parent: GB
    match: [{geoname_id: 2643743}]
  - id: us-west
    parent: na
    match:
      - {country: US, subdivision: CA}
      - {country: US, subdivision: WA}
  - {id: hub-without-rules, parent: eu}
links:
  - {from: eu, to: na, cost: 7, symmetric: true}
servers:
  - {id: r1, location: eu, rtmp: "127.0.0.1:1935"}
`

func TestParseGraphRules(t *testing.T) {
	rules, err := ParseGraphRules([]byte(sampleGraph))
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{Vertex: "eu", Continent: "EU"},
		{Vertex: "na", Continent: "NA"},
		{Vertex: "GB", Country: "GB"},
		{Vertex: "london", GeonameID: 2643743},
		{Vertex: "us-west", Country: "US", Subdivision: "CA"},
		{Vertex: "us-west", Country: "US", Subdivision: "WA"},
	}
	if !reflect.DeepEqual(rules, want) {
		t.Fatalf("got  %+v\nwant %+v", rules, want)
	}
	m, err := NewMatcher(rules, "eu")
	if err != nil {
		t.Fatal(err)
	}
	if v, l := m.Match(Location{Country: "US", Subdivision: "WA", Continent: "NA"}); v != "us-west" || l != LevelSubdivision {
		t.Errorf("Match = %q, %q", v, l)
	}
}

func TestParseGraphRulesErrors(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"links: []\n", "no locations list"},
		{"locations: {id: x}\n", "line 1: locations must be a list"},
		{"locations:\n  - just-a-string\n", "line 2: a location must be a mapping"},
		{"locations:\n  - {name: x}\n", "line 2: location without id"},
		{"locations:\n  - {id: a}\n  - {id: a}\n", `line 3: location "a" already defined at line 2`},
		{"locations:\n  - {id: a, match: DE}\n", "line 2: match of \"a\" must be"},
		{"locations:\n  - id: a\n    match: [DE]\n", "line 3: a match rule of \"a\" must be a mapping"},
		{"locations:\n  - id: a\n    match: [{geoname_id: london}]\n", "line 3"},
		{"locations: [\n", "graph file"},
		{strings.Repeat(" ", MaxGraphFileSize+1), "too large"},
	}
	for _, c := range cases {
		_, err := ParseGraphRules([]byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			name := c.yaml
			if len(name) > 40 {
				name = name[:40]
			}
			t.Errorf("%q: err = %v, want it to mention %q", name, err, c.want)
		}
	}
}

func TestLoadGraphRules(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "graph.yaml")
	if err := os.WriteFile(path, []byte(sampleGraph), 0o644); err != nil {
		t.Fatal(err)
	}
	rules, err := LoadGraphRules(path)
	if err != nil || len(rules) != 6 {
		t.Fatalf("LoadGraphRules: %d rules, %v", len(rules), err)
	}
	if _, err := LoadGraphRules(filepath.Join(dir, "missing.yaml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("locations:\n  - {name: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadGraphRules(bad); err == nil || !strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad file: %v", err)
	}
}

func FuzzParseGraphRules(f *testing.F) {
	f.Add([]byte(sampleGraph))
	f.Add([]byte("locations:\n  - {id: a, match: [{country: DE}, {continent: EU}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, err := ParseGraphRules(data)
		if err != nil {
			return
		}
		for _, r := range rules {
			if r.Vertex == "" {
				t.Fatalf("rule without vertex: %+v", r)
			}
		}
		// Whatever parses must either build a matcher or fail cleanly.
		if m, err := NewMatcher(rules, "default"); err == nil {
			m.Match(Location{Country: "DE", Continent: "EU", GeonameID: 1, Subdivision: "BE"})
		}
	})
}
