package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// The floor is a separate bare fan-out program (not part of this module):
// one shared stream written to N loopback sockets by two workers with raw
// non-blocking writevs every 100 ms, no RTMP at all. Run on the same machine
// in the same session, it tells how far a server is from the cheapest fan-out
// a Go program can do. When its source directory is not there, the floor is
// skipped.

// FloorResult is the bare fan-out at one size.
type FloorResult struct {
	Viewers         int     `json:"viewers"`
	CPUPerViewerMin float64 `json:"cpu_s_per_viewer_minute"`
	DeliveredMbps   float64 `json:"delivered_mbps"`
	Mode            string  `json:"mode"`
	// WritesPerViewerSec is its writev calls per viewer and second.
	WritesPerViewerSec float64 `json:"writes_per_viewer_s"`
}

// floorArgs is the mode the floor runs in: the cheapest of the program's
// modes at 400 and 1,000 viewers.
var floorArgs = []string{"-mode", "pool", "-k", "2", "-batch", "100ms"}

// buildFloor compiles the floor program in dir into workDir.
func buildFloor(ctx context.Context, dir, workDir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, "main.go")); err != nil {
		return "", fmt.Errorf("no floor program in %s", dir)
	}
	out := filepath.Join(workDir, "fanlimit")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the floor program: %v: %s", err, b)
	}
	return out, nil
}

// runFloor measures the floor at n viewers over d (on the servers' CPU
// when pin is set: the whole program, its readers too).
func runFloor(ctx context.Context, pin *pinning, bin, workDir string, n int, d time.Duration) (FloorResult, error) {
	js := filepath.Join(workDir, "floor-"+strconv.Itoa(n)+".json")
	args := append(append([]string{}, floorArgs...), "-n", strconv.Itoa(n), "-warm", "2s", "-d", d.String(), "-json", js)
	ctx, cancel := context.WithTimeout(ctx, d+90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := pin.start(cmd, true)
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		return FloorResult{}, fmt.Errorf("floor at %d: %v: %s", n, err, out.Bytes())
	}
	b, err := os.ReadFile(js)
	if err != nil {
		return FloorResult{}, err
	}
	var r struct {
		CPU    float64 `json:"fan_cpu_s_per_viewer_min"`
		Mbps   float64 `json:"delivered_mbps"`
		Writes float64 `json:"write_calls_per_s"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return FloorResult{}, fmt.Errorf("floor report: %w", err)
	}
	return FloorResult{Viewers: n, CPUPerViewerMin: r.CPU, DeliveredMbps: r.Mbps, Mode: "pool k=2 100ms", WritesPerViewerSec: r.Writes / float64(n)}, nil
}
