package main

import (
	"os"
	"testing"
)

// Running side by side: the end-to-end tests that only wait on real
// clients and servers call t.Parallel() (make test runs them four at a
// time, go test -parallel 4). Tests that time what they check (a stall
// or lag bound: TestSlowViewer, TestBrowserPlayers, TestSteeringFailover,
// the latency tests), that pace their own traffic (TestBadInput) or that
// swap a package variable (TestSecretsNotLogged: logOutput) stay serial:
// go test runs every serial test before the parallel ones start, so no
// parallel test of this package runs beside them.
//
// TestMain runs the relaymesh command itself when RELAYMESH_TEST_MAIN=1,
// so that a test can start a server as a process of its own (and kill it
// with SIGKILL) from the test binary: `TESTBINARY relay --id …`.
func TestMain(m *testing.M) {
	if os.Getenv("RELAYMESH_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
