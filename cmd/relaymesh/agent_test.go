package main

import (
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
