package rl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"testing"

	"gorstar/dist"
	"gorstar/internal/childtest"
	"gorstar/internal/mpitest"
	"gorstar/internal/rundir"
	"gorstar/internal/testmodel"
	"gorstar/rl"
)

// rankEnv carries a childSpec to the test binary started as the ranks of a data-parallel run.
const rankEnv = "GORSTAR_RL_RANK"

// TestRankRL is one rank's side of TestDataParallelRL; alone it does nothing. Rank 0 SIGKILLs
// itself after step KillAt.
func TestRankRL(t *testing.T) {
	if os.Getenv(rankEnv) == "" {
		return
	}
	var spec childSpec
	if err := childtest.Decode(rankEnv, &spec); err != nil {
		t.Fatal(err)
	}
	w, err := dist.Join()
	if err != nil {
		t.Fatal(err)
	}
	o := spec.Options
	o.World = w
	o.Progress = func(p rl.Progress) {
		if p.Step == spec.KillAt {
			childtest.KillSelf()
		}
	}
	if _, err := rl.Run(context.Background(), o); err != nil {
		t.Fatalf("rank %d: %v", w.Rank, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// rlRanks runs spec in n ranks of 1 thread under mpirun (n = 1: one plain process).
func rlRanks(t *testing.T, n int, spec childSpec) ([]byte, error) {
	t.Helper()
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{rankEnv + "=" + string(js), "GORSTAR_THREADS=1"}
	cmd := mpitest.Self(t, n, "TestRankRL", env...)
	if n == 1 {
		cmd = osexec.Command(os.Args[0], "-test.run=^TestRankRL$")
		cmd.Env = append(os.Environ(), env...)
	}
	return cmd.CombinedOutput()
}

// An RL run in 2 ranks (prompt groups rolled out by rank, gradients all-reduced) rolls out the
// trajectories one process does (the per-step rewards, accuracies and trained tokens are equal)
// and ends with its weights up to the order of the sums; run again it gives the same bits; and
// its checkpoint (rank 0 SIGKILLed after step 4) resumes in 1 process to the same result.
func TestDataParallelRL(t *testing.T) {
	mpitest.Command(t, 2) // skips without mpirun
	if testing.Short() {
		t.Skip("-short: five multi-process RL runs")
	}
	pol := policyDir(t)
	o := testOptions(pol, problemsFile(t, 20, 0), "")
	o.RL.Stages[0].Steps, o.RL.Stages[1].Steps = 2, 3 // checkpoints after steps 2 and 5
	dir := t.TempDir()
	run := func(name string, n int, resume bool, killAt int) ([]byte, error) {
		spec := childSpec{Options: o, KillAt: killAt}
		spec.Options.Out, spec.Options.Resume = filepath.Join(dir, name), resume
		return rlRanks(t, n, spec)
	}
	for _, r := range []struct {
		name string
		n    int
	}{{"one", 1}, {"two", 2}, {"again", 2}} {
		if out, err := run(r.name, r.n, false, 0); err != nil {
			if bytes.Contains(out, []byte("sandbox")) {
				t.Skipf("%s", out)
			}
			t.Fatalf("%s in %d ranks: %v\n%s", r.name, r.n, err, out)
		}
	}
	init := testmodel.Weights(t, pol)
	one, two := testmodel.Weights(t, filepath.Join(dir, "one")), testmodel.Weights(t, filepath.Join(dir, "two"))
	const tolerance = 1e-3
	d := testmodel.UpdateDistance(one, two, init)
	t.Logf("2 ranks vs 1 process: %.2g apart relative to the update", d)
	if !(d < tolerance) {
		t.Errorf("2 ranks vs 1 process: weights %.2g apart relative to the update, want < %g", d, tolerance)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "two", "model.safetensors"))
	b, _ := os.ReadFile(filepath.Join(dir, "again", "model.safetensors"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("2 ranks run twice: the weights differ")
	}
	m1, _ := rundir.ReadMetrics(filepath.Join(dir, "one", "metrics.jsonl"))
	m2, _ := rundir.ReadMetrics(filepath.Join(dir, "two", "metrics.jsonl"))
	if len(m1) != len(m2) || len(m1) == 0 {
		t.Fatalf("%d metrics lines in 2 ranks, %d in one process", len(m2), len(m1))
	}
	trained := 0.0
	for i := range m1 {
		for _, k := range []string{"reward_mean", "accuracy_before_roc", "accuracy_after_roc", "trained_tokens", "eval_accuracy"} {
			if fmt.Sprint(m1[i][k]) != fmt.Sprint(m2[i][k]) {
				t.Errorf("metrics line %d %s: %v in 2 ranks, %v in one process", i+1, k, m2[i][k], m1[i][k])
			}
		}
		if v, ok := m1[i]["trained_tokens"].(float64); ok {
			trained += v
		}
	}
	if trained == 0 {
		t.Fatal("no step trained: the comparison of weights would not see a difference")
	}

	if out, err := run("killed", 2, false, 4); err == nil {
		t.Fatalf("the job with rank 0 SIGKILLed at step 4 succeeded:\n%s", out)
	}
	if out, err := run("killed", 1, true, 0); err != nil {
		t.Fatalf("resume in 1 process: %v\n%s", err, out)
	}
	if d := testmodel.UpdateDistance(one, testmodel.Weights(t, filepath.Join(dir, "killed")), init); !(d < tolerance) {
		t.Errorf("checkpoint of 2 ranks resumed in 1: %.2g from the one-process run, want < %g", d, tolerance)
	}
}
