package drills

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is one process of the mesh, run in its host's namespace, its output
// appended to a log file. It can be killed and started again.
type Proc struct {
	Name string
	Host *Host
	Path string
	Args []string
	Env  []string // added to the environment
	Log  string   // log file

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts the process (again).
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("%s already running", p.Name)
		}
	}
	lf, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(lf, "=== %s start %s %s\n", time.Now().Format(time.RFC3339Nano), p.Path, strings.Join(p.Args, " "))
	cmd := p.Host.NS.Command(p.Path, p.Args...)
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(lf, "=== %s exit %v\n", time.Now().Format(time.RFC3339Nano), err)
		lf.Close()
		close(done)
	}()
	return nil
}

// Running reports whether the process is alive.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Signal sends sig and waits up to wait for the exit; false if it lives on.
func (p *Proc) Signal(sig syscall.Signal, wait time.Duration) bool {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return true
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return false
	}
	select {
	case <-done:
		return true
	case <-time.After(wait):
		return false
	}
}

// Kill is kill -9 and wait.
func (p *Proc) Kill() { p.Signal(syscall.SIGKILL, 10*time.Second) }

// Stop asks the process to stop (SIGTERM), killing it after wait.
func (p *Proc) Stop(wait time.Duration) {
	if !p.Signal(syscall.SIGTERM, wait) {
		p.Kill()
	}
}
