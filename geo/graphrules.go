package geo

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// MaxGraphFileSize bounds the graph files ParseGraphRules accepts.
const MaxGraphFileSize = 16 << 20

// ParseGraphRules reads the match rules out of a location graph file, so
// that tools can map locations to vertices without the topology package.
// Only the `locations:` list is read; everything else is ignored:
//
//	locations:
//	  - id: de                      # the vertex
//	    match: [{country: DE}]      # a list of rules, or one rule as a mapping
//	  - id: us-west
//	    match:
//	      - {country: US, subdivision: CA}
//	      - {geoname_id: 5809844}
//	  - id: eu
//	    match: {continent: EU}
//
// Rule keys are country, subdivision, geoname_id and continent (see Rule).
// A location without match has no rules. Errors name the line.
func ParseGraphRules(data []byte) ([]Rule, error) {
	if len(data) > MaxGraphFileSize {
		return nil, fmt.Errorf("geo: graph file too large (%d bytes, limit %d)", len(data), MaxGraphFileSize)
	}
	var file struct {
		Locations yaml.Node `yaml:"locations"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("geo: graph file: %w", err)
	}
	locs := &file.Locations
	switch locs.Kind {
	case 0:
		return nil, fmt.Errorf("geo: graph file: no locations list")
	case yaml.SequenceNode:
	default:
		return nil, fmt.Errorf("geo: graph file: line %d: locations must be a list", locs.Line)
	}
	var rules []Rule
	seen := make(map[string]int, len(locs.Content))
	for _, n := range locs.Content {
		var loc struct {
			ID    string    `yaml:"id"`
			Match yaml.Node `yaml:"match"`
		}
		if n.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("geo: graph file: line %d: a location must be a mapping", n.Line)
		}
		if err := n.Decode(&loc); err != nil {
			return nil, fmt.Errorf("geo: graph file: line %d: %w", n.Line, err)
		}
		if loc.ID == "" {
			return nil, fmt.Errorf("geo: graph file: line %d: location without id", n.Line)
		}
		if first, dup := seen[loc.ID]; dup {
			return nil, fmt.Errorf("geo: graph file: line %d: location %q already defined at line %d", n.Line, loc.ID, first)
		}
		seen[loc.ID] = n.Line
		var items []*yaml.Node
		switch loc.Match.Kind {
		case 0:
		case yaml.MappingNode:
			items = []*yaml.Node{&loc.Match}
		case yaml.SequenceNode:
			items = loc.Match.Content
		default:
			return nil, fmt.Errorf("geo: graph file: line %d: match of %q must be a rule or a list of rules", loc.Match.Line, loc.ID)
		}
		for _, item := range items {
			var r struct {
				Country     string `yaml:"country"`
				Subdivision string `yaml:"subdivision"`
				GeonameID   uint   `yaml:"geoname_id"`
				Continent   string `yaml:"continent"`
			}
			if item.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("geo: graph file: line %d: a match rule of %q must be a mapping", item.Line, loc.ID)
			}
			if err := item.Decode(&r); err != nil {
				return nil, fmt.Errorf("geo: graph file: line %d: %w", item.Line, err)
			}
			rules = append(rules, Rule{Vertex: loc.ID, Country: r.Country, Subdivision: r.Subdivision, GeonameID: r.GeonameID, Continent: r.Continent})
		}
	}
	return rules, nil
}

// LoadGraphRules reads a graph file of at most MaxGraphFileSize bytes and
// parses its rules (see ParseGraphRules).
func LoadGraphRules(path string) ([]Rule, error) {
	data, err := readBounded(path, MaxGraphFileSize)
	if err != nil {
		return nil, fmt.Errorf("geo: graph file %s: %w", path, err)
	}
	rules, err := ParseGraphRules(data)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return rules, nil
}
