package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/relaymesh/relaymesh/internal/bus"
)

// A standalone relay started with --nats reports its status on the bus.
func TestRelayJoinsBus(t *testing.T) {
	e, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: filepath.Join(t.TempDir(), "js"), Listen: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	nc, err := nats.Connect(e.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subj, _ := bus.StatusSubject("relay-t")
	sub, err := nc.SubscribeSync(subj)
	if err != nil {
		t.Fatal(err)
	}
	n := startNode(t, runRelay, "", "--id", "relay-t", "--location", "eu", "--upstream", "rtmp://127.0.0.1:1",
		"--nats", e.ClientURL(), "--advertise-rtmp", "relay-t.example:1935")
	msg, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no status from the relay: %v", err)
	}
	st, err := bus.DecodeStatus(msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	if st.ID != "relay-t" || st.Location != "eu" || st.RTMP != "relay-t.example:1935" || st.HTTP != n.http {
		t.Fatalf("status %+v", st)
	}
}

// A primary on NATS keeps persistent shared objects in the bus's bucket: a
// restarted primary with an empty data directory still has them.
func TestPersistentObjectsInBus(t *testing.T) {
	e, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: filepath.Join(t.TempDir(), "js"), Listen: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfgFile := quickDrain(t)
	primary := startNode(t, runPrimary, "", "--config", cfgFile, "--open", "--data", t.TempDir(), "--nats", e.ClientURL())
	c := dialMesh(t, ctx, "rtmp://"+primary.rtmp+"/live/room")
	o, err := c.Use(ctx, "score", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Set(ctx, "a", 1.0); err != nil {
		t.Fatal(err)
	}
	c.Close()
	primary.stop(t)
	primary = startNode(t, runPrimary, primary.rtmp, "--config", cfgFile, "--open", "--data", t.TempDir(), "--nats", e.ClientURL())
	c2 := dialMesh(t, ctx, "rtmp://"+primary.rtmp+"/live/room")
	o2, err := c2.Use(ctx, "score", true)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := o2.Get("a"); v != 1.0 {
		t.Fatalf("after restart with a fresh data directory: a = %v", v)
	}
}
