package graph

import (
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"
)

// MaxFileSize bounds the size of one graph file accepted by Parse.
const MaxFileSize = 16 << 20

// File is the content of one graph YAML file, before validation. Any of the
// three sections may be absent, so locations, links and servers can live in
// separate files.
type File struct {
	Name      string
	Locations []Location
	Links     []Link
	Servers   []Server
}

// Parse reads one graph file. name is used in error messages only. It checks
// the syntax and the field names; references between items are checked by
// Builder.Build.
func Parse(name string, data []byte) (*File, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: file is %d bytes, more than the limit of %d", name, len(data), MaxFileSize)
	}
	f := &File{Name: name}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if doc.Kind == 0 { // empty file
		return f, nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("%s:%d: want one YAML document", name, doc.Line)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: want a mapping with locations, links and servers", name, root.Line)
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		var err error
		switch key.Value {
		case "locations":
			err = decodeList(name, val, locationKeys, func(n *yaml.Node) error {
				var l Location
				if err := n.Decode(&l); err != nil {
					return err
				}
				l.Line, l.File = n.Line, name
				f.Locations = append(f.Locations, l)
				return nil
			})
		case "links":
			err = decodeList(name, val, linkKeys, func(n *yaml.Node) error {
				var l Link
				if err := n.Decode(&l); err != nil {
					return err
				}
				l.Line, l.File = n.Line, name
				f.Links = append(f.Links, l)
				return nil
			})
		case "servers":
			err = decodeList(name, val, serverKeys, func(n *yaml.Node) error {
				var s Server
				if err := n.Decode(&s); err != nil {
					return err
				}
				s.Line, s.File = n.Line, name
				f.Servers = append(f.Servers, s)
				return nil
			})
		default:
			err = fmt.Errorf("%s:%d: unknown section %q (want locations, links or servers)", name, key.Line, key.Value)
		}
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}

var (
	locationKeys = keySet("id", "name", "parent", "lat", "lon", "match")
	matchKeys    = keySet("country", "subdivision", "geoname_id", "continent")
	linkKeys     = keySet("from", "to", "cost", "symmetric")
	serverKeys   = keySet("id", "location", "role", "rtmp", "http", "capacity_viewers", "capacity_mbps", "hard_viewers", "weight")
)

func keySet(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// decodeList walks a sequence of mappings, rejecting unknown keys (also in
// nested match rules) before decoding each item.
func decodeList(name string, seq *yaml.Node, keys map[string]bool, item func(*yaml.Node) error) error {
	if seq.Kind == yaml.ScalarNode && seq.Tag == "!!null" {
		return nil
	}
	if seq.Kind != yaml.SequenceNode {
		return fmt.Errorf("%s:%d: want a list", name, seq.Line)
	}
	for _, n := range seq.Content {
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s:%d: want a mapping", name, n.Line)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if !keys[k.Value] {
				return fmt.Errorf("%s:%d: unknown field %q", name, k.Line, k.Value)
			}
			if k.Value == "match" {
				if err := checkMatch(name, v); err != nil {
					return err
				}
			}
		}
		if err := item(n); err != nil {
			var te *yaml.TypeError
			if errors.As(err, &te) && len(te.Errors) > 0 {
				return fmt.Errorf("%s: %s", name, te.Errors[0])
			}
			return fmt.Errorf("%s:%d: %w", name, n.Line, err)
		}
	}
	return nil
}

func checkMatch(name string, seq *yaml.Node) error {
	rules := seq.Content
	switch seq.Kind {
	case yaml.SequenceNode:
	case yaml.MappingNode:
		rules = []*yaml.Node{seq}
	default:
		return fmt.Errorf("%s:%d: match: want a rule or a list of rules", name, seq.Line)
	}
	for _, r := range rules {
		if r.Kind != yaml.MappingNode {
			return fmt.Errorf("%s:%d: match rule: want a mapping", name, r.Line)
		}
		for i := 0; i+1 < len(r.Content); i += 2 {
			if k := r.Content[i]; !matchKeys[k.Value] {
				return fmt.Errorf("%s:%d: unknown match field %q", name, k.Line, k.Value)
			}
		}
	}
	return nil
}
