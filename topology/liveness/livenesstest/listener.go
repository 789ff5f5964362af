// Package livenesstest gives tests the listener of a relay that
// topology/liveness probes.
package livenesstest

import (
	"net"
	"testing"
)

// Listen opens a loopback listener that accepts every connection and closes
// it at once (all a liveness probe asks of a relay's listener). Closing it
// makes the next probe refused, as for a relay whose process died; it is
// closed when the test ends otherwise.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := ListenAt(t, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// ListenAt is Listen at addr (a relay restarted on the port it had).
func ListenAt(t testing.TB, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln, nil
}
