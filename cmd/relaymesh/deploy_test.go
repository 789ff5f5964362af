package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/relaymesh/relaymesh/internal/config"
	"github.com/relaymesh/relaymesh/internal/httpserver"
)

const deployDir = "../../docs/deploy"

type composeService struct {
	Image string `yaml:"image"`
	Build struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Command     []string          `yaml:"command"`
	Volumes     []string          `yaml:"volumes"`
	Environment map[string]string `yaml:"environment"`
	DependsOn   []string          `yaml:"depends_on"`
	Ports       []string          `yaml:"ports"`
}

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

// ${VAR}, ${VAR:?message}, ${VAR:-default} as compose interpolates them.
var composeVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-?][^}]*)?\}`)

// The compose file names only commands and flags the binary has, mounts only
// files of the tree, and its relaymesh configuration and graph load: what
// can be checked without running containers (CI cannot).
func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(b, &cf); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	roles := map[string]int{}
	ids := map[string]string{} // server id → location
	for name, s := range cf.Services {
		for _, d := range s.DependsOn {
			if _, ok := cf.Services[d]; !ok {
				t.Errorf("%s depends on unknown service %s", name, d)
			}
		}
		mounts := map[string]string{} // container path → host path
		for _, v := range s.Volumes {
			parts := strings.Split(v, ":")
			if len(parts) < 2 {
				t.Errorf("%s: volume %q", name, v)
				continue
			}
			if strings.HasPrefix(parts[0], ".") || strings.HasPrefix(parts[0], "/") {
				host := filepath.Join(deployDir, parts[0])
				if _, err := os.Stat(host); err != nil {
					t.Errorf("%s mounts %s, which is not in the tree: %v", name, parts[0], err)
				}
				mounts[parts[1]] = host
			} else if _, ok := cf.Volumes[parts[0]]; !ok {
				t.Errorf("%s: named volume %s not declared", name, parts[0])
			}
		}
		if strings.HasPrefix(s.Image, "nats") {
			roles["nats"]++
			if !strings.Contains(strings.Join(s.Command, " "), "/etc/nats/nats.conf") || mounts["/etc/nats/nats.conf"] == "" {
				t.Errorf("%s: not run with the mounted nats.conf", name)
			}
			continue
		}
		if !strings.HasPrefix(s.Image, "relaymesh") {
			t.Errorf("%s: unexpected image %q", name, s.Image)
			continue
		}
		if df := filepath.Join(deployDir, s.Build.Context, s.Build.Dockerfile); s.Build.Dockerfile == "" || !fileExists(df) {
			t.Errorf("%s: build dockerfile %s missing", name, df)
		}
		if len(s.Command) == 0 {
			t.Errorf("%s: no command", name)
			continue
		}
		build, ok := serverFlagSets[s.Command[0]]
		if !ok {
			t.Errorf("%s: %q is not a relaymesh server command", name, s.Command[0])
			continue
		}
		roles[s.Command[0]]++
		// The arguments as the container gets them, with mounted files
		// at their place in the tree.
		var args []string
		for _, a := range s.Command[1:] {
			a = composeVar.ReplaceAllString(a, "secret-$1")
			if !strings.HasPrefix(a, "--") {
				t.Errorf("%s: argument %q is not a --flag", name, a)
			}
			flagName, val, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if host, ok := mounts[val]; ok {
				a = "--" + flagName + "=" + host
			}
			args = append(args, a)
		}
		cfg := config.Default()
		c := build(&cfg)
		c.fs.SetOutput(new(strings.Builder))
		for _, a := range args {
			flagName, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if c.fs.Lookup(flagName) == nil {
				t.Errorf("%s: relaymesh %s has no flag --%s", name, s.Command[0], flagName)
			}
		}
		if _, err := c.parse(args); err != nil {
			t.Errorf("%s: relaymesh %s %v: %v", name, s.Command[0], args, err)
			continue
		}
		switch s.Command[0] {
		case "orchestrator":
			host, ok := mounts[cfg.Orchestrator.Graph]
			if !ok {
				t.Errorf("%s: graph %s not mounted", name, cfg.Orchestrator.Graph)
				continue
			}
			g, err := loadGraph(host)
			if err != nil {
				t.Errorf("%s: graph: %v", name, err)
				continue
			}
			for _, srv := range g.Servers() {
				ids["graph:"+srv.ID] = srv.Location
			}
		case "primary":
			ids[cfg.Primary.ID] = cfg.Primary.Location
		case "relay":
			ids[cfg.Relay.ID] = cfg.Relay.Location
			up := strings.TrimPrefix(cfg.Relay.Upstream, "rtmp://")
			host, _, _ := strings.Cut(up, ":")
			if _, ok := cf.Services[host]; !ok {
				t.Errorf("%s: upstream %s is no service", name, cfg.Relay.Upstream)
			}
		}
	}
	if roles["nats"] != 3 || roles["orchestrator"] != 2 || roles["primary"] != 1 || roles["relay"] < 2 {
		t.Errorf("want 3 NATS nodes, 2 orchestrators, a primary and relays; have %v", roles)
	}
	// Every server the compose file runs is in the orchestrators' graph, at
	// the location it says.
	for id, loc := range ids {
		if strings.HasPrefix(id, "graph:") {
			continue
		}
		if gl, ok := ids["graph:"+id]; !ok || gl != loc {
			t.Errorf("server %s (location %s) is not in the graph (has %q)", id, loc, gl)
		}
	}
	conf, err := os.ReadFile(filepath.Join(deployDir, "nats.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"nats1", "nats2", "nats3"} {
		if !strings.Contains(string(conf), "nats-route://"+n+":6222") {
			t.Errorf("nats.conf has no route to %s", n)
		}
	}
	if !strings.Contains(string(conf), "jetstream") {
		t.Error("nats.conf does not enable JetStream")
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// The image is built by the Makefile's build step, static, as non-root;
// make image runs docker build on it.
func TestDockerfile(t *testing.T) {
	df, err := os.ReadFile(filepath.Join(deployDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	d := string(df)
	for _, want := range []string{"CGO_ENABLED=0", "RUN make build ", "USER nonroot", "distroless/static", "internal/httpserver.Revision="} {
		if !strings.Contains(d, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if n := strings.Count(d, "\nFROM "); n < 2 {
		t.Errorf("Dockerfile has %d stages, want a build and a runtime stage", n)
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^image:`).Match(mk) || !strings.Contains(string(mk), "docker build -f docs/deploy/Dockerfile") {
		t.Error("Makefile has no image target building docs/deploy/Dockerfile")
	}
	if !regexp.MustCompile(`(?m)^build:\n\t\$\(GO\) build .*\$\(LDFLAGS\).*-o \$\(BIN\) ./cmd/relaymesh`).Match(mk) {
		t.Error("make build does not take LDFLAGS and BIN, which the Dockerfile sets")
	}
	_ = httpserver.Revision // the variable the Dockerfile's -X sets
}

// The systemd unit runs a server command with its config file.
func TestSystemdUnit(t *testing.T) {
	u, err := os.ReadFile(filepath.Join(deployDir, "relaymesh@.service"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ExecStart=(\S+) %i (.*)$`).FindSubmatch(u)
	if m == nil {
		t.Fatal("no ExecStart=BIN %i FLAGS")
	}
	for cmd, build := range serverFlagSets {
		if cmd == "dev" {
			continue
		}
		cfg := config.Default()
		c := build(&cfg)
		for _, f := range strings.Fields(string(m[2])) {
			if strings.HasPrefix(f, "--") && c.fs.Lookup(strings.TrimPrefix(f, "--")) == nil {
				t.Errorf("relaymesh %s has no flag %s", cmd, f)
			}
		}
	}
	for _, want := range []string{"User=relaymesh", "NoNewPrivileges=yes", "Restart=on-failure", "[Install]"} {
		if !strings.Contains(string(u), want) {
			t.Errorf("unit lacks %s", want)
		}
	}
}
