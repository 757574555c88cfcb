package rl_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/config"
	"gorstar/internal/rundir"
	"gorstar/internal/testenv"
	"gorstar/model"
	"gorstar/rl"
	"gorstar/rollout"
)

// A short two-stage run on a policy that sometimes answers right: every step logs its metrics,
// the rollout and trainer log-probabilities agree (the mismatch guard: same kernels, and the mask
// aligned with the right positions), the weights change, and the final model loads.
func TestRunLogsStepsAndAgreesWithTheEngine(t *testing.T) {
	testenv.Short(t, "a whole RL run")
	pol := policyDir(t)
	o := testOptions(pol, problemsFile(t, 20, 0), filepath.Join(t.TempDir(), "out"))
	o.EvalData = problemsFile(t, 4, 100)
	o.RL.EvalEvery = 2
	o.RL.HardOnlySamples, o.RL.HardOnlyPool = 2, 6
	o.RL.Stages = append(o.RL.Stages, config.Stage{Name: "hard", Steps: 1, MaxResponseTokens: 32, MaxTurns: 2, HardOnly: true})
	var handed []string // "stage:step:rollouts" per StepTrajectories call
	o.StepTrajectories = func(stage string, step int, trajs []rollout.Trajectory) error {
		handed = append(handed, fmt.Sprintf("%s:%d:%d", stage, step, len(trajs)))
		return nil
	}
	res, err := rl.Run(context.Background(), o)
	skipWithoutSandbox(t, err)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	per := o.RL.PromptsPerStep * o.RL.Oversample * o.RL.GroupSize
	var want []string
	for _, st := range o.RL.Stages {
		for range st.Steps {
			want = append(want, fmt.Sprintf("%s:%d:%d", st.Name, len(want)+1, per))
		}
	}
	if strings.Join(handed, " ") != strings.Join(want, " ") {
		t.Errorf("StepTrajectories got %v, want %v (every step's rollouts before RoC)", handed, want)
	}
	if res.Steps != 6 || len(res.Stages) != 3 || res.Stages[0].Steps != 3 || res.Stages[1].Steps != 2 || res.Stages[2].Steps != 1 {
		t.Errorf("result %+v, want 6 steps in stages of 3, 2 and 1", res)
	}
	if p := res.Stages[2].Problems; p < 1 || p > 6 {
		t.Errorf("hard_only stage trained on %d problems, want 1 to 6 (not solved 2/2 times of the 6 examined)", p)
	}
	recs, err := rundir.ReadMetrics(filepath.Join(o.Out, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 7 {
		t.Fatalf("%d metrics lines, want 7 (held-out accuracy before RL, then 6 steps)", len(recs))
	}
	trained, evals := 0.0, 0
	for i, r := range recs {
		if r["step"] != float64(i) {
			t.Errorf("line %d: step %v", i, r["step"])
		}
		if _, ok := r["eval_accuracy"]; ok {
			evals++
		}
		if i == 0 {
			continue
		}
		trained += r["trained_tokens"].(float64)
		if d := r["logprob_delta_max"].(float64); d > 1e-3 {
			t.Errorf("step %d: rollout and trainer logprobs differ by %g", i, d)
		}
	}
	if evals != 4 || trained == 0 {
		t.Errorf("%d held-out evaluations (want steps 0, 2, 4, 6), %g tokens trained", evals, trained)
	}
	before, _ := os.ReadFile(filepath.Join(pol, "model.safetensors"))
	after, _ := os.ReadFile(filepath.Join(o.Out, "model.safetensors"))
	if len(after) == 0 || bytes.Equal(before, after) {
		t.Errorf("final weights missing or unchanged")
	}
	if _, err := model.Load(o.Out); err != nil {
		t.Errorf("final model: %v", err)
	}
}

// A run killed with SIGKILL between checkpoints and resumed ends with the same weights, bit for
// bit, and the same metrics as a run never interrupted: the data order, the RNG of RoC and of
// the mini-batches, the stage's set-up and the rollouts' seeds all come back.
func TestResumeAfterSIGKILLIsBitExact(t *testing.T) {
	testenv.Short(t, "SIGKILLs a child process")
	pol := policyDir(t)
	o := testOptions(pol, problemsFile(t, 20, 0), "")
	o.RL.Stages[0].Steps, o.RL.Stages[1].Steps = 2, 3 // checkpoints after steps 2 and 5
	o.Out = filepath.Join(t.TempDir(), "ref")
	want, err := rl.Run(context.Background(), o)
	skipWithoutSandbox(t, err)
	if err != nil {
		t.Fatal(err)
	}
	spec := childSpec{Options: o, KillAt: 4} // after checkpoint 2: steps 3 and 4 are redone
	spec.Options.Out = filepath.Join(t.TempDir(), "killed")
	runKilled(t, spec)
	resumed := spec.Options
	resumed.Resume = true
	got, err := rl.Run(context.Background(), resumed)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(o.Out, "model.safetensors"))
	b, _ := os.ReadFile(filepath.Join(resumed.Out, "model.safetensors"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("resumed weights differ from the uninterrupted run's (%d vs %d bytes)", len(b), len(a))
	}
	if got.Steps != want.Steps || got.RewardMean != want.RewardMean || got.FailedToolSharePositive != want.FailedToolSharePositive {
		t.Errorf("resumed result %+v, want %+v", got, want)
	}
	ra, _ := rundir.ReadMetrics(filepath.Join(o.Out, "metrics.jsonl"))
	rb, _ := rundir.ReadMetrics(filepath.Join(resumed.Out, "metrics.jsonl"))
	if len(ra) != len(rb) {
		t.Fatalf("%d metrics lines after resume, want %d", len(rb), len(ra))
	}
	redone := 0.0
	for i := range ra {
		if i == 2 || i == 3 {
			redone += ra[i]["trained_tokens"].(float64)
		}
		for _, k := range []string{"reward_mean", "loss", "grad_norm", "accuracy_after_roc", "trained_tokens"} {
			if ra[i][k] != rb[i][k] {
				t.Errorf("step %d %s: %v after resume, want %v", i+1, k, rb[i][k], ra[i][k])
			}
		}
	}
	if redone == 0 {
		t.Errorf("steps 3 and 4 trained nothing: the test would not see a difference")
	}
	t.Logf("tokens trained in the redone steps: %g", redone)
}
