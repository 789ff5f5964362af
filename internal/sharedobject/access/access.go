// Package access holds the write rules of shared objects: which kind of
// connection may change slots or send messages on which objects of which
// application scopes. The primary's authority and every relay's replica apply
// the same rules, so that a viewer on a relay is refused at the edge.
package access

import (
	"fmt"
	"strings"
)

// Role is what a connection is to the server that applies the rules.
type Role uint8

const (
	RoleViewer    Role = iota + 1 // a playing client
	RolePublisher                 // the broadcaster of the scope's stream
	RoleRelay                     // a downstream relay multiplexing its own clients
)

func (r Role) String() string {
	switch r {
	case RoleViewer:
		return "viewer"
	case RolePublisher:
		return "publisher"
	case RoleRelay:
		return "relay"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// Op is what a rule governs.
type Op string

const (
	OpWrite Op = "write" // RequestChange and RequestRemove; Rule.Key matches the slot name
	OpSend  Op = "send"  // SendMessage; Rule.Key matches the handler name
)

// Who may perform an operation.
type Who string

const (
	Anyone    Who = "anyone"
	Publisher Who = "publisher"
	Nobody    Who = "nobody" // only server-side code (the authority's own API)
)

// Rule grants an operation to Who on the matching scope, object and key.
// Patterns are globs in which '*' matches any run of characters (including
// '/') and every other character matches itself; an empty pattern matches
// everything.
type Rule struct {
	Scope  string `json:"scope,omitempty" yaml:"scope,omitempty"`   // application scope "app/instance", e.g. "live/*"
	Object string `json:"object,omitempty" yaml:"object,omitempty"` // shared-object name
	Op     Op     `json:"op" yaml:"op"`                             // "write" or "send"
	Key    string `json:"key,omitempty" yaml:"key,omitempty"`       // slot name (write) or handler name (send)
	Who    Who    `json:"who" yaml:"who"`                           // "anyone", "publisher" or "nobody"
}

// Rules are checked in order: the first rule whose Op and patterns match
// decides. When none matches, the operation is allowed (shared objects are
// open by default, as in Flash Media Server).
type Rules []Rule

// Validate reports the first malformed rule.
func (rs Rules) Validate() error {
	for i, r := range rs {
		if r.Op != OpWrite && r.Op != OpSend {
			return fmt.Errorf("access rule %d: op %q is not write or send", i, r.Op)
		}
		if r.Who != Anyone && r.Who != Publisher && r.Who != Nobody {
			return fmt.Errorf("access rule %d: who %q is not anyone, publisher or nobody", i, r.Who)
		}
	}
	return nil
}

// Allowed reports whether a connection of role may perform op on key of the
// object in scope. A relay is trusted to have applied the rules to its own
// clients: it is refused only what nobody may do.
func (rs Rules) Allowed(op Op, scope, object, key string, role Role) bool {
	for _, r := range rs {
		if r.Op != op || !Match(r.Scope, scope) || !Match(r.Object, object) || !Match(r.Key, key) {
			continue
		}
		switch r.Who {
		case Anyone:
			return true
		case Publisher:
			return role == RolePublisher || role == RoleRelay
		default:
			return false
		}
	}
	return true
}

// Match reports whether s matches the glob pattern ('*' = any run of
// characters; empty pattern = everything). It runs in O(len(pattern)·len(s)).
func Match(pattern, s string) bool {
	if pattern == "" || pattern == "*" {
		return true
	}
	if !strings.Contains(pattern, "*") {
		return pattern == s
	}
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
