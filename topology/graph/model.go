// Package graph is the operator's location graph: locations (with the GeoIP
// rules that map viewers to them), directed links with a cost, and the
// servers that live at locations. "Distance" in relaymesh is the cost of the
// cheapest path in this graph, not kilometres.
//
// A graph is read from one or more YAML files (see Parse) and checked as a
// whole by a Builder; the result is an immutable *Graph whose vertices have
// dense int32 ids so that later stages (distance tables, placement) can use
// plain slices instead of maps.
package graph

import "gopkg.in/yaml.v3"

// VertexID is the dense index of a location in a Graph (0 … NumVertices-1).
type VertexID int32

// NoVertex marks an absent vertex (a location without parent, an unknown id).
const NoVertex VertexID = -1

// Location is one vertex of the graph: a region hub, a country, a region of
// a country, a city, a data centre — whatever granularity the operator needs.
type Location struct {
	ID     string     `yaml:"id"`     // unique, case-sensitive
	Name   string     `yaml:"name"`   // human-readable, optional
	Parent string     `yaml:"parent"` // enclosing location, optional; the root ancestor is the location's region
	Lat    float64    `yaml:"lat"`    // degrees, optional (used for maps and generated costs)
	Lon    float64    `yaml:"lon"`    // degrees
	Match  MatchRules `yaml:"match"`  // GeoIP results that map to this location

	Line int    `yaml:"-"` // line in the source file, 0 when built in code
	File string `yaml:"-"`
}

// MatchRule says which GeoIP answers belong to a location. A rule sets one
// of: country; subdivision (with its country, or as a full ISO 3166-2 code);
// geoname_id; continent. The most specific rule wins when a viewer is
// placed: city (geoname id), then subdivision, then country, then
// continent. Codes compare without regard to case.
type MatchRule struct {
	Country     string `yaml:"country"`     // ISO 3166-1 alpha-2, e.g. "DE"
	Subdivision string `yaml:"subdivision"` // "BE" with country DE, or "DE-BE"
	GeonameID   uint   `yaml:"geoname_id"`  // GeoNames id of a city, as GeoIP's city.geoname_id
	Continent   string `yaml:"continent"`   // two-letter continent code, e.g. "EU"
}

// MatchRules is a location's list of rules. In YAML it is a list of
// mappings, or a single mapping for one rule.
type MatchRules []MatchRule

// UnmarshalYAML accepts a list of rules or a single rule.
func (m *MatchRules) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		var r MatchRule
		if err := n.Decode(&r); err != nil {
			return err
		}
		*m = MatchRules{r}
		return nil
	}
	var rs []MatchRule
	if err := n.Decode(&rs); err != nil {
		return err
	}
	*m = rs
	return nil
}

// VertexRule is a MatchRule together with the id of the location it maps to,
// the flat form handed to the GeoIP matcher.
type VertexRule struct {
	Vertex string
	MatchRule
}

// Link is a directed edge of the graph. Symmetric adds the reverse edge with
// the same cost.
type Link struct {
	From      string  `yaml:"from"`
	To        string  `yaml:"to"`
	Cost      float64 `yaml:"cost"` // ≥ 0, finite
	Symmetric bool    `yaml:"symmetric"`

	Line int    `yaml:"-"`
	File string `yaml:"-"`
}

// Role says what a server is for.
type Role string

// Server roles.
const (
	RolePrimary Role = "primary" // takes the broadcasters' pushes; the root of every relay tree
	RoleRelay   Role = "relay"   // opened and closed at its location as demand asks
	RoleReserve Role = "reserve" // used only when a location's own relays are full (overflow pool)
)

// Server is a machine at a location.
type Server struct {
	ID       string `yaml:"id"`
	Location string `yaml:"location"`
	Role     Role   `yaml:"role"` // default relay
	RTMP     string `yaml:"rtmp"` // host:port viewers play from
	HTTP     string `yaml:"http"` // host:port for HLS/DASH
	// CapacityViewers is the soft limit of concurrent viewers: no new
	// viewer is sent beyond it. 0 means unlimited.
	CapacityViewers int `yaml:"capacity_viewers"`
	// CapacityMbps is the soft limit of outgoing bandwidth. 0 means unlimited.
	CapacityMbps float64 `yaml:"capacity_mbps"`
	// HardViewers is the limit beyond which even sticky viewers are moved
	// away. Default: 1.25 × CapacityViewers.
	HardViewers int `yaml:"hard_viewers"`
	// Weight scales the share of ties this server wins. Default 1.
	Weight float64 `yaml:"weight"`

	Vertex VertexID `yaml:"-"` // resolved Location
	Line   int      `yaml:"-"`
	File   string   `yaml:"-"`
}

// Edge is a resolved directed link.
type Edge struct {
	From, To VertexID
	Cost     float64
}
