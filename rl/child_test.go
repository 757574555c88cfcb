package rl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"syscall"
	"testing"

	"gorstar/rl"
)

// childEnv carries a childSpec to a copy of the test binary that trains and SIGKILLs itself.
const childEnv = "GORSTAR_RL_CHILD"

// childSpec is a run for the child process, which kills itself with SIGKILL once step KillAt is
// done (its metrics line and any checkpoint of that step written): nothing of the process
// survives but its files.
type childSpec struct {
	Options rl.Options
	KillAt  int
}

// runChild is TestMain's branch in the child process.
func runChild() int {
	var spec childSpec
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	o := spec.Options
	o.Progress = func(p rl.Progress) {
		if p.Step == spec.KillAt {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	if _, err := rl.Run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 3 // finished: it should have been killed
}

// runKilled runs spec in a child process and checks that SIGKILL ended it.
func runKilled(t *testing.T, spec childSpec) {
	t.Helper()
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := osexec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(js))
	out, err := cmd.CombinedOutput()
	var exit *osexec.ExitError
	if !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child (kill at step %d) ended with %v, want SIGKILL\n%s", spec.KillAt, err, out)
	}
}
