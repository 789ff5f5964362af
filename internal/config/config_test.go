package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	os.WriteFile(p, []byte("rtmp:\n  listen: 127.0.0.1:2000\n  grace: 5s\npublish:\n  keys:\n    cam: s3cret\n"), 0o644)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.RTMP.Listen != "127.0.0.1:2000" || c.RTMP.Grace != 5*time.Second || c.Publish.Keys["cam"] != "s3cret" {
		t.Fatalf("%+v", c)
	}
	if c.RTMP.IdleTimeout != 30*time.Second {
		t.Fatalf("default lost: %v", c.RTMP.IdleTimeout)
	}
	os.WriteFile(p, []byte("rtmp:\n  lisen: x\n"), 0o644)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "lisen") {
		t.Fatalf("typo accepted: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Fatal("missing file accepted")
	}
}

// The documented example file must load.
func TestExampleFile(t *testing.T) {
	c, err := Load("../../docs/relaymesh.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestSecuritySections(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte(`rtmp:
  tls_listen: 0.0.0.0:443
http:
  admin_token: t0k
  admin_listen: 127.0.0.1:9000
tls: {cert: c.pem, key: k.pem}
relay:
  upstream_ca: ca.pem
play:
  protect: [live]
  keys: {"live/cam": k}
  token_secret: s
  previous_token_secrets: [old]
hooks:
  on_play: http://127.0.0.1:1/play
  timeout: 1s
  fail_open: true
`), 0o644)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.RTMP.TLSListen != "0.0.0.0:443" || c.HTTP.AdminToken != "t0k" || c.HTTP.AdminListen != "127.0.0.1:9000" || !c.HTTP.PublicStatus ||
		c.TLS.Cert != "c.pem" || c.TLS.Key != "k.pem" || c.Relay.UpstreamCA != "ca.pem" ||
		c.Play.Protect[0] != "live" || c.Play.Keys["live/cam"] != "k" || c.Play.TokenSecret != "s" || c.Play.PreviousTokenSecrets[0] != "old" ||
		c.Hooks.OnPlay == "" || c.Hooks.Timeout != time.Second || !c.Hooks.FailOpen {
		t.Fatalf("%+v", c)
	}
}
