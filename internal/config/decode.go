package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// decode reads one YAML document over c. The document is parsed into a
// node tree and walked against the struct by hand (rather than decoded with
// KnownFields) so that every error carries the key's YAML path and its own
// line, never a Go type name.
func (c *Config) decode(path string, b []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("config %s: %s", path, syntaxError(b, err))
	}
	if len(doc.Content) == 0 {
		return nil // empty file: the defaults
	}
	var errs []string
	walk(doc.Content[0], reflect.ValueOf(c).Elem(), "", &errs)
	if len(errs) > 0 {
		return fmt.Errorf("config %s:\n  %s", path, strings.Join(errs, "\n  "))
	}
	return nil
}

var lineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError reports a YAML syntax error at the line it is on. The YAML
// library reports some parser errors one line early (the line before the
// problem, or where the enclosing block began), so the line is found again
// as the first line at which a prefix of the document fails the same way.
func syntaxError(b []byte, err error) string {
	m := lineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return strings.TrimPrefix(err.Error(), "yaml: ")
	}
	problem := m[2]
	lines := strings.SplitAfter(string(b), "\n")
	if len(lines) > 5000 {
		return "line " + m[1] + ": " + problem
	}
	for n := 1; n <= len(lines); n++ {
		var v yaml.Node
		perr := yaml.Unmarshal([]byte(strings.Join(lines[:n], "")), &v)
		if perr == nil {
			continue
		}
		if pm := lineRE.FindStringSubmatch(perr.Error()); pm != nil && pm[2] == problem {
			return fmt.Sprintf("line %d: %s", n, problem)
		}
	}
	return "line " + m[1] + ": " + problem
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// walk decodes node into v, appending one message per problem.
func walk(node *yaml.Node, v reflect.Value, key string, errs *[]string) {
	if node.Kind == yaml.AliasNode {
		node = node.Alias
	}
	t := v.Type()
	custom := reflect.PointerTo(t).Implements(unmarshalerType)
	switch {
	case t.Kind() == reflect.Struct && t != reflect.TypeFor[time.Time]() && !custom:
		if node.Kind == yaml.ScalarNode && node.Tag == "!!null" {
			return
		}
		if node.Kind != yaml.MappingNode {
			*errs = append(*errs, fmt.Sprintf("line %d: %s: want a section of keys, got %s", node.Line, orTop(key), describe(node)))
			return
		}
		fields := structFields(t)
		seen := map[string]int{}
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, val := node.Content[i], node.Content[i+1]
			full := join(key, k.Value)
			if prev, dup := seen[k.Value]; dup {
				*errs = append(*errs, fmt.Sprintf("line %d: %s given twice (first on line %d)", k.Line, full, prev))
				continue
			}
			seen[k.Value] = k.Line
			idx, ok := fields[k.Value]
			if !ok {
				msg := fmt.Sprintf("line %d: unknown key %s", k.Line, full)
				if s := suggest(k.Value, fields); s != "" {
					msg += fmt.Sprintf(" (did you mean %s?)", s)
				} else {
					msg += fmt.Sprintf(" (%s has %s)", orTop(key), strings.Join(sortedKeys(fields), ", "))
				}
				*errs = append(*errs, msg)
				continue
			}
			walk(val, v.Field(idx), full, errs)
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && !custom:
		if node.Kind == yaml.ScalarNode && node.Tag == "!!null" {
			v.Set(reflect.Zero(t))
			return
		}
		if node.Kind != yaml.SequenceNode {
			*errs = append(*errs, fmt.Sprintf("line %d: %s: want a list, got %s", node.Line, key, describe(node)))
			return
		}
		out := reflect.MakeSlice(t, len(node.Content), len(node.Content))
		for i, el := range node.Content {
			walk(el, out.Index(i), fmt.Sprintf("%s[%d]", key, i), errs)
		}
		v.Set(out)
	default:
		p := reflect.New(t)
		p.Elem().Set(v)
		if err := node.Decode(p.Interface()); err != nil {
			*errs = append(*errs, fmt.Sprintf("line %d: %s: want %s, got %s", node.Line, key, kindName(t), describe(node)))
			return
		}
		v.Set(p.Elem())
	}
}

func orTop(key string) string {
	if key == "" {
		return "the file"
	}
	return key
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// describe shows a node's value as the user wrote it.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a section"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return fmt.Sprintf("%q", v)
}

// kindName is what a value of t looks like, in the words of the docs.
func kindName(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[time.Duration]():
		return "a duration such as 500ms, 10s or 2m"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number ≥ 0"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Map:
		return "a section of " + kindName(t.Key()) + " keys and " + kindName(t.Elem()) + " values"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(kindName(t.Elem()), "a ") + "s"
	}
	return "a value"
}

// structFields maps the YAML keys of a struct to field indexes.
func structFields(t reflect.Type) map[string]int {
	m := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = i
	}
	return m
}

func sortedKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// suggest returns the known key closest to k when it is close enough to be
// a misspelling of it.
func suggest(k string, fields map[string]int) string {
	best, bestD := "", 1<<30
	for _, cand := range sortedKeys(fields) {
		if d := distance(strings.ToLower(k), cand); d < bestD {
			best, bestD = cand, d
		}
	}
	limit := 2
	if len(k) <= 4 {
		limit = 1
	}
	if bestD <= limit || (len(k) >= 3 && strings.HasPrefix(best, strings.ToLower(k))) {
		return best
	}
	return ""
}

// distance is the Damerau–Levenshtein (optimal string alignment) distance.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// Keys lists every key of the file as a dotted path (rtmp.listen), in the
// order of the structs. Maps and lists are one key each.
func Keys() []string {
	var out []string
	var rec func(t reflect.Type, prefix string)
	rec = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			k := join(prefix, name)
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Time]() {
				rec(f.Type, k)
				continue
			}
			out = append(out, k)
		}
	}
	rec(reflect.TypeFor[Config](), "")
	return out
}

// Field returns a pointer to the field of c at a dotted key (rtmp.listen).
func (c *Config) Field(key string) (any, error) {
	v := reflect.ValueOf(c).Elem()
	for _, part := range strings.Split(key, ".") {
		if v.Kind() != reflect.Struct {
			return nil, fmt.Errorf("config key %s: %s is not a section", key, part)
		}
		idx, ok := structFields(v.Type())[part]
		if !ok {
			return nil, errors.New("no config key " + key)
		}
		v = v.Field(idx)
	}
	if v.Kind() == reflect.Struct && v.Type() != reflect.TypeFor[time.Time]() {
		return nil, fmt.Errorf("config key %s is a section", key)
	}
	return v.Addr().Interface(), nil
}
