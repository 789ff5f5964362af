// Package layering states the import rules of the house and checks a
// module's packages against them:
//
//   - code under internal/ imports no top-level package of the module;
//   - the data plane (publishing, the hub, serving, pulling, packaging)
//     never imports the control plane (placement, the bus, GeoIP, load
//     tests): relays keep serving when the control plane is gone;
//   - pure packages (media model, codecs, shared-object state, the topology
//     mathematics) depend on no network code, not even indirectly.
//
// The rules are data (Rules); Check applies them to a package list, such as
// the one `go list -deps -json` prints. The package's test runs them on the
// module, and on a planted violation.
package layering

import (
	"fmt"
	"slices"
	"strings"
)

// Package is one package of the module as the rules see it: its path
// relative to the module root ("internal/hub"), what it imports directly (same
// form for the module's packages, full paths for others) and everything it
// depends on (Deps, direct and indirect).
type Package struct {
	Path    string
	Imports []string
	Deps    []string
}

// Rules names the packages of each layer by path prefix ("relay" matches
// relay and relay/..., not relayx).
type Rules struct {
	// TopLevel are the module's top-level folders; internal/ may import none.
	TopLevel []string
	// DataPlane packages must not import ControlPlane packages; Bridges
	// (a relay's bus agent) belong to the control plane even when they live
	// in a data-plane folder.
	DataPlane, ControlPlane, Bridges []string
	// Pure packages must not depend on Network packages.
	Pure, Network []string
}

// Violation is one broken rule.
type Violation struct {
	Package, Imports, Rule string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s imports %s: %s", v.Package, v.Imports, v.Rule)
}

// Module is the rule set of this module.
var Module = Rules{
	TopLevel: []string{"cmd", "ingest", "relay", "packager", "topology", "geo", "loadtest"},
	DataPlane: []string{
		"ingest", "relay", "packager", "internal/hub", "internal/serve", "internal/rtmp", "internal/av", "internal/codec",
		"internal/amf", "internal/sharedobject", "internal/rpc",
	},
	ControlPlane: []string{"topology", "geo", "loadtest", "internal/bus"},
	Bridges:      []string{"relay/agent", "internal/sharedobject/authority/kvstore"},
	Pure: []string{
		"internal/av", "internal/codec", "internal/amf", "internal/sharedobject", "internal/sharedobject/access",
		"internal/sharedobject/authority", "internal/sharedobject/replica",
		"topology/graph", "topology/distance", "topology/demand", "topology/placement",
		"topology/scaling", "topology/jumphash", "topology/controller",
	},
	Network: []string{
		"net", "net/http", "crypto/tls", "github.com/nats-io",
		"internal/rtmp", "internal/bus", "internal/httpserver",
	},
}

// under reports whether path is prefix or below it.
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

func anyUnder(path string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return under(path, p) })
}

// pure: a pure entry names one package; its sub-packages are pure only
// when named too (internal/sharedobject is pure, its origin and edge
// bindings are not).
func (r Rules) pure(path string) bool { return slices.Contains(r.Pure, path) }

// network: std packages match exactly (net/url and net/netip are not
// network code), the others by prefix.
func (r Rules) network(dep string) bool {
	for _, n := range r.Network {
		if !strings.Contains(n, ".") && !strings.HasPrefix(n, "internal/") {
			if dep == n {
				return true
			}
			continue
		}
		if under(dep, n) {
			return true
		}
	}
	return false
}

// Check returns every violation of the rules among pkgs, sorted.
func (r Rules) Check(pkgs []Package) []Violation {
	var out []Violation
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			if under(p.Path, "internal") && anyUnder(imp, r.TopLevel) {
				out = append(out, Violation{p.Path, imp, "internal/ imports no top-level package"})
			}
			if anyUnder(p.Path, r.DataPlane) && !anyUnder(p.Path, r.Bridges) &&
				anyUnder(imp, r.ControlPlane) {
				out = append(out, Violation{p.Path, imp, "the data plane never imports the control plane"})
			}
			if anyUnder(p.Path, r.DataPlane) && !anyUnder(p.Path, r.Bridges) &&
				anyUnder(imp, r.Bridges) {
				out = append(out, Violation{p.Path, imp, "the data plane never imports the control plane"})
			}
		}
		if r.pure(p.Path) {
			for _, d := range p.Deps {
				if r.network(d) {
					out = append(out, Violation{p.Path, d, "a pure package depends on no network code"})
					break
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Violation) int { return strings.Compare(a.String(), b.String()) })
	return out
}
