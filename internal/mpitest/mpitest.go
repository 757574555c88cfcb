// Package mpitest starts a test binary as the ranks of an MPI job, for the multi-rank tests of
// package dist and of the stages that run data-parallel. A machine without mpirun skips them with
// one line.
package mpitest

import (
	"os"
	osexec "os/exec"
	"strconv"
	"testing"
)

// Command returns `mpirun -np n args...` with the flags a test machine needs (more ranks than
// cores, root in a container), or skips t when mpirun is not on PATH.
func Command(t testing.TB, n int, args ...string) *osexec.Cmd {
	t.Helper()
	mpirun, err := osexec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not found: the multi-rank tests need Open MPI (Debian: openmpi-bin libopenmpi-dev) or MPICH")
	}
	flags := []string{"-np", strconv.Itoa(n), "--oversubscribe"}
	if os.Geteuid() == 0 {
		flags = append(flags, "--allow-run-as-root")
	}
	return osexec.Command(mpirun, append(flags, args...)...)
}

// Self returns Command running this test binary's test name (an anchored -test.run pattern) in
// every rank, with env added to each rank's environment.
func Self(t testing.TB, n int, test string, env ...string) *osexec.Cmd {
	t.Helper()
	args := []string{}
	for _, e := range env {
		args = append(args, "-x", e)
	}
	cmd := Command(t, n, append(args, os.Args[0], "-test.run=^"+test+"$", "-test.count=1")...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}
