package peer

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// writeCalls sums the write system calls (write, writev, sendmsg: syscw in
// /proc/PID/io) the processes made so far; 0 when the kernel does not say.
func writeCalls(pids []int) float64 {
	var n float64
	for _, pid := range pids {
		f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/io")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "syscw: "); ok {
				x, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				n += x
			}
		}
		f.Close()
	}
	return n
}

// runQueueWait sums the time (s) the processes' threads have spent runnable
// but waiting for a CPU (the second field of /proc/PID/task/TID/schedstat):
// on a shared machine, how much of a server's latency is other work's.
// Threads that ended are not counted, so read it over a window in which
// the server's threads stay (Go keeps its threads).
func runQueueWait(pids []int) float64 {
	var ns float64
	for _, pid := range pids {
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if err != nil {
			continue
		}
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/schedstat")
			if err != nil {
				continue
			}
			f := strings.Fields(string(b))
			if len(f) < 2 {
				continue
			}
			x, _ := strconv.ParseFloat(f[1], 64)
			ns += x
		}
	}
	return ns / 1e9
}
