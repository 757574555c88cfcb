package rl

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorstar/internal/testenv"
	"gorstar/pytool"
	"gorstar/rollout"
)

// refusing is a sandbox in an outage: every call fails at once with an ordinary error status, as
// a refused fork does, which a policy writing broken code would also produce.
type refusing struct{ pytool.Runner }

func (refusing) Run(context.Context, pytool.Call) pytool.Result {
	return pytool.Result{Status: pytool.StatusError, Stderr: "BlockingIOError: [Errno 11] Resource temporarily unavailable", ExitCode: 1}
}

// The canary tells a broken sandbox from a policy whose code fails: a real pool answers
// print(6 * 7); the same pool refusing every call does not. It is consulted only when at least
// 90% of at least 8 calls failed.
func TestCanaryTellsTheSandboxFromThePolicy(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	e := pytool.DefaultOptions()
	e.Workers, e.Modules, e.Timeout = 1, []string{"math"}, 5*time.Second
	pool, err := pytool.NewPool(context.Background(), e)
	if errors.Is(err, pytool.ErrNoSandbox) {
		testenv.Sandbox(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if res, ok := canary(context.Background(), pool); !ok {
		t.Fatalf("canary on a working pool: %+v", res)
	}
	if res, ok := canary(context.Background(), refusing{pool}); ok {
		t.Fatalf("canary on a refusing pool passed: %+v", res)
	}
	step := func(calls, failed int) []rollout.Trajectory {
		trajs := make([]rollout.Trajectory, calls)
		for i := range trajs {
			trajs[i].ToolCalls = 1
			if i < failed {
				trajs[i].FailedToolCalls = 1
			}
		}
		return trajs
	}
	for _, c := range []struct {
		calls, failed int
		want          bool
	}{{8, 8, true}, {10, 9, true}, {10, 8, false}, {7, 7, false}, {64, 64, true}, {64, 0, false}} {
		if got := mostCallsFailed(step(c.calls, c.failed)); got != c.want {
			t.Errorf("%d of %d calls failed: mostCallsFailed %v, want %v", c.failed, c.calls, got, c.want)
		}
	}
}
