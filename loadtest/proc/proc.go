// Package proc reads the CPU time and memory of server processes from
// /proc, for load tests that report what their swarm cost the server.
package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUSeconds sums user and system time of processes from /proc/PID/stat;
// processes that are gone count 0.
func CPUSeconds(pids []int) float64 {
	const hz = 100 // USER_HZ on Linux
	var total float64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		// Fields after the command name, which is in parentheses.
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 > len(s) {
			continue
		}
		f := strings.Fields(s[i+2:])
		if len(f) > 12 {
			u, _ := strconv.ParseFloat(f[11], 64)
			sy, _ := strconv.ParseFloat(f[12], 64)
			total += (u + sy) / hz
		}
	}
	return total
}

// RSSMiB sums VmRSS of processes.
func RSSMiB(pids []int) float64 {
	var kb float64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "VmRSS:") {
				if f := strings.Fields(line); len(f) > 1 {
					v, _ := strconv.ParseFloat(f[1], 64)
					kb += v
				}
			}
		}
	}
	return kb / 1024
}

// Children lists the child processes of pid (e.g. nginx's workers).
func Children(pid int) []int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// WithChildren returns pids followed by the children of each.
func WithChildren(pids []int) []int {
	out := append([]int(nil), pids...)
	for _, p := range pids {
		out = append(out, Children(p)...)
	}
	return out
}

// ParsePIDs reads a comma-separated list of process ids ("" is none).
func ParsePIDs(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("pid %q: want a list like 1234,5678", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// Server is what a run cost the server processes, in a load test's report.
type Server struct {
	PIDs       []int   `json:"pids"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// CPUPerMin is CPU seconds per minute of wall time (60 = one core busy).
	CPUPerMin float64 `json:"cpu_s_per_min"`
	// CPUPerViewerMin is CPU seconds per viewer-minute played.
	CPUPerViewerMin float64 `json:"cpu_s_per_viewer_minute"`
	RSSMiB          float64 `json:"rss_mib"`
}

// Meter measures the CPU time of processes over a run.
type Meter struct {
	pids  []int
	cpu0  float64
	start time.Time
}

// Start begins a measurement; with no pids it measures nothing.
func Start(pids []int) *Meter {
	return &Meter{pids: pids, cpu0: CPUSeconds(pids), start: time.Now()}
}

// Stop ends the measurement; viewerMinutes is what the swarm played. It
// returns nil when no pids were given.
func (m *Meter) Stop(viewerMinutes float64) *Server {
	if m == nil || len(m.pids) == 0 {
		return nil
	}
	cpu := CPUSeconds(m.pids) - m.cpu0
	s := &Server{PIDs: m.pids, CPUSeconds: cpu, RSSMiB: RSSMiB(m.pids)}
	if wall := time.Since(m.start).Minutes(); wall > 0 {
		s.CPUPerMin = cpu / wall
	}
	if viewerMinutes > 0 {
		s.CPUPerViewerMin = cpu / viewerMinutes
	}
	return s
}
