//go:build !linux

package peer

import (
	"errors"
	"os/exec"
)

type pinning struct{}

func newPinning() (*pinning, error) { return nil, errors.New("pin: only on Linux") }

func (p *pinning) describe() string { return "" }

func (p *pinning) pinSelf() error { return nil }

func (p *pinning) start(cmd *exec.Cmd, server bool) error { return cmd.Start() }
