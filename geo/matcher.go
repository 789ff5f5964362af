package geo

import (
	"fmt"
	"strings"
)

// Levels of the fallback chain, as returned by Matcher.Match.
const (
	LevelCity              = "city"
	LevelSubdivision       = "subdivision"
	LevelCountry           = "country"
	LevelRegisteredCountry = "registered_country"
	LevelContinent         = "continent"
	LevelDefault           = "default"
	// LevelNone means nothing matched and the Matcher has no default.
	LevelNone = ""
)

// Rule says that locations matching it belong to graph vertex Vertex. The
// most specific field that is set decides what the rule matches:
//
//   - GeonameID: that city (GeoNames ids are global);
//   - Subdivision: that subdivision of Country. It is the code after the
//     country ("CA"), or a full ISO 3166-2 code ("US-CA") with Country
//     empty or equal;
//   - Country: that country (ISO 3166-1 alpha-2), also used for locations
//     that have only a registered country;
//   - Continent: that continent ("EU", "NA", "SA", "AS", "AF", "OC", "AN").
//
// Codes are compared without regard to case.
type Rule struct {
	Vertex      string
	Country     string
	Subdivision string
	GeonameID   uint
	Continent   string
}

type subdivisionKey struct{ country, subdivision string }

// Matcher maps a Location to a graph vertex through the chain city →
// subdivision → country → registered country (only when the country is
// unknown) → continent → default. It is immutable and safe for concurrent
// use; a Match is a few map reads and allocates nothing.
type Matcher struct {
	cities       map[uint]string
	subdivisions map[subdivisionKey]string
	countries    map[string]string
	continents   map[string]string
	def          string
}

// NewMatcher builds a Matcher from rules; defaultVertex (may be empty) is
// the answer when no rule matches. Two rules with the same key and
// different vertices, a rule without a vertex or without any criterion, and
// malformed codes are errors that name the rule (by index and vertex).
func NewMatcher(rules []Rule, defaultVertex string) (*Matcher, error) {
	m := &Matcher{
		cities:       make(map[uint]string),
		subdivisions: make(map[subdivisionKey]string),
		countries:    make(map[string]string),
		continents:   make(map[string]string),
		def:          defaultVertex,
	}
	for i, r := range rules {
		if err := m.add(r); err != nil {
			return nil, fmt.Errorf("geo: rule %d (vertex %q): %w", i, r.Vertex, err)
		}
	}
	return m, nil
}

func (m *Matcher) add(r Rule) error {
	if r.Vertex == "" {
		return fmt.Errorf("no vertex")
	}
	country := strings.ToUpper(strings.TrimSpace(r.Country))
	sub := strings.ToUpper(strings.TrimSpace(r.Subdivision))
	continent := strings.ToUpper(strings.TrimSpace(r.Continent))
	if c, s, ok := strings.Cut(sub, "-"); ok {
		if country != "" && country != c {
			return fmt.Errorf("subdivision %q is not in country %q", r.Subdivision, r.Country)
		}
		country, sub = c, s
	}
	if country != "" && !isCode(country, 2, 2) {
		return fmt.Errorf("country %q: want an ISO 3166-1 alpha-2 code", r.Country)
	}
	if sub != "" && !isCode(sub, 1, 3) {
		return fmt.Errorf("subdivision %q: want an ISO 3166-2 subdivision code", r.Subdivision)
	}
	if continent != "" && !isCode(continent, 2, 2) {
		return fmt.Errorf("continent %q: want a two-letter continent code", r.Continent)
	}
	switch {
	case r.GeonameID != 0:
		return put(m.cities, r.GeonameID, r.Vertex, "geoname id")
	case sub != "":
		if country == "" {
			return fmt.Errorf("subdivision %q needs a country", r.Subdivision)
		}
		return put(m.subdivisions, subdivisionKey{country, sub}, r.Vertex, "subdivision")
	case country != "":
		return put(m.countries, country, r.Vertex, "country")
	case continent != "":
		return put(m.continents, continent, r.Vertex, "continent")
	}
	return fmt.Errorf("no criterion (country, subdivision, geoname_id or continent)")
}

func put[K comparable](m map[K]string, k K, vertex, what string) error {
	if old, ok := m[k]; ok && old != vertex {
		return fmt.Errorf("%s %v already maps to vertex %q", what, k, old)
	}
	m[k] = vertex
	return nil
}

// isCode reports whether s is min..max ASCII letters or digits.
func isCode(s string, min, max int) bool {
	if len(s) < min || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// Match returns the vertex for loc and the level of the chain that chose
// it; ("", LevelNone) when nothing matched and there is no default.
// MaxMind codes are upper case, so loc's codes are used as they are.
func (m *Matcher) Match(loc Location) (vertex, level string) {
	if loc.GeonameID != 0 {
		if v, ok := m.cities[loc.GeonameID]; ok {
			return v, LevelCity
		}
	}
	country := loc.Country
	if loc.Subdivision != "" {
		if v, ok := m.subdivisions[subdivisionKey{loc.EffectiveCountry(), loc.Subdivision}]; ok {
			return v, LevelSubdivision
		}
	}
	if country != "" {
		if v, ok := m.countries[country]; ok {
			return v, LevelCountry
		}
	} else if loc.RegisteredCountry != "" {
		if v, ok := m.countries[loc.RegisteredCountry]; ok {
			return v, LevelRegisteredCountry
		}
	}
	if loc.Continent != "" {
		if v, ok := m.continents[loc.Continent]; ok {
			return v, LevelContinent
		}
	}
	if m.def != "" {
		return m.def, LevelDefault
	}
	return "", LevelNone
}

// Default is the vertex returned when no rule matches.
func (m *Matcher) Default() string { return m.def }
