package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func loadString(t *testing.T, doc string) error {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	return err
}

// Config errors name the YAML key and its own line, never a Go type, and
// suggest the key meant.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want []string
	}{
		{"rtmp:\n  lisen: x\n", []string{"line 2: unknown key rtmp.lisen (did you mean listen?)"}},
		{"nats:\n  url: nats://x:4222\n", []string{"line 2: unknown key nats.url (did you mean urls?)"}},
		{"hsl:\n  format: llhls\n", []string{"line 1: unknown key hsl (did you mean hls?)"}},
		{"rtmp:\n  grace: abc\n", []string{"line 2: rtmp.grace: want a duration", `"abc"`}},
		{"rtmp:\n  max_connections: many\n", []string{"line 2: rtmp.max_connections: want a whole number"}},
		{"rtmp:\n  listen: a:1\n  listen: b:2\n", []string{"line 3: rtmp.listen given twice (first on line 2)"}},
		// Syntax errors on line 2 and 3 (the YAML library says 1 and 2).
		{"rtmp:\n  listen: [x\n", []string{"line 2: did not find expected ',' or ']'"}},
		{"rtmp:\n  listen: a:1\n bad: x\n", []string{"line 3: did not find expected key"}},
		{"rtmp:\n\tlisten: x\n", []string{"line 2: found character that cannot start any token"}},
		{"shared_objects:\n  rules:\n    - {scope: x, op: write, who: anyone, objekt: y}\n", []string{"line 3: unknown key shared_objects.rules[0].objekt (did you mean object?)"}},
	} {
		err := loadString(t, tc.doc)
		if err == nil {
			t.Errorf("%q: accepted", tc.doc)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q does not say %q", tc.doc, err, w)
			}
		}
		if strings.Contains(err.Error(), "config.") || strings.Contains(err.Error(), "time.Duration") {
			t.Errorf("%q: error %q shows Go type names", tc.doc, err)
		}
	}
}

func TestSuggestionOnlyWhenClose(t *testing.T) {
	err := loadString(t, "rtmp:\n  zzzzzz: 1\n")
	if err == nil || strings.Contains(err.Error(), "did you mean") || !strings.Contains(err.Error(), "rtmp has ") {
		t.Fatalf("%v", err)
	}
}

// Every key of the new sections loads from YAML.
func TestConfigNewSections(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("nats:\n  urls: nats://a:4222,nats://b:4222\n  creds: /c\nadvertise:\n  rtmp: cdn:1935\ncapacity:\n  viewers: 10\n  mbps: 2.5\n"+
		"shared_objects:\n  data: /d\n  webhooks:\n    live: http://h/x\n  webhook_timeout: 2s\n"), 0o644)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.NATS.URLs != "nats://a:4222,nats://b:4222" || c.NATS.Creds != "/c" || c.Advertise.RTMP != "cdn:1935" ||
		c.Capacity.Viewers != 10 || c.Capacity.Mbps != 2.5 || c.SharedObjects.Data != "/d" || c.SharedObjects.Webhooks["live"] != "http://h/x" {
		t.Fatalf("%+v", c)
	}
	if c.RTMP.Listen != "127.0.0.1:1935" {
		t.Fatal("defaults lost")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.HLS.Format = "dash" }, `hls.format: "dash": want llhls, fmp4, mpegts`},
		{func(c *Config) { c.HLS.Apps = map[string]string{"tv": "ts"} }, `hls.apps.tv: "ts"`},
		{func(c *Config) { c.Relay.Upstream = "http://127.0.0.1:1" }, `relay.upstream (--upstream): "http://127.0.0.1:1": scheme http: want rtmp://HOST:PORT`},
		{func(c *Config) { c.Relay.Upstream = "127.0.0.1:1935" }, `relay.upstream (--upstream)`},
		{func(c *Config) { c.RTMP.Listen = "1935" }, `rtmp.listen (--rtmp): "1935": want HOST:PORT`},
		{func(c *Config) { c.Log.Level = "loud" }, `log.level (--log-level)`},
		{func(c *Config) { c.SharedObjects.Webhooks = map[string]string{"*": "ftp://x"} }, `shared_objects.webhooks.*`},
	} {
		c := Default()
		tc.mod(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	c := Default()
	c.Relay.Upstream = "rtmp://127.0.0.1:1935/"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// The example file has every key of the configuration, so it documents them all.
func TestExampleHasEveryKey(t *testing.T) {
	b, err := os.ReadFile("../../docs/relaymesh.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	section := ""
	have := map[string]bool{}
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") || strings.TrimSpace(line) == "" {
			continue
		}
		k, _, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if !strings.HasPrefix(k, " ") {
			section = k
			have[k] = true
			continue
		}
		if strings.HasPrefix(k, "  ") && !strings.HasPrefix(k, "   ") {
			have[section+"."+strings.TrimSpace(k)] = true
		}
	}
	for _, k := range Keys() {
		if !have[k] {
			t.Errorf("docs/relaymesh.example.yaml lacks %s", k)
		}
	}
}

func TestField(t *testing.T) {
	c := Default()
	p, err := c.Field("rtmp.listen")
	if err != nil || p != &c.RTMP.Listen {
		t.Fatal(p, err)
	}
	if _, err := c.Field("rtmp.lisen"); err == nil {
		t.Fatal("unknown key found")
	}
}
