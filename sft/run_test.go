package sft

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/internal/rundir"
	"gorstar/internal/testenv"
	"gorstar/model"
)

func TestLossGoesDown(t *testing.T) {
	o := Options{Model: tinyModelDir(t, 1), Data: synthConversations(t, 40, 11, "c.parquet"),
		Out: filepath.Join(t.TempDir(), "out"), Template: "chatml", Config: testConfig(), Seed: 1}
	o.Config.Epochs, o.Config.SaveEvery, o.Config.BatchSize = 2, 0, 3
	var first float64
	o.Progress = func(p Progress) {
		if p.Step == 1 {
			first = p.Loss
		}
	}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v (first step loss %.3f)", res, first)
	if res.Steps != 2*12 || res.Tokens == 0 || res.Dropped != 0 || res.Truncated != 0 {
		t.Errorf("result %+v, want 24 steps of 3 conversations", res)
	}
	if !(res.TrainLoss < 0.6*first) || !(res.EvalLoss < 0.6*first) {
		t.Errorf("loss %.3f → train %.3f, held-out %.3f: want both below 0.6 of the first step's", first, res.TrainLoss, res.EvalLoss)
	}
	recs, err := rundir.ReadMetrics(filepath.Join(o.Out, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var evals []float64
	for i, r := range recs {
		if r["step"] != float64(i+1) || r["lr"] == nil || r["grad_norm"] == nil || r["tokens_per_s"] == nil {
			t.Fatalf("metrics line %d: %v", i+1, r)
		}
		if v, ok := r["eval_loss"].(float64); ok {
			evals = append(evals, v)
		}
	}
	if len(recs) != res.Steps || len(evals) != 24/3 || !(evals[len(evals)-1] < evals[0]) {
		t.Errorf("%d metrics lines, held-out losses %v", len(recs), evals)
	}
	if _, err := model.Load(o.Out); err != nil {
		t.Errorf("final model: %v", err)
	}
	checkProfile(t, res)
}

// checkProfile: a one-process run's profile counts every step and token, computes at least the
// real tokens, and its phases add up to the steps' wall time.
func checkProfile(t *testing.T, res Result) {
	t.Helper()
	p := res.Profile
	if p == nil || p.Steps != res.Steps || len(p.ComputeS) != 1 || p.Tokens[0] != res.Tokens ||
		p.PaddedTokens[0] < res.Tokens || !(p.ComputeS[0] > 0) || p.AllReduceS != 0 || p.WaitS != 0 || p.GOMAXPROCS < 1 {
		t.Fatalf("profile %+v of %+v", p, res)
	}
	sum := p.ComputeS[0] + p.WaitS + p.AllReduceS + p.StatsS + p.OptimizerS + p.OtherS
	if math.Abs(sum-p.StepS) > 1e-6*p.StepS+1e-6 {
		t.Errorf("phases add up to %g s, the steps took %g s", sum, p.StepS)
	}
}

// A run killed with SIGKILL and resumed, twice (once between checkpoints, once right after one),
// ends with the same weights, bit for bit, and the same metrics as a run never interrupted.
func TestResumeAfterSIGKILLIsBitExact(t *testing.T) {
	testenv.Short(t, "SIGKILLs a child process")
	spec := childSpec{Model: tinyModelDir(t, 2), Data: synthConversations(t, 34, 5, "c.jsonl"), Template: "chatml",
		Config: testConfig(), Seed: 4}
	spec.Config.Epochs = 1 // 31 training conversations: 8 steps
	ref := spec.options()
	ref.Out = filepath.Join(t.TempDir(), "ref")
	want, err := Run(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	spec.Out = filepath.Join(t.TempDir(), "killed")
	spec.KillAt = 3 // after checkpoint 2: step 3 is redone
	runKilled(t, spec)
	spec.Resume, spec.KillAt = true, 6 // right after checkpoint 6
	runKilled(t, spec)
	o := spec.options()
	got, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	got.TokensPerS, want.TokensPerS = 0, 0
	got.Profile, want.Profile = nil, nil // timings; the resumed run profiles only its own steps
	if got != want {
		t.Errorf("resumed result %+v, want %+v", got, want)
	}
	for _, name := range []string{"model.safetensors", "config.json"} {
		a, _ := os.ReadFile(filepath.Join(ref.Out, name))
		b, err := os.ReadFile(filepath.Join(o.Out, name))
		if err != nil || len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs from the uninterrupted run's (%v)", name, err)
		}
	}
	if a, b := lossesOf(t, ref.Out), lossesOf(t, o.Out); a != b {
		t.Errorf("metrics differ:\n%s\nwant\n%s", b, a)
	}
}

// lossesOf returns metrics.jsonl without the timing fields.
func lossesOf(t *testing.T, out string) string {
	recs, err := rundir.ReadMetrics(filepath.Join(out, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range recs {
		delete(r, "tokens_per_s")
		b.WriteString(strings.TrimSpace(fmtRecord(r)) + "\n")
	}
	return b.String()
}

func fmtRecord(r map[string]any) string {
	js, _ := json.Marshal(r)
	return string(js)
}

// sft.until_eval_loss: a run that reaches the held-out loss by the end of its epochs trains exactly
// them; one that does not goes on, checking the loss at each decision point, and stops at the first
// one at or below it (or after extra_epochs); a run SIGKILLed in the added steps, or right after
// the step that ended it, resumes to the same weights and metrics.
func TestUntilEvalLoss(t *testing.T) {
	testenv.Short(t, "trains until a held-out loss")
	modelDir, data := tinyModelDir(t, 2), synthConversations(t, 34, 5, "c.jsonl")
	spec := childSpec{Model: modelDir, Data: data, Template: "chatml", Config: testConfig(), Seed: 4}
	spec.Config.Epochs, spec.Config.ExtraEpochs, spec.Config.EvalEvery = 1, 2, 0 // 8 steps planned, 16 more at most
	run := func(target float64, name string) (Result, []map[string]any) {
		t.Helper()
		o := spec.options()
		o.Config.UntilEvalLoss, o.Out = target, filepath.Join(t.TempDir(), name)
		res, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := rundir.ReadMetrics(filepath.Join(o.Out, "metrics.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		return res, recs
	}
	if res, _ := run(100, "reached"); res.Steps != 8 {
		t.Errorf("held-out loss below the target after the epoch: %d steps, want the 8 planned", res.Steps)
	}
	res, all := run(1e-9, "never")
	if res.Steps != 24 || len(all) != 24 {
		t.Fatalf("target never reached: %d steps (%d metrics lines), want 8 + 2 epochs of 8", res.Steps, len(all))
	}
	// Decision points from step 8 on (every step here: a tenth of 8 planned steps rounds to 1).
	var losses []float64
	for _, r := range all[7:] {
		v, ok := r["eval_loss"].(float64)
		if !ok {
			t.Fatalf("step %v: no held-out loss at a decision point", r["step"])
		}
		losses = append(losses, v)
	}
	target := losses[5] // reached at step 13 at the latest
	stop := 8
	for losses[stop-8] > target {
		stop++
	}
	if stop == 8 {
		t.Fatalf("held-out losses %v: the test needs one above the target after the planned steps", losses)
	}
	spec.Config.UntilEvalLoss = target
	res, recs := run(target, "stops")
	if res.Steps != stop || len(recs) != stop {
		t.Fatalf("target %g (losses %v): %d steps, want %d", target, losses, res.Steps, stop)
	}
	for i, r := range recs {
		if r["loss"] != all[i]["loss"] || r["lr"] != all[i]["lr"] {
			t.Fatalf("step %d: %v, want the run without a target's %v", i+1, r, all[i])
		}
	}
	ref := filepath.Join(t.TempDir(), "stops-ref")
	o := spec.options()
	o.Out = ref
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for _, kill := range []int{stop - 1, stop} { // in the added steps; right after the last one's checkpoint
		spec.Out, spec.Resume, spec.KillAt = filepath.Join(t.TempDir(), fmt.Sprint("killed", kill)), false, kill
		runKilled(t, spec)
		o := spec.options()
		o.Resume = true
		got, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if got.Steps != stop {
			t.Errorf("killed after step %d: resumed run ended at %d steps, want %d", kill, got.Steps, stop)
		}
		a, _ := os.ReadFile(filepath.Join(ref, "model.safetensors"))
		b, err := os.ReadFile(filepath.Join(o.Out, "model.safetensors"))
		if err != nil || len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("killed after step %d: final weights differ from the uninterrupted run's (%v)", kill, err)
		}
		if a, b := lossesOf(t, ref), lossesOf(t, o.Out); a != b {
			t.Errorf("killed after step %d: metrics differ:\n%s\nwant\n%s", kill, b, a)
		}
	}
}
