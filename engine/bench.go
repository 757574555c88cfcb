package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"gorstar/model"
)

// BenchOptions describe a generation benchmark: Batch sequences of PromptLen random tokens, each
// generating exactly NewTokens tokens (no stop tokens), all submitted at once.
type BenchOptions struct {
	Batch, PromptLen, NewTokens int
	Temperature                 float64 // 0: greedy, as the PyTorch reference's default
	Seed                        uint64
	StepTokens                  int // engine Options.StepTokens (0: default)
}

// BenchResult is the throughput of one run. TokensPerSecond counts generated tokens over the
// whole run (prefill included), the way the PyTorch reference's generate-bench does.
type BenchResult struct {
	Seconds         float64 `json:"seconds"`
	TokensPerSecond float64 `json:"tokens_per_s"`
	Steps           int64   `json:"steps"`
}

// Bench runs the benchmark on a fresh engine sized for it, after one untimed warm-up run.
func Bench(ctx context.Context, m *model.Model, o BenchOptions) (BenchResult, error) {
	if o.Batch < 1 || o.PromptLen < 1 || o.NewTokens < 1 {
		return BenchResult{}, fmt.Errorf("generation bench: want batch, prompt length and new tokens ≥ 1, got %d, %d, %d",
			o.Batch, o.PromptLen, o.NewTokens)
	}
	per := o.PromptLen + o.NewTokens
	e, err := New(m, Options{KVTokens: o.Batch * per, MaxSeqs: o.Batch, StepTokens: o.StepTokens,
		MaxContext: per, Seed: o.Seed})
	if err != nil {
		return BenchResult{}, err
	}
	defer e.Close()
	rng := rand.New(rand.NewPCG(o.Seed, 3))
	reqs := make([]Request, o.Batch)
	for i := range reqs {
		p := make([]int32, o.PromptLen)
		for j := range p {
			p[j] = int32(rng.IntN(m.Config.VocabSize))
		}
		reqs[i] = Request{Prompt: p, MaxTokens: o.NewTokens, Sampling: Sampling{Temperature: o.Temperature}}
	}
	runOnce := func(reqs []Request) error {
		seqs, err := e.SubmitAll(ctx, reqs)
		if err != nil {
			return err
		}
		for _, s := range seqs {
			out, err := s.Wait(ctx)
			if err != nil {
				return err
			}
			if len(out.Tokens) != s.req.MaxTokens {
				return fmt.Errorf("generation bench: a sequence ended after %d of %d tokens (%s)", len(out.Tokens), s.req.MaxTokens, out.Finish)
			}
		}
		return nil
	}
	// The warm-up admits the whole batch (a few tokens each), as a serving engine has done before
	// its steady state: the caches it makes are pooled and the timed run reuses them.
	warm := make([]Request, o.Batch)
	for i := range warm {
		warm[i] = reqs[i]
		warm[i].MaxTokens = min(o.NewTokens, 4)
	}
	if err := runOnce(warm); err != nil {
		return BenchResult{}, err
	}
	steps0 := e.Stats().Steps
	start := time.Now()
	if err := runOnce(reqs); err != nil {
		return BenchResult{}, err
	}
	sec := time.Since(start).Seconds()
	return BenchResult{Seconds: sec, TokensPerSecond: float64(o.Batch*o.NewTokens) / sec, Steps: e.Stats().Steps - steps0}, nil
}
