package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// modulePackages lists the module's packages with `go list -deps -json`.
func modulePackages(t *testing.T) []Package {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "./...") // Deps: direct and indirect
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath    string
			Imports, Deps []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		const mod = "github.com/relaymesh/relaymesh/"
		rel := func(s []string) []string {
			r := make([]string, len(s))
			for i, x := range s {
				r[i] = strings.TrimPrefix(x, mod)
			}
			return r
		}
		pkgs = append(pkgs, Package{Path: strings.TrimPrefix(p.ImportPath, mod), Imports: rel(p.Imports), Deps: rel(p.Deps)})
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	return pkgs
}

func TestModuleFollowsTheRules(t *testing.T) {
	for _, v := range Module.Check(modulePackages(t)) {
		t.Error(v)
	}
}

// Each rule catches a planted violation, and leaves what is allowed alone.
func TestPlantedViolations(t *testing.T) {
	pkgs := []Package{
		{Path: "packager", Imports: []string{"internal/hub", "topology/redirector"}},
		{Path: "relay", Imports: []string{"relay/agent"}},
		{Path: "relay/agent", Imports: []string{"internal/bus", "internal/hub"}}, // a bridge: allowed
		{Path: "internal/rtmp", Imports: []string{"relay"}},
		{Path: "topology/placement", Deps: []string{"topology/graph", "net/netip", "net/url"}}, // allowed
		{Path: "topology/demand", Deps: []string{"topology/graph", "github.com/nats-io/nats.go"}},
		{Path: "internal/av", Deps: []string{"net"}},
		{Path: "internal/sharedobject/origin", Deps: []string{"net"}}, // not pure: allowed
	}
	got := Module.Check(pkgs)
	want := []string{
		"internal/av imports net: a pure package depends on no network code",
		"internal/rtmp imports relay: internal/ imports no top-level package",
		"packager imports topology/redirector: the data plane never imports the control plane",
		"relay imports relay/agent: the data plane never imports the control plane",
		"topology/demand imports github.com/nats-io/nats.go: a pure package depends on no network code",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d violations, want %d:\n%v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("violation %d: %s\nwant %s", i, got[i], want[i])
		}
	}
}

// The Makefile's PURE_PKGS (vetted for Windows by `make cross`) are the
// pure packages of Module.
func TestMakefileListsThePurePackages(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	var got []string
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "PURE_PKGS = "); ok {
			for _, f := range strings.Fields(rest) {
				got = append(got, strings.TrimPrefix(f, "./"))
			}
		}
	}
	want := slices.Clone(Module.Pure)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Makefile PURE_PKGS %v, want the pure packages %v", got, want)
	}
}
