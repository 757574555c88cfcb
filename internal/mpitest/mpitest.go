// Package mpitest starts a test binary as the ranks of an MPI job, for the multi-rank tests of
// package dist and of the stages that run data-parallel. A machine without mpirun skips them with
// one line.
//
// GORSTAR_TEST_MPIRUN names another launcher than the mpirun on PATH, e.g. mpirun.mpich on a
// machine with both Open MPI and MPICH installed. Open MPI's mpirun and MPICH's Hydra take
// different flags; the launcher's --version tells which it is.
package mpitest

import (
	"bytes"
	"os"
	osexec "os/exec"
	"strconv"
	"sync"
	"testing"
)

var (
	hydraOnce sync.Once
	hydra     bool
)

// launcher is the mpirun to use and whether it is MPICH's Hydra.
func launcher(t testing.TB) (string, bool) {
	t.Helper()
	name := "mpirun"
	if env := os.Getenv("GORSTAR_TEST_MPIRUN"); env != "" {
		name = env
	}
	path, err := osexec.LookPath(name)
	if err != nil {
		t.Skip(name + " not found: the multi-rank tests need Open MPI (Debian: openmpi-bin libopenmpi-dev) or MPICH")
	}
	hydraOnce.Do(func() {
		out, _ := osexec.Command(path, "--version").CombinedOutput()
		hydra = bytes.Contains(out, []byte("HYDRA"))
	})
	return path, hydra
}

// Command returns `mpirun -np n args...` with the flags a test machine needs (more ranks than
// cores, root in a container), or skips t when mpirun is not on PATH.
func Command(t testing.TB, n int, args ...string) *osexec.Cmd {
	t.Helper()
	mpirun, isHydra := launcher(t)
	flags := []string{"-np", strconv.Itoa(n)}
	if !isHydra {
		flags = append(flags, "--oversubscribe")
		if os.Geteuid() == 0 {
			flags = append(flags, "--allow-run-as-root")
		}
	}
	return osexec.Command(mpirun, append(flags, args...)...)
}

// Self returns Command running this test binary's test name (an anchored -test.run pattern) in
// every rank, with env added to each rank's environment.
func Self(t testing.TB, n int, test string, env ...string) *osexec.Cmd {
	t.Helper()
	_, isHydra := launcher(t)
	args := []string{}
	for _, e := range env {
		if isHydra { // Hydra passes the launcher's whole environment, which cmd.Env sets
			continue
		}
		args = append(args, "-x", e)
	}
	cmd := Command(t, n, append(args, os.Args[0], "-test.run=^"+test+"$", "-test.count=1")...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}
