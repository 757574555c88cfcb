package sft

import (
	"context"
	"fmt"
	"os"
	"testing"

	"gorstar/config"
	"gorstar/internal/childtest"
)

// childEnv carries a childSpec to a copy of the test binary that trains and SIGKILLs itself.
const childEnv = "GORSTAR_SFT_CHILD"

// childSpec is a run for the child process, which kills itself with SIGKILL once step KillAt is
// done (its metrics line and any checkpoint of that step written): an interruption at a moment
// the test chooses, by a real signal, so that nothing of the process survives but its files.
type childSpec struct {
	Model, Data, Out, Template string
	Config                     config.SFT
	Seed                       uint64
	Resume                     bool
	KillAt                     int
	Profile                    string // rank 0 of a data-parallel run writes its Profile here (JSON)
}

func (c childSpec) options() Options {
	return Options{Model: c.Model, Data: c.Data, Out: c.Out, Template: c.Template, Config: c.Config, Seed: c.Seed, Resume: c.Resume}
}

// runChild is TestMain's branch in the child process.
func runChild() int {
	var spec childSpec
	if err := childtest.Decode(childEnv, &spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	o := spec.options()
	o.Progress = func(p Progress) {
		if p.Step == spec.KillAt {
			childtest.KillSelf()
		}
	}
	if _, err := Run(context.Background(), o); err != nil {
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
