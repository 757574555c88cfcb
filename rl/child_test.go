package rl_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"gorstar/internal/childtest"
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
	if err := childtest.Decode(childEnv, &spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	o := spec.Options
	o.Progress = func(p rl.Progress) {
		if p.Step == spec.KillAt {
			childtest.KillSelf()
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
	if err := childtest.RunKilled(childEnv, spec); err != nil {
		t.Fatalf("kill at step %d: %v", spec.KillAt, err)
	}
}
