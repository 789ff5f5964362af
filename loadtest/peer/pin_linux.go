package peer

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// Pinning (Config.Pin): the servers under test (the relay, nginx-rtmp, the
// floor program) run on the last CPU, and what drives them — this
// process's swarm, the publisher, the primary — on the others, so that the
// relay's per-hop latency is its own and not its wait for a core it shares
// with a thousand players. A diagnostic, not the comparison: on two CPUs
// the swarm alone on one falls behind nginx-rtmp at 1,000 viewers.

type pinning struct {
	servers, load unix.CPUSet
}

func newPinning() (*pinning, error) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		return nil, fmt.Errorf("pin: %w", err)
	}
	var cpus []int
	for i := range 1024 {
		if all.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) < 2 {
		return nil, fmt.Errorf("pin: needs two CPUs or more, this process may use %d", len(cpus))
	}
	p := &pinning{}
	p.servers.Set(cpus[len(cpus)-1])
	for _, c := range cpus[:len(cpus)-1] {
		p.load.Set(c)
	}
	return p, nil
}

// describe says which CPUs each side has.
func (p *pinning) describe() string {
	return fmt.Sprintf("servers under test on CPU %s; the swarm, the publisher and the primary on CPU %s", cpuList(&p.servers), cpuList(&p.load))
}

func cpuList(s *unix.CPUSet) string {
	out := ""
	for i := range 1024 {
		if s.IsSet(i) {
			if out != "" {
				out += ","
			}
			out += strconv.Itoa(i)
		}
	}
	return out
}

// pinSelf moves every thread of this process to the load CPUs (a thread
// inherits its affinity from the thread that starts it).
func (p *pinning) pinSelf() error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("pin: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &p.load); err != nil && err != unix.ESRCH {
			return fmt.Errorf("pin thread %d: %w", tid, err)
		}
	}
	return nil
}

// start starts cmd on the servers' CPU when server is set, on the load
// CPUs otherwise (p nil: where it may). The child inherits the affinity of
// the thread that forks it, so that thread takes the child's for the fork.
func (p *pinning) start(cmd *exec.Cmd, server bool) error {
	if p == nil {
		return cmd.Start()
	}
	set := &p.load
	if server {
		set = &p.servers
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.SchedSetaffinity(0, set); err != nil {
		return fmt.Errorf("pin: %w", err)
	}
	err := cmd.Start()
	if rerr := unix.SchedSetaffinity(0, &p.load); rerr != nil && err == nil {
		err = fmt.Errorf("pin: %w", rerr)
	}
	return err
}
