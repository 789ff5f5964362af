package main

import (
	"flag"
	"os"
	"testing"
)

// Running side by side: the end-to-end tests that only wait on real
// clients and servers call t.Parallel(), and run four at a time unless
// -parallel says otherwise (they take little CPU: their time is the real
// time of the streams they publish and play). Tests that time what they
// check (a stall or lag bound: TestSlowViewer, TestBrowserPlayers,
// TestSteeringFailover, the latency tests), that pace their own traffic
// (TestBadInput) or that swap a package variable (TestSecretsNotLogged:
// logOutput) stay serial: go test runs every serial test before the
// parallel ones start, so no parallel test of this package runs beside
// them.
//
// TestMain runs the relaymesh command itself when RELAYMESH_TEST_MAIN=1,
// so that a test can start a server as a process of its own (and kill it
// with SIGKILL) from the test binary: `TESTBINARY relay --id …`.
func TestMain(m *testing.M) {
	if os.Getenv("RELAYMESH_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	flag.Parse()
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		_ = flag.Set("test.parallel", "4")
	}
	os.Exit(m.Run())
}
