package eval

import (
	"bytes"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"testing"

	"gorstar/dist"
	"gorstar/eval/metrics"
	"gorstar/internal/checkpoint"
	"gorstar/internal/mpitest"
	"gorstar/internal/testmodel"
)

// rankEnv carries the options of TestRankEval's run (JSON) to the ranks.
const rankEnv = "GORSTAR_EVAL_RANK"

// An evaluation in 2 and 3 ranks (problems sharded, rank 0 merging) writes the same results file,
// table and manifest, byte for byte, as one process, and the same pass rates (data filter); so
// does a run in 2 ranks resumed from rank 0's checkpoint.
func TestShardedEvalSameResults(t *testing.T) {
	mpitest.Command(t, 2) // skips without mpirun
	dir := t.TempDir()
	model := testmodel.TinyDir(t)
	data := writeProblems(t, dir, 7)
	run := func(n int, out string) {
		t.Helper()
		js, err := json.Marshal([]string{model, data, filepath.Join(dir, out)})
		if err != nil {
			t.Fatal(err)
		}
		env := rankEnv + "=" + string(js)
		cmd := mpitest.Self(t, n, "TestRankEval", env)
		if n == 1 {
			cmd = osexec.Command(os.Args[0], "-test.run=^TestRankEval$")
			cmd.Env = append(os.Environ(), env)
		}
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%d ranks: %v\n%s", n, err, b)
		}
	}
	run(1, "one.parquet")
	run(2, "two.parquet")
	run(3, "three.parquet")
	for _, name := range []string{"two", "three"} {
		for _, ext := range []string{".parquet", ".md", ".manifest.json", ".parquet.rates.json"} {
			want, err1 := os.ReadFile(filepath.Join(dir, "one"+ext))
			got, err2 := os.ReadFile(filepath.Join(dir, name+ext))
			if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
				t.Errorf("%s%s differs from one process's (%v, %v)", name, ext, err1, err2)
			}
		}
	}

	// Resumed in 2 ranks from rank 0's checkpoint of an interrupted run (5 of 21 samples).
	recs, err := ReadResults(filepath.Join(dir, "one.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	_, manPath, _ := Paths(filepath.Join(dir, "one.parquet"))
	_, _, partial := Paths(filepath.Join(dir, "resumed.parquet"))
	man, err := readManifest(manPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeManifest(checkpoint.PartialManifest(partial), man); err != nil {
		t.Fatal(err)
	}
	var lines []byte
	for _, i := range []int{9, 0, 4, 1, 20} {
		b, _ := json.Marshal(recs[i])
		lines = append(append(lines, b...), '\n')
	}
	if err := os.WriteFile(partial, lines, 0o644); err != nil {
		t.Fatal(err)
	}
	run(2, "resumed.parquet")
	want, _ := os.ReadFile(filepath.Join(dir, "one.parquet"))
	if got, err := os.ReadFile(filepath.Join(dir, "resumed.parquet")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("resumed in 2 ranks: results differ from one process's (%v)", err)
	}
	if _, err := os.Stat(partial); !os.IsNotExist(err) {
		t.Errorf("checkpoint %s left behind: %v", partial, err)
	}
}

// TestRankEval is one rank's side of TestShardedEvalSameResults; alone it does nothing.
func TestRankEval(t *testing.T) {
	js := os.Getenv(rankEnv)
	if js == "" {
		return
	}
	var paths []string // model, data, out
	if err := json.Unmarshal([]byte(js), &paths); err != nil {
		t.Fatal(err)
	}
	o := testOptions(t, paths[0], paths[1], paths[2])
	w, err := dist.Join()
	if err != nil {
		t.Fatal(err)
	}
	o.World = w
	if _, err := Run(ctxT(t), o); err != nil {
		t.Fatal(err)
	}
	// The pass rates of `data filter --max-pass-rate`, sampled by problem over the ranks.
	rater, err := NewRater(ctxT(t), o)
	if err != nil {
		t.Fatal(err)
	}
	defer rater.Close()
	problems, err := loadProblems(ctxT(t), o.Data, 0)
	if err != nil {
		t.Fatal(err)
	}
	rates, err := rater.Rate(ctxT(t), problems)
	if err != nil {
		t.Fatal(err)
	}
	if w.Root() {
		js, _ := json.Marshal(rates)
		if err := os.WriteFile(o.Out+".rates.json", js, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The counts of problem i, known to rank i mod size alone, reach every rank.
	counts := make([]metrics.PassRate, 5)
	for i := range counts {
		counts[i].Samples = 4
		if ours(w, i) {
			counts[i].Correct = i%4 + 1
			counts[i].PassRate = float64(i%4+1) / 4
		}
	}
	if err := sumCorrect(w, counts); err != nil {
		t.Fatal(err)
	}
	for i, c := range counts {
		if c.Correct != i%4+1 || c.PassRate != float64(i%4+1)/4 {
			t.Fatalf("rank %d: summed pass rate of problem %d: %+v", w.Rank, i, c)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
