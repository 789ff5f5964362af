//go:build !linux

package drills

import (
	"errors"
	"os"
	"syscall"
)

// The drills need Linux network namespaces; elsewhere the package builds and
// Available says why the drills skip.
var errNotLinux = errors.New("network namespaces need Linux")

func childAttr() *syscall.SysProcAttr { return nil }

func threadID() int { return 0 }

func setNetNS(*os.File) error { return errNotLinux }
