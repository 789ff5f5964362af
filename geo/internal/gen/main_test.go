package main

import (
	"bytes"
	"os"
	"testing"
)

// TestCommittedOutputIsCurrent fails when the generator's table changed but
// go generate was not run.
func TestCommittedOutputIsCurrent(t *testing.T) {
	want, err := build()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../default-city.mmdb")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("geo/default-city.mmdb is stale: run go generate in geo/")
	}
}
