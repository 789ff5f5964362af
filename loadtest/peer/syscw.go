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

// schedStat is what the scheduler says of the processes' threads so far
// (/proc/PID/task/TID/schedstat): wait, the time (s) they spent runnable
// but waiting for a CPU (on a shared machine, how much of a server's
// latency is other work's); slices, how many times they were put on a CPU
// (at low load, their wake-ups: the fixed cost a Go server pays per timer,
// poll and channel hand-off, which an event loop in C pays far less
// often). Threads that ended are not counted, so read it over a window in
// which the server's threads stay (Go keeps its threads).
func schedStat(pids []int) (wait, slices float64) {
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
			if len(f) < 3 {
				continue
			}
			x, _ := strconv.ParseFloat(f[1], 64)
			ns += x
			n, _ := strconv.ParseFloat(f[2], 64)
			slices += n
		}
	}
	return ns / 1e9, slices
}
