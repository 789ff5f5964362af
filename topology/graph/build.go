package graph

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Limits on a graph, so that a hostile file cannot exhaust memory later
// (distance tables are vertices × server locations).
const (
	MaxVertices = 1 << 22
	MaxLinks    = 1 << 24
	MaxServers  = 1 << 20
	MaxIDLen    = 128
	maxErrors   = 20
)

// Builder collects locations, links and servers from files or code and
// checks them together. The zero Builder is ready to use.
type Builder struct {
	locs    []Location
	links   []Link
	servers []Server
}

// AddFile adds everything in f.
func (b *Builder) AddFile(f *File) {
	b.locs = append(b.locs, f.Locations...)
	b.links = append(b.links, f.Links...)
	b.servers = append(b.servers, f.Servers...)
}

// AddLocation adds one location.
func (b *Builder) AddLocation(l Location) { b.locs = append(b.locs, l) }

// AddLink adds one link.
func (b *Builder) AddLink(l Link) { b.links = append(b.links, l) }

// AddServer adds one server.
func (b *Builder) AddServer(s Server) { b.servers = append(b.servers, s) }

// Graph is a checked, immutable location graph.
type Graph struct {
	locs    []Location
	byID    map[string]VertexID
	parent  []VertexID
	region  []VertexID
	edges   []Edge
	servers []Server
	primary int // index in servers, -1 if none
}

// where formats the source position of an item for error messages.
func where(file string, line int) string {
	switch {
	case file != "" && line > 0:
		return fmt.Sprintf("%s:%d: ", file, line)
	case line > 0:
		return fmt.Sprintf("line %d: ", line)
	case file != "":
		return file + ": "
	}
	return ""
}

type errList struct{ errs []error }

func (e *errList) add(file string, line int, format string, args ...any) {
	if len(e.errs) < maxErrors {
		e.errs = append(e.errs, errors.New(where(file, line)+fmt.Sprintf(format, args...)))
	}
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// Build checks everything added so far and returns the graph. The error
// lists up to 20 problems, each naming its file and line.
func (b *Builder) Build() (*Graph, error) {
	var el errList
	if len(b.locs) > MaxVertices || len(b.links) > MaxLinks || len(b.servers) > MaxServers {
		return nil, fmt.Errorf("graph too large: %d locations, %d links, %d servers (limits %d, %d, %d)",
			len(b.locs), len(b.links), len(b.servers), MaxVertices, MaxLinks, MaxServers)
	}
	g := &Graph{
		locs:    make([]Location, len(b.locs)),
		byID:    make(map[string]VertexID, len(b.locs)),
		parent:  make([]VertexID, len(b.locs)),
		region:  make([]VertexID, len(b.locs)),
		primary: -1,
	}
	copy(g.locs, b.locs)
	type ruleKey struct {
		kind string
		a    string
		n    uint
	}
	rules := make(map[ruleKey]string)
	for i := range g.locs {
		l := &g.locs[i]
		switch {
		case l.ID == "":
			el.add(l.File, l.Line, "location without id")
		case len(l.ID) > MaxIDLen:
			el.add(l.File, l.Line, "location id longer than %d bytes", MaxIDLen)
		default:
			if prev, dup := g.byID[l.ID]; dup {
				p := g.locs[prev]
				el.add(l.File, l.Line, "duplicate location id %q (first at %sline %d)", l.ID, fileOf(p.File), p.Line)
			} else {
				g.byID[l.ID] = VertexID(i)
			}
		}
		if !finite(l.Lat) || !finite(l.Lon) || l.Lat < -90 || l.Lat > 90 || l.Lon < -180 || l.Lon > 180 {
			el.add(l.File, l.Line, "location %q: coordinates %v,%v out of range", l.ID, l.Lat, l.Lon)
		}
		for _, r := range l.Match {
			var k ruleKey
			switch {
			case r.GeonameID != 0 && r.Country == "" && r.Subdivision == "" && r.Continent == "":
				k = ruleKey{kind: "geoname_id", n: r.GeonameID}
			case r.Subdivision != "" && r.Continent == "" && r.GeonameID == 0:
				code, ok := subdivisionCode(r.Country, r.Subdivision)
				if !ok {
					el.add(l.File, l.Line, "location %q: subdivision %q needs its country (country: XX, or a full code like US-CA)", l.ID, r.Subdivision)
					continue
				}
				k = ruleKey{kind: "subdivision", a: code}
			case r.Country != "" && r.Subdivision == "" && r.Continent == "" && r.GeonameID == 0:
				k = ruleKey{kind: "country", a: strings.ToUpper(r.Country)}
			case r.Continent != "" && r.Country == "" && r.Subdivision == "" && r.GeonameID == 0:
				k = ruleKey{kind: "continent", a: strings.ToUpper(r.Continent)}
			default:
				el.add(l.File, l.Line, "location %q: a match rule sets one of country, country+subdivision, geoname_id or continent", l.ID)
				continue
			}
			if other, dup := rules[k]; dup && other != l.ID {
				el.add(l.File, l.Line, "location %q: match rule %s %v%s already maps to %q", l.ID, k.kind, k.a, numStr(k.n), other)
			}
			rules[k] = l.ID
		}
	}
	for i := range g.locs {
		l := &g.locs[i]
		g.parent[i] = NoVertex
		if l.Parent == "" {
			continue
		}
		p, ok := g.byID[l.Parent]
		if !ok {
			el.add(l.File, l.Line, "location %q: unknown parent %q", l.ID, l.Parent)
			continue
		}
		g.parent[i] = p
	}
	// Regions: the root ancestor; a walk longer than the vertex count is a cycle.
	for i := range g.locs {
		v, steps := VertexID(i), 0
		for g.parent[v] != NoVertex && steps <= len(g.locs) {
			v = g.parent[v]
			steps++
		}
		if steps > len(g.locs) {
			l := g.locs[i]
			el.add(l.File, l.Line, "location %q: parent cycle", l.ID)
			g.region[i] = VertexID(i)
			continue
		}
		g.region[i] = v
	}
	seen := make(map[[2]VertexID]int, len(b.links))
	addEdge := func(l *Link, from, to VertexID) {
		if prev, dup := seen[[2]VertexID{from, to}]; dup {
			el.add(l.File, l.Line, "duplicate link %s → %s (first at line %d)", g.locs[from].ID, g.locs[to].ID, prev)
			return
		}
		seen[[2]VertexID{from, to}] = l.Line
		g.edges = append(g.edges, Edge{From: from, To: to, Cost: l.Cost})
	}
	for i := range b.links {
		l := &b.links[i]
		from, okf := g.byID[l.From]
		to, okt := g.byID[l.To]
		switch {
		case !okf:
			el.add(l.File, l.Line, "link: unknown location %q", l.From)
		case !okt:
			el.add(l.File, l.Line, "link: unknown location %q", l.To)
		case from == to:
			el.add(l.File, l.Line, "link from %q to itself", l.From)
		case !finite(l.Cost) || l.Cost < 0:
			el.add(l.File, l.Line, "link %s → %s: cost %v must be finite and ≥ 0", l.From, l.To, l.Cost)
		default:
			addEdge(l, from, to)
			if l.Symmetric {
				addEdge(l, to, from)
			}
		}
	}
	g.servers = make([]Server, len(b.servers))
	copy(g.servers, b.servers)
	sids := make(map[string]int, len(g.servers))
	for i := range g.servers {
		s := &g.servers[i]
		if s.ID == "" || len(s.ID) > MaxIDLen {
			el.add(s.File, s.Line, "server id must be 1 to %d bytes", MaxIDLen)
		} else if prev, dup := sids[s.ID]; dup {
			el.add(s.File, s.Line, "duplicate server id %q (first at line %d)", s.ID, g.servers[prev].Line)
		} else {
			sids[s.ID] = i
		}
		v, ok := g.byID[s.Location]
		if !ok {
			el.add(s.File, s.Line, "server %q: unknown location %q", s.ID, s.Location)
		}
		s.Vertex = v
		switch s.Role {
		case "":
			s.Role = RoleRelay
		case RoleRelay, RoleReserve:
		case RolePrimary:
			if g.primary >= 0 {
				el.add(s.File, s.Line, "server %q: a second primary (first is %q)", s.ID, g.servers[g.primary].ID)
			} else {
				g.primary = i
			}
		default:
			el.add(s.File, s.Line, "server %q: unknown role %q (want primary, relay or reserve)", s.ID, s.Role)
		}
		if s.CapacityViewers < 0 || s.HardViewers < 0 || !finite(s.CapacityMbps) || s.CapacityMbps < 0 {
			el.add(s.File, s.Line, "server %q: capacities must be ≥ 0", s.ID)
		}
		if s.HardViewers == 0 {
			s.HardViewers = s.CapacityViewers + s.CapacityViewers/4
		} else if s.HardViewers < s.CapacityViewers {
			el.add(s.File, s.Line, "server %q: hard_viewers %d below capacity_viewers %d", s.ID, s.HardViewers, s.CapacityViewers)
		}
		if !finite(s.Weight) || s.Weight < 0 {
			el.add(s.File, s.Line, "server %q: weight %v must be finite and ≥ 0", s.ID, s.Weight)
		} else if s.Weight == 0 {
			s.Weight = 1
		}
	}
	if len(el.errs) > 0 {
		return nil, errors.Join(el.errs...)
	}
	return g, nil
}

// subdivisionCode returns the full ISO 3166-2 code of a rule's subdivision:
// country "US" + subdivision "CA", or subdivision "US-CA" with the country
// empty or equal. Codes compare without regard to case.
func subdivisionCode(country, sub string) (string, bool) {
	country, sub = strings.ToUpper(country), strings.ToUpper(sub)
	if c, rest, full := strings.Cut(sub, "-"); full {
		return sub, rest != "" && (country == "" || country == c)
	}
	return country + "-" + sub, country != ""
}

func fileOf(f string) string {
	if f == "" {
		return ""
	}
	return f + " "
}

func numStr(n uint) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

// NumVertices is the number of locations.
func (g *Graph) NumVertices() int { return len(g.locs) }

// Location returns the location of vertex v.
func (g *Graph) Location(v VertexID) *Location { return &g.locs[v] }

// Vertex returns the vertex of a location id.
func (g *Graph) Vertex(id string) (VertexID, bool) {
	v, ok := g.byID[id]
	return v, ok
}

// Parent returns the parent of v, or NoVertex.
func (g *Graph) Parent(v VertexID) VertexID { return g.parent[v] }

// Region returns the root ancestor of v (v itself when it has no parent).
func (g *Graph) Region(v VertexID) VertexID { return g.region[v] }

// Edges returns the directed edges; symmetric links appear in both
// directions. The slice must not be modified.
func (g *Graph) Edges() []Edge { return g.edges }

// Servers returns the servers with resolved vertices and defaults filled
// in. The slice must not be modified.
func (g *Graph) Servers() []Server { return g.servers }

// Primary returns the index of the primary server in Servers, or -1.
func (g *Graph) Primary() int { return g.primary }

// MatchRules returns every GeoIP match rule with its location id, in file
// order, for the GeoIP matcher.
func (g *Graph) MatchRules() []VertexRule {
	var out []VertexRule
	for _, l := range g.locs {
		for _, r := range l.Match {
			out = append(out, VertexRule{Vertex: l.ID, MatchRule: r})
		}
	}
	return out
}

// WithServers returns a new graph with the same locations and links and the
// given servers added to the existing ones (for example a dev servers file,
// or servers created in code).
func (g *Graph) WithServers(servers ...Server) (*Graph, error) {
	var b Builder
	b.locs = g.locs
	for _, e := range g.edges {
		b.links = append(b.links, Link{From: g.locs[e.From].ID, To: g.locs[e.To].ID, Cost: e.Cost})
	}
	b.servers = append(append(b.servers, g.servers...), servers...)
	return b.Build()
}
