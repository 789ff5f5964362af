// Package bustest starts the bus for tests: an embedded NATS server with
// JetStream in the test's temporary directory, and a connection to it, both
// ended when the test ends.
package bustest

import (
	"testing"

	"github.com/relaymesh/relaymesh/internal/bus"
)

// Start returns an embedded server and a connection to it (closed before the
// server stops, when t ends).
func Start(t testing.TB) (*bus.Embedded, *bus.Conn) {
	t.Helper()
	e, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	c, err := bus.Connect(bus.Options{InProcess: e.Server()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return e, c
}
