package main

import (
	"os"
	"testing"
)

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
