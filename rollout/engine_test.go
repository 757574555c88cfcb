package rollout

import (
	"math"
	"slices"
	"testing"
	"time"

	"gorstar/data"
	"gorstar/engine"
	"gorstar/pytool"
	"gorstar/tokenizer"
)

func newTestEngine(t testing.TB, tok *tokenizer.Tokenizer, maxSeqs int) *engine.Engine {
	t.Helper()
	e, err := engine.New(tinyModel(t, tok), engine.Options{MaxSeqs: maxSeqs, KVTokens: maxSeqs * 4096, Tokenizer: tok, StepTokens: 1024})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// rollWithScript runs the bench's scripted policy (turn lengths and calls decided by the script,
// decoding, pausing and tools real) on the engine.
func rollWithScript(t *testing.T, eng *engine.Engine, tok *tokenizer.Tokenizer, tools pytool.Runner, o Options, b BenchOptions) []Trajectory {
	t.Helper()
	l, err := New(&EngineBackend{Engine: eng, WeightVersion: 3}, tools, tok, o)
	if err != nil {
		t.Fatal(err)
	}
	l.script = newBenchScript(b)
	ts, _, err := l.Run(ctxT(t), benchProblems(2))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestEngineRolloutsWithTools runs the real engine and the real sandbox end to end: turns pause
// where the script ends them, the calls run, their results are appended and decoding resumes;
// the overlapped and the naive schedule give the same trajectories, and so does a second run.
func TestEngineRolloutsWithTools(t *testing.T) {
	tok := byteTokenizer(t)
	pool := testPool(t, 4)
	eng := newTestEngine(t, tok, 8)
	o := DefaultOptions()
	o.Samples, o.Concurrency, o.Seed, o.MaxResponseTokens = 3, 4, 11, 1500
	b := BenchOptions{Rollouts: 6, Groups: 3, Concurrency: 4, MaxTurns: 3, MinTurnTokens: 5, MaxTurnTokens: 20, Seed: 11}
	over := rollWithScript(t, eng, tok, pool, o, b)
	script := newBenchScript(b)
	for _, tr := range over {
		turnTokens, turns := script.plan(tr.ProblemIndex, tr.Sample)
		// A random model may write the <answer> token by chance: the last turn ends as answer then.
		if (tr.Finish != FinishNoCall && tr.Finish != FinishAnswer) || tr.NumTurns != turns || tr.ToolCalls != turns-1 || tr.FailedToolCalls+tr.InternalToolErrors != 0 {
			t.Fatalf("problem %d sample %d: finish %s (%s), %d turns, %d calls (%d failed); want no_call or answer, %d turns, %d calls",
				tr.ProblemIndex, tr.Sample, tr.Finish, tr.Error, tr.NumTurns, tr.ToolCalls, tr.FailedToolCalls, turns, turns-1)
		}
		for i, rec := range tr.Turns {
			if rec.Tokens != turnTokens || (i < turns-1 && (rec.Status != "ok" || rec.ToolText != "1")) {
				t.Errorf("turn %d: %+v; want %d tokens and a call printing 1", i, rec, turnTokens)
			}
		}
		generated := 0
		for i, m := range tr.LossMask {
			if m {
				generated++
				if lp := tr.LogProbs[i]; lp > 0 || math.IsNaN(float64(lp)) {
					t.Fatalf("logprob %g of a generated token", lp)
				}
			}
		}
		if generated != tr.GeneratedTokens || generated != turns*turnTokens || tr.WeightVersion != 3 {
			t.Errorf("%d generated tokens in the mask, %d counted, want %d; weight version %d", generated, tr.GeneratedTokens, turns*turnTokens, tr.WeightVersion)
		}
	}
	if slices.Equal(over[0].ResponseIDs, over[1].ResponseIDs) {
		t.Error("two samples of a group generated the same tokens: their seeds are not distinct")
	}
	o.Overlap = false
	naive := rollWithScript(t, eng, tok, pool, o, b)
	o.Overlap = true
	again := rollWithScript(t, eng, tok, pool, o, b)
	sameTrajectories(t, "naive vs overlapped", naive, over)
	sameTrajectories(t, "second overlapped run", again, over)
}

// sameTrajectories compares tokens exactly and logprobs within the kernels' batch-size noise
// (engine README: ~3e-6).
func sameTrajectories(t *testing.T, what string, a, b []Trajectory) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d vs %d trajectories", what, len(a), len(b))
	}
	for i := range a {
		if !slices.Equal(a[i].ResponseIDs, b[i].ResponseIDs) || !slices.Equal(a[i].LossMask, b[i].LossMask) ||
			a[i].Finish != b[i].Finish || a[i].Seed != b[i].Seed {
			t.Fatalf("%s: trajectory %d differs:\n%q\n%q", what, i, a[i].Text, b[i].Text)
		}
		for k := range a[i].LogProbs {
			if d := math.Abs(float64(a[i].LogProbs[k] - b[i].LogProbs[k])); d > 1e-4 {
				t.Fatalf("%s: trajectory %d logprob %d differs by %g", what, i, k, d)
			}
		}
	}
}

// TestSameSeedSameTrajectories: the random model left to itself (no script, no tools needed as it
// writes no call) gives the same trajectories for the same seed and others for another seed.
func TestSameSeedSameTrajectories(t *testing.T) {
	tok := byteTokenizer(t)
	eng := newTestEngine(t, tok, 8)
	problems := []data.Problem{{ID: "a", Problem: "1+1?", Answer: "2"}, {ID: "b", Problem: "2+2?", Answer: "4"}}
	roll := func(seed uint64) []Trajectory {
		o := DefaultOptions()
		o.Samples, o.Seed, o.MaxResponseTokens, o.Concurrency = 3, seed, 40, 8
		l, err := New(&EngineBackend{Engine: eng}, nil, tok, o)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		ts, sum, err := l.Run(ctxT(t), problems)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Trajectories != 6 || sum.Errors != 0 {
			t.Fatalf("summary %+v after %v", sum, time.Since(start))
		}
		return ts
	}
	first := roll(5)
	sameTrajectories(t, "same seed", roll(5), first)
	other := roll(6)
	differ := 0
	for i := range other {
		if !slices.Equal(other[i].ResponseIDs, first[i].ResponseIDs) {
			differ++
		}
	}
	if differ == 0 {
		t.Error("another base seed gave the same trajectories")
	}
}
