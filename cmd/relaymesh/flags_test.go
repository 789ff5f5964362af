package main

import (
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/relaymesh/relaymesh/internal/config"
)

// serverFlagSets are the subcommands that run servers and take --config.
// The others (loadtest, sim, geo, so, call) are client tools with flags only.
var serverFlagSets = map[string]func(*config.Config) *cmdFlags{
	"primary":      primaryFlags,
	"relay":        relayFlags,
	"orchestrator": orchestratorFlags,
	"dev":          devFlags,
}

// Every flag of every server subcommand sets the field of a YAML key (the
// same field: a flag and its key cannot drift apart), and
// docs/configuration.md has a line with both.
func TestFlagsHaveConfigKeys(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")
	for cmd, build := range serverFlagSets {
		cfg := config.Default()
		c := build(&cfg)
		c.fs.VisitAll(func(f *flag.Flag) {
			if f.Name == "config" {
				return
			}
			key, ok := c.keys[f.Name]
			if !ok {
				t.Errorf("%s --%s has no config key", cmd, f.Name)
				return
			}
			p, err := cfg.Field(key)
			if err != nil {
				t.Errorf("%s --%s: %v", cmd, f.Name, err)
				return
			}
			if reflect.ValueOf(p).Pointer() != reflect.ValueOf(c.ptrs[f.Name]).Pointer() {
				t.Errorf("%s --%s does not set %s", cmd, f.Name, key)
			}
			documented := false
			for _, l := range lines {
				if strings.Contains(l, "`--"+f.Name) && strings.Contains(l, "`"+key+"`") {
					documented = true
					break
				}
			}
			if !documented {
				t.Errorf("docs/configuration.md: no line with `--%s` and `%s` (%s)", f.Name, key, cmd)
			}
		})
	}
}

// A flag overrides the file, the file the command's defaults; --config is
// read before the other flags wherever it is.
func TestFlagConfigOrder(t *testing.T) {
	p := t.TempDir() + "/c.yaml"
	os.WriteFile(p, []byte("nats:\n  urls: nats://file:4222\nrelay:\n  upstream: rtmp://file:1935\n  id: fromfile\npublish:\n  keys:\n    a: x\n"), 0o644)
	cfg := config.Default()
	if _, err := relayFlags(&cfg).parse([]string{"--id", "flag", "--config", p, "--capacity-viewers", "7"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Relay.ID != "flag" || cfg.Relay.Upstream != "rtmp://file:1935" || cfg.NATS.URLs != "nats://file:4222" ||
		cfg.Capacity.Viewers != 7 || cfg.RTMP.Listen != "127.0.0.1:1936" {
		t.Fatalf("%+v", cfg)
	}
	cfg = config.Default()
	if _, err := primaryFlags(&cfg).parse([]string{"--config=" + p, "--publish-key", "b=y"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Publish.Keys["a"] != "x" || cfg.Publish.Keys["b"] != "y" {
		t.Fatalf("keys %v", cfg.Publish.Keys)
	}
}

// Bad values are refused before anything listens, naming the flag and what
// is expected.
func TestFlagConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"relay", []string{"--id", "r", "--upstream", "http://127.0.0.1:1"}, `relay.upstream (--upstream): "http://127.0.0.1:1": scheme http: want rtmp://HOST:PORT`},
		{"primary", []string{"--publish-key", "nokey"}, `want NAME=SECRET`},
		{"dev", []string{"--relay-base-port", "-3"}, `dev.relay_base_port (--relay-base-port)`},
	} {
		cfg := config.Default()
		c := serverFlagSets[tc.cmd](&cfg)
		c.fs.SetOutput(new(strings.Builder))
		_, err := c.parse(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want %q", tc.cmd, tc.args, err, tc.want)
		}
	}
	p := t.TempDir() + "/c.yaml"
	os.WriteFile(p, []byte("hls:\n  format: dash\n"), 0o644)
	cfg := config.Default()
	if _, err := primaryFlags(&cfg).parse([]string{"--config", p}); err == nil || !strings.Contains(err.Error(), `hls.format: "dash"`) {
		t.Fatalf("hls.format dash: %v", err)
	}
}

// A missing GeoIP file names the flag and the file once.
func TestFlagGeoIPMissing(t *testing.T) {
	_, err := openGeo("/nonexistent/city.mmdb")
	if err == nil || strings.Count(err.Error(), "/nonexistent/city.mmdb") != 1 || !strings.Contains(err.Error(), "--geoip") {
		t.Fatalf("%v", err)
	}
}
