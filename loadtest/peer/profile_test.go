package peer

import (
	"os"
	"path/filepath"
	"testing"
)

// A profile directory that does not exist yet is made before the run (the
// profiles come at the end of each window: a missing directory lost them).
func TestProfileDirMade(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	c := Config{ProfileDir: dir}
	_ = c.defaults() // other defaults may fail on a machine without nginx
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("profile directory not made: %v", err)
	}
}
