package bus

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestDisconnectAdvisory: a client of the embedded server that goes away
// (its socket closed, as the kernel does for a killed process) is announced
// on DisconnectWildcard to the other clients, with its connection's name.
func TestDisconnectAdvisory(t *testing.T) {
	e, err := StartEmbedded(EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	watcher, err := Connect(Options{URLs: e.ClientURL(), Name: "watcher"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	got := make(chan *nats.Msg, 16)
	sub, err := watcher.NC.ChanSubscribe(DisconnectWildcard, got)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := watcher.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	relay, err := nats.Connect(e.ClientURL(), nats.Name("relay-x"))
	if err != nil {
		t.Fatal(err)
	}
	cid, _ := relay.GetClientID()
	srvID := relay.ConnectedServerId()
	relay.Close()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-got:
			d, err := DecodeDisconnect(m.Data)
			if err != nil {
				t.Fatalf("advisory %s: %v", m.Data, err)
			}
			if d.Name != "relay-x" {
				continue
			}
			if d.Client != cid || d.Server != srvID || d.Reason == "" || d.Time.IsZero() {
				t.Errorf("advisory %+v, want connection %d on %s", d, cid, srvID)
			}
			t.Logf("advisory on %s: %+v", m.Subject, d)
			return
		case <-deadline:
			t.Fatal("no disconnect advisory for relay-x")
		}
	}
}

func TestDecodeDisconnect(t *testing.T) {
	ok := `{"type":"io.nats.server.advisory.v1.client_disconnect","id":"x","timestamp":"2026-01-02T03:04:05Z",` +
		`"server":{"name":"s","host":"h","id":"NSERVER","ver":"2"},"client":{"id":7,"name":"relay-na","acc":"$G"},"reason":"Client Closed"}`
	d, err := DecodeDisconnect([]byte(ok))
	if err != nil || d.Name != "relay-na" || d.Client != 7 || d.Server != "NSERVER" || d.Reason != "Client Closed" {
		t.Fatalf("%+v, %v", d, err)
	}
	for _, bad := range []string{
		strings.Replace(ok, "client_disconnect", "client_connect", 1),
		strings.Replace(ok, `"id":7,`, "", 1),
		strings.Replace(ok, `"id":"NSERVER",`, "", 1),
		`{"type":"io.nats.server.advisory.v1.client_disconnect"`,
		`{"type":"io.nats.server.advisory.v1.client_disconnect","reason":"` + strings.Repeat("x", 300) + `"}`,
		"[" + strings.Repeat(" ", maxDisconnectSize) + "]",
	} {
		if _, err := DecodeDisconnect([]byte(bad)); err == nil {
			t.Errorf("accepted %.80s", bad)
		}
	}
}
