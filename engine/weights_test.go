package engine

import (
	"context"
	"errors"
	"math"
	"testing"

	"gorstar/internal/testmodel"
	"gorstar/model"
)

// Weights updated through WithModel between two batches (an optimizer step, then a direct write of
// the parameters) are what the next batch samples from: its tokens and log-probabilities equal a
// fresh engine's on the updated model, and differ from the batch before the update.
func TestWithModelUpdatesWeightsBetweenBatches(t *testing.T) {
	m, _ := testmodel.Model(t)
	opts := Options{MaxSeqs: 4, StepTokens: 32}
	var reqs []Request
	for i := range 3 {
		reqs = append(reqs, Request{Prompt: prompt(4+3*i, int32(i)), MaxTokens: 12,
			Sampling: Sampling{Temperature: 1, Seed: seed(uint64(10 + i))}})
	}
	e, err := New(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	before := run(t, e, reqs)
	err = e.WithModel(ctxT(t), func(m *model.Model) error {
		opt := m.NewOptimizer(model.AdamWConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
		defer opt.Close()
		m.ZeroGrads()
		ids := prompt(24, 5)
		if _, err := m.ForwardBackward(&model.Batch{B: 1, L: len(ids), IDs: ids}); err != nil {
			return err
		}
		if _, err := opt.Update(0.05); err != nil {
			return err
		}
		// A direct write, as a weight sync does: only WithModel tells the decoders.
		host := make([]float32, m.Params.Size)
		m.Params.All.CopyTo(host)
		for i := range host {
			host[i] *= 1.25
		}
		m.Params.All.CopyFrom(host)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	after := run(t, e, reqs)
	e.Close()
	want := run(t, newEngine(t, m, opts), reqs)

	var changed bool
	for i := range reqs {
		if len(after[i].Tokens) != len(want[i].Tokens) {
			t.Fatalf("request %d: %d tokens after the update, %d from a fresh engine", i, len(after[i].Tokens), len(want[i].Tokens))
		}
		for j := range want[i].Tokens {
			if after[i].Tokens[j] != want[i].Tokens[j] ||
				math.Abs(float64(after[i].LogProbs[j]-want[i].LogProbs[j])) > 1e-5 {
				t.Fatalf("request %d token %d: (%d, %g) after the update, (%d, %g) from a fresh engine", i, j,
					after[i].Tokens[j], after[i].LogProbs[j], want[i].Tokens[j], want[i].LogProbs[j])
			}
		}
		changed = changed || before[i].LogProbs[0] != after[i].LogProbs[0]
	}
	if !changed {
		t.Error("the update changed no log-probability: the weights did not move")
	}
}

// f's error comes back, a panic in f becomes an error, and a closed engine refuses.
func TestWithModelErrors(t *testing.T) {
	m, _ := testmodel.Model(t)
	e, err := New(m, Options{MaxSeqs: 1})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := e.WithModel(context.Background(), func(*model.Model) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("f's error: got %v", err)
	}
	if err := e.WithModel(context.Background(), func(*model.Model) error { panic("oops") }); err == nil {
		t.Error("a panic in f: no error")
	}
	// The engine still generates after both.
	run(t, e, []Request{{Prompt: prompt(3, 1), MaxTokens: 2}})
	e.Close()
	if err := e.WithModel(context.Background(), func(*model.Model) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("closed engine: got %v", err)
	}
}
