package sft

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"testing"

	"gorstar/dist"
	"gorstar/internal/childtest"
	"gorstar/internal/mpitest"
	"gorstar/internal/testmodel"
	"gorstar/kernels"
)

// rankEnv carries a childSpec to the test binary started as the ranks of a data-parallel run.
const rankEnv = "GORSTAR_SFT_RANK"

// runRank is TestMain's branch in a rank: join the launcher's world, 1 kernel thread, train, and
// (KillAt) SIGKILL rank 0 once that step is done.
func runRank() int {
	var spec childSpec
	if err := childtest.Decode(rankEnv, &spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	w, err := dist.Join()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := kernels.Init(0, 1); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	o := spec.options()
	o.World = w
	o.Progress = func(p Progress) {
		if p.Step == spec.KillAt {
			childtest.KillSelf()
		}
	}
	res, err := Run(context.Background(), o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: %v\n", w.Rank, err)
		return 2
	}
	if spec.Profile != "" && w.Root() {
		js, _ := json.Marshal(res.Profile)
		if err := os.WriteFile(spec.Profile, js, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	if err := w.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// runRanks trains spec in n ranks under mpirun (n = 1: one plain process), with extra in the
// ranks' environment, and returns the error the job ended with, and its output.
func runRanks(t *testing.T, n int, spec childSpec, extra ...string) ([]byte, error) {
	t.Helper()
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	env := rankEnv + "=" + string(js)
	var cmd *osexec.Cmd
	if n == 1 {
		cmd = osexec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(append(os.Environ(), env), extra...)
	} else {
		cmd = mpitest.Self(t, n, "^$", append([]string{env}, extra...)...)
	}
	return cmd.CombinedOutput()
}

func mustRanks(t *testing.T, n int, spec childSpec, extra ...string) {
	t.Helper()
	if out, err := runRanks(t, n, spec, extra...); err != nil {
		t.Fatalf("%d ranks: %v\n%s", n, err, out)
	}
}

// A data-parallel SFT run in 2 ranks ends where the one-process run ends, up to the order of the
// floating-point sums; gives the same bits when run again; and a checkpoint taken at 2 ranks
// (rank 0 SIGKILLed after it) resumes at 1 rank to the same result, and at 2 ranks to the same
// bits as the run never interrupted. The all-reduce overlapped with the backward pass gives the
// same bits as the one after it.
func TestDataParallelSFT(t *testing.T) {
	mpitest.Command(t, 2) // skips without mpirun
	if testing.Short() {
		t.Skip("-short: six multi-process runs")
	}
	spec := childSpec{Model: tinyModelDir(t, 3), Data: synthConversations(t, 26, 7, "c.parquet"), Template: "chatml",
		Config: testConfig(), Seed: 5}
	spec.Config.Epochs, spec.Config.BatchSize = 1, 5 // 23 training conversations: 5 steps, the last of 3
	dir := t.TempDir()
	run := func(name string, n int, extra ...string) []float32 {
		s := spec
		s.Out = filepath.Join(dir, name)
		s.Profile = s.Out + ".profile.json"
		mustRanks(t, n, s, extra...)
		return testmodel.Weights(t, s.Out)
	}
	init := testmodel.Weights(t, spec.Model)
	one := run("one", 1)
	two := run("two", 2)
	checkRanksProfile(t, filepath.Join(dir, "two.profile.json"), false)
	again := run("again", 2)
	const tolerance = 1e-4 // measured: 1.5e-6 (tiny, 5 steps)
	if d := testmodel.UpdateDistance(one, two, init); !(d < tolerance) {
		t.Errorf("2 ranks vs 1 process: weights %.2g apart relative to the update, want < %g", d, tolerance)
	} else {
		t.Logf("2 ranks vs 1 process: %.2g apart relative to the update", d)
	}
	if d := testmodel.UpdateDistance(two, again, init); d != 0 {
		t.Errorf("2 ranks run twice: weights %.2g apart, want the same bits", d)
	}
	if d := testmodel.UpdateDistance(two, run("overlap", 2, dist.OverlapEnv+"=1"), init); d != 0 {
		t.Errorf("2 ranks, all-reduce overlapped with the backward: weights %.2g from the plain run, want the same bits", d)
	}
	checkRanksProfile(t, filepath.Join(dir, "overlap.profile.json"), true)

	killed := spec
	killed.Out, killed.KillAt = filepath.Join(dir, "killed"), 3 // checkpoints at 2 and 4: step 3 is redone
	if out, err := runRanks(t, 2, killed); err == nil {
		t.Fatalf("the job with rank 0 SIGKILLed at step 3 succeeded:\n%s", out)
	}
	copyDir := filepath.Join(dir, "killed-copy")
	if err := os.CopyFS(copyDir, os.DirFS(killed.Out)); err != nil {
		t.Fatal(err)
	}
	resumed := killed
	resumed.Resume, resumed.KillAt = true, 0
	mustRanks(t, 1, resumed)
	if d := testmodel.UpdateDistance(one, testmodel.Weights(t, resumed.Out), init); !(d < tolerance) {
		t.Errorf("checkpoint of 2 ranks resumed in 1: %.2g from the one-process run, want < %g", d, tolerance)
	}
	resumed.Out = copyDir
	mustRanks(t, 2, resumed)
	if d := testmodel.UpdateDistance(two, testmodel.Weights(t, copyDir), init); d != 0 {
		t.Errorf("checkpoint of 2 ranks resumed in 2: %.2g from the uninterrupted run, want the same bits", d)
	}
}

// checkRanksProfile: rank 0's profile of a 2-rank run has both ranks' compute and tokens, a
// gradient all-reduce of every step, a wait at the barrier before it unless the all-reduce was
// overlapped, and phases that add up to the steps' wall time.
func checkRanksProfile(t *testing.T, path string, overlap bool) {
	t.Helper()
	js, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p Profile
	if err := json.Unmarshal(js, &p); err != nil {
		t.Fatal(err)
	}
	if p.Steps == 0 || len(p.ComputeS) != 2 || !(p.ComputeS[0] > 0 && p.ComputeS[1] > 0) || p.Tokens[1] == 0 ||
		!(p.AllReduceS > 0) || p.AllReduceBytes == 0 || (p.WaitS > 0) == overlap {
		t.Errorf("profile of 2 ranks (overlapped all-reduce %v): %+v", overlap, p)
	}
	sum := p.ComputeS[0] + p.WaitS + p.AllReduceS + p.StatsS + p.OptimizerS + p.OtherS
	if math.Abs(sum-p.StepS) > 1e-6*p.StepS+1e-6 {
		t.Errorf("phases add up to %g s, the steps took %g s", sum, p.StepS)
	}
}

// With GORSTAR_BENCH_ROTATE_PASSES rank r of a world runs its passes rotated by r; without it, and
// in a world of one, as planned.
func TestOrderPasses(t *testing.T) {
	passes := []row{{0, 1}, {2}, {3}}
	order := func(rank, size int) []int {
		tr := &trainer{o: Options{World: &dist.World{Place: dist.Place{Rank: rank, Size: size}}}}
		var firsts []int
		for _, p := range tr.orderPasses(passes) {
			firsts = append(firsts, p[0])
		}
		return firsts
	}
	defer func(b bool) { benchRotate = b }(benchRotate)
	benchRotate = false
	if got := order(1, 2); !slices.Equal(got, []int{0, 2, 3}) {
		t.Errorf("rank 1 of 2, not rotating: passes %v, want as planned", got)
	}
	benchRotate = true
	for _, tc := range []struct {
		rank, size int
		want       []int
	}{{0, 2, []int{0, 2, 3}}, {1, 2, []int{3, 0, 2}}, {2, 3, []int{2, 3, 0}}, {0, 1, []int{0, 2, 3}}} {
		if got := order(tc.rank, tc.size); !slices.Equal(got, tc.want) {
			t.Errorf("rank %d of %d: passes %v, want %v", tc.rank, tc.size, got, tc.want)
		}
	}
}
