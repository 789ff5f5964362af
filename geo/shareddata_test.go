package geo

import (
	"os"
	"path/filepath"
	"testing"
)

// sharedData returns the path of a file in the shared data folder that sits
// beside the repository (../shared/data from the directory holding go.mod).
// It skips the test when the folder is absent, unless CI=true.
func sharedData(t testing.TB, elem ...string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
	p := filepath.Join(append([]string{dir, "..", "shared", "data"}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("shared test data missing (CI=true): %v", err)
		}
		t.Skipf("shared test data not available: %v", err)
	}
	return p
}

// openShared opens a database from the shared data folder.
func openShared(t testing.TB, opts OpenOptions, elem ...string) *DB {
	t.Helper()
	db, err := Open(sharedData(t, elem...), opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}
