package drills

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Lab owns the network namespaces of one drill run. Every name it makes
// starts with its prefix (which carries the owning process id), so parallel
// runs never collide and a later run can sweep what a killed run left.
type Lab struct {
	Prefix string

	mu  sync.Mutex
	nss []*NS
}

// NS is one network namespace of a lab.
type NS struct {
	Name string
}

// prefixRE matches the namespaces a lab makes: rmd<pid>x<random>-<node>.
var prefixRE = regexp.MustCompile(`^rmd([0-9]+)x[0-9a-f]+-`)

// Available says why network namespaces cannot be made here (nil: they can).
func Available() error {
	if runtime.GOOS != "linux" {
		return errNotLinux
	}
	if os.Geteuid() != 0 {
		return errors.New("not root: network namespaces need CAP_SYS_ADMIN")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("no ip command (install iproute2)")
	}
	name := fmt.Sprintf("rmd%dxprobe-probe", os.Getpid())
	if err := ipCmd("netns", "add", name); err != nil {
		return fmt.Errorf("ip netns add: %w", err)
	}
	_ = ipCmd("netns", "del", name)
	return nil
}

// NewLab sweeps the namespaces of drill runs whose process is gone and
// returns an empty lab with a fresh prefix.
func NewLab() (*Lab, error) {
	sweepStale()
	var b [3]byte
	if _, err := readRandom(b[:]); err != nil {
		return nil, err
	}
	return &Lab{Prefix: fmt.Sprintf("rmd%dx%x", os.Getpid(), b)}, nil
}

func readRandom(b []byte) (int, error) {
	f, err := os.Open("/dev/urandom")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.Read(b)
}

// sweepStale deletes namespaces left by drill runs whose process no longer
// exists (a run killed before its cleanup), and the processes in them.
func sweepStale() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		m := prefixRE.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if pid == os.Getpid() || processAlive(pid) {
			continue
		}
		(&NS{Name: name}).destroy()
	}
}

func processAlive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

// NS makes a namespace named prefix-short with its loopback up.
func (l *Lab) NS(short string) (*NS, error) {
	n := &NS{Name: l.Prefix + "-" + short}
	if err := ipCmd("netns", "add", n.Name); err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.nss = append(l.nss, n)
	l.mu.Unlock()
	if err := n.IP("link", "set", "lo", "up"); err != nil {
		return nil, err
	}
	return n, nil
}

// Close kills every process still running in the lab's namespaces and
// deletes them (their veths go with them).
func (l *Lab) Close() {
	l.mu.Lock()
	nss := l.nss
	l.nss = nil
	l.mu.Unlock()
	for i := len(nss) - 1; i >= 0; i-- {
		nss[i].destroy()
	}
}

func (n *NS) destroy() {
	for _, pid := range n.pids() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for i := 0; i < 20 && len(n.pids()) > 0; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	_ = ipCmd("netns", "del", n.Name)
}

// pids lists the processes whose network namespace is n.
func (n *NS) pids() []int {
	out, err := exec.Command("ip", "netns", "pids", n.Name).Output()
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if p, err := strconv.Atoi(f); err == nil && p != os.Getpid() {
			pids = append(pids, p)
		}
	}
	return pids
}

func ipCmd(args ...string) error {
	var stderr bytes.Buffer
	cmd := exec.Command("ip", args...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// IP runs `ip -n NAME args…`.
func (n *NS) IP(args ...string) error {
	return ipCmd(append([]string{"-n", n.Name}, args...)...)
}

// TC runs `ip netns exec NAME tc args…`.
func (n *NS) TC(args ...string) error {
	var stderr bytes.Buffer
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.Name, "tc"}, args...)...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("tc %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// Sysctl sets a net.* sysctl inside the namespace.
func (n *NS) Sysctl(key, value string) error {
	return n.Do(func() error {
		return os.WriteFile("/proc/sys/"+strings.ReplaceAll(key, ".", "/"), []byte(value), 0o644)
	})
}

// Command is name args… run inside the namespace (ip netns exec execs it, so
// the process id is the command's own). The process is killed if the drill
// process dies.
func (n *NS) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
	cmd.SysProcAttr = childAttr() // netns_linux.go
	return cmd
}

// Do runs f on an OS thread that is inside the namespace. Sockets made in f
// stay in the namespace after Do returns; use it to listen or dial there.
func (n *NS) Do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Left locked on failure: the thread then exits with the goroutine
		// instead of going back to the scheduler in the wrong namespace.
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", threadID()))
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		target, err := os.Open("/run/netns/" + n.Name)
		if err != nil {
			errc <- err
			return
		}
		defer target.Close()
		if err := setNetNS(target); err != nil {
			errc <- fmt.Errorf("setns %s: %w", n.Name, err)
			return
		}
		ferr := f()
		if err := setNetNS(orig); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("setns back: %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Listen listens on a TCP address inside the namespace.
func (n *NS) Listen(addr string) (net.Listener, error) {
	var ln net.Listener
	err := n.Do(func() (err error) {
		ln, err = net.Listen("tcp", addr)
		return err
	})
	return ln, err
}

// Dial connects to a TCP address from inside the namespace.
func (n *NS) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.Do(func() (err error) {
		var d net.Dialer
		c, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	return c, err
}

// HTTPClient is an HTTP client whose connections start in the namespace.
func (n *NS) HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext:       func(ctx context.Context, _, addr string) (net.Conn, error) { return n.Dial(ctx, addr) },
		DisableKeepAlives: true,
	}}
}

// Veth links namespace a (interface nameA) with b (nameB); both ends up.
func Veth(a *NS, nameA string, b *NS, nameB string) error {
	if err := ipCmd("link", "add", nameA, "netns", a.Name, "type", "veth", "peer", "name", nameB, "netns", b.Name); err != nil {
		return err
	}
	if err := a.IP("link", "set", nameA, "up"); err != nil {
		return err
	}
	return b.IP("link", "set", nameB, "up")
}

// NetemWorks says whether tc netem can be used here (sch_netem present),
// trying it on a scratch namespace of the lab.
func (l *Lab) NetemWorks() bool {
	n, err := l.NS("netemprobe")
	if err != nil {
		return false
	}
	defer func() {
		n.destroy()
		l.mu.Lock()
		for i, x := range l.nss {
			if x == n {
				l.nss = append(l.nss[:i], l.nss[i+1:]...)
				break
			}
		}
		l.mu.Unlock()
	}()
	return n.TC("qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms") == nil
}
