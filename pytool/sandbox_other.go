//go:build !linux

package pytool

import (
	"errors"
	"os/exec"
	"syscall"
)

var errNoNamespaces = errors.New("Linux namespaces exist only on Linux")

// probeNamespaces: gorstar's own namespace sandbox is Linux's; elsewhere it never starts.
func (s *sandbox) probeNamespaces([]string) error { return errNoNamespaces }

func (s *sandbox) nsCommand([]string, string, []string, []string) (*exec.Cmd, error) {
	return nil, errNoNamespaces
}

// zygoteProcAttr: a session of its own, as on Linux (worker.go). No parent-death signal outside
// Linux: a zygote whose gorstar died ends when its stdin closes (the supervisor reads EOF).
func zygoteProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
