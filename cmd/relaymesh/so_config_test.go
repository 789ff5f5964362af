package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/config"
	"github.com/relaymesh/relaymesh/internal/rpc"
	so "github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
)

func TestSOLimits(t *testing.T) {
	lim, rules, err := soLimits(config.Default().SharedObjects)
	if err != nil || len(rules) != 0 || lim.ObjectsPerClient != 64 || lim.ValueBytes != 16<<10 || lim.MessagesPerSecond != 50 {
		t.Fatalf("defaults: %+v %v %v", lim, rules, err)
	}
	c := config.SharedObjects{SlotsPerObject: 3}
	if lim, _, _ := soLimits(c); lim.SlotsPerObject != 3 || lim.ObjectsPerScope != 1024 {
		t.Fatalf("zero fields must take defaults: %+v", lim)
	}
	c.Burst = -1
	if _, _, err := soLimits(c); err == nil || !strings.Contains(err.Error(), "burst") {
		t.Fatalf("negative burst: %v", err)
	}
	c = config.SharedObjects{Rules: access.Rules{{Op: "read", Who: access.Anyone}}}
	if _, _, err := soLimits(c); err == nil || !strings.Contains(err.Error(), "rules") {
		t.Fatalf("bad rule: %v", err)
	}
}

// soConfigFile writes a node config: a quick drain plus the given
// shared_objects section (YAML, indented by two spaces).
func soConfigFile(t *testing.T, section string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "node.yaml")
	if err := os.WriteFile(p, []byte("rtmp:\n  drain: 100ms\nshared_objects:\n"+section), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSharedObjectsConfigFile: write rules and limits from the config file
// hold on the primary and on a relay.
func TestSharedObjectsConfigFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := soConfigFile(t, `  value_bytes: 100
  slots_per_object: 3
  rules:
    - {scope: "live/*", object: chat, op: write, key: topic, who: nobody}
    - {scope: "live/*", object: chat, op: send, key: "kick*", who: publisher}
`)
	primary := startNode(t, runPrimary, "", "--config", cfg, "--open", "--data", t.TempDir())
	r1 := startNode(t, runRelay, "", "--config", cfg, "--id", "r1", "--upstream", "rtmp://"+primary.rtmp)
	for _, n := range []*testNode{primary, r1} {
		c := dialMesh(t, ctx, "rtmp://"+n.rtmp+"/live/room")
		o, err := c.Use(ctx, "chat", false)
		if err != nil {
			t.Fatal(err)
		}
		var se *rpc.StatusError
		if err := o.Set(ctx, "topic", "x"); !errors.As(err, &se) || se.Code != so.StatusNoWriteAccess {
			t.Fatalf("%s: topic write: %v", n.rtmp, err)
		}
		if err := o.Set(ctx, "big", strings.Repeat("x", 200)); !errors.As(err, &se) || se.Code != so.StatusLimitExceeded {
			t.Fatalf("%s: value over value_bytes: %v", n.rtmp, err)
		}
		if err := o.Set(ctx, "msg", "fine"); err != nil {
			t.Fatalf("%s: allowed write: %v", n.rtmp, err)
		}
		c.Close()
	}
	// slots_per_object: 3, on an object nobody has used (the previous
	// clients' release of "chat" may still be on its way).
	c := dialMesh(t, ctx, "rtmp://"+r1.rtmp+"/live/room")
	o, err := c.Use(ctx, "slots", false)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range []string{"a", "b", "c", "d"} {
		err := o.Set(ctx, k, 1.0)
		var se *rpc.StatusError
		if i < 3 && err != nil || i == 3 && (!errors.As(err, &se) || se.Code != so.StatusLimitExceeded) {
			t.Fatalf("slot %s: %v", k, err)
		}
	}
	// A bad section stops the node with a clear error.
	bad := soConfigFile(t, "  rules:\n    - {op: read, who: anyone}\n")
	err = runPrimary(ctx, []string{"--config", bad, "--rtmp", freeAddr(t), "--http", freeAddr(t), "--open", "--data", t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "shared_objects.rules") {
		t.Fatalf("bad rules: %v", err)
	}
}
