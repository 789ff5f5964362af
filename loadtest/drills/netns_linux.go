package drills

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// childAttr: a child is killed when the drill process dies, in a process
// group of its own.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

func threadID() int { return unix.Gettid() }

// setNetNS moves the calling OS thread into the network namespace of f.
func setNetNS(f *os.File) error { return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET) }

var errNotLinux = errors.New("network namespaces need Linux")
