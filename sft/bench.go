package sft

import (
	"context"
	"errors"
	"time"

	"gorstar/config"
	"gorstar/internal/schedule"
	"gorstar/model"
)

// BenchOptions set up BenchmarkThroughput.
type BenchOptions struct {
	TokensPerStep int // SFT steps of at least this many tokens (batch_tokens); the model bench runs TokensPerStep/SeqLen rows
	SeqLen        int // the model bench's row length; SFT micro-batches hold at most TokensPerStep tokens
	Steps         int // timed steps of each, after one warm-up step
	Seed          uint64
}

// ThroughputBench compares the SFT training step on real conversations with the model's own
// training benchmark (random tokens, full rows, every token weighted) at the same tokens per step.
type ThroughputBench struct {
	TokensPerStep   int     `json:"tokens_per_step"`
	Steps           int     `json:"steps"`
	SFTTokensPerS   float64 `json:"sft_tokens_per_s"`   // conversation tokens (pads excluded) per second
	TrainTokensPerS float64 `json:"train_tokens_per_s"` // model.BenchmarkTrain
	Ratio           float64 `json:"ratio"`              // SFT / model bench (target ≥ 0.85)
	PadFraction     float64 `json:"pad_fraction"`       // share of the SFT passes' token slots that were padding
}

// BenchmarkThroughput times Steps SFT steps (micro-batching, weights, AdamW: the path Run takes)
// over ex, then model.BenchmarkTrain on the same model at TokensPerStep/SeqLen × SeqLen. It
// changes the model's weights.
func BenchmarkThroughput(ctx context.Context, m *model.Model, ex []Example, o BenchOptions) (ThroughputBench, error) {
	if o.SeqLen < 2 || o.TokensPerStep < o.SeqLen || o.Steps < 1 || len(ex) == 0 {
		return ThroughputBench{}, errors.New("sft bench: want SeqLen ≥ 2, TokensPerStep ≥ SeqLen, Steps ≥ 1 and examples")
	}
	c := config.DefaultSFT()
	c.BatchTokens, c.MicroBatchTokens, c.LR = o.TokensPerStep, o.TokensPerStep, 1e-4
	t := &trainer{o: Options{Config: c}, ex: ex, kind: schedule.Constant, m: m, opt: m.NewOptimizer(model.DefaultAdamW()), prof: newProfiler(1)}
	defer t.opt.Close()
	for len(t.plan) < o.Steps+1 {
		t.plan = append(t.plan, makePlan(ex, 1, 1, o.TokensPerStep, o.Seed+uint64(len(t.plan)))...)
	}
	t.base, t.end = len(t.plan), len(t.plan)
	res := ThroughputBench{TokensPerStep: o.TokensPerStep, Steps: o.Steps}
	if _, err := t.trainStep(0); err != nil { // allocates the buffers
		return res, err
	}
	start := time.Now()
	tokens, padded := 0, t.prof.p.PaddedTokens[0]
	for s := 1; s <= o.Steps; s++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		ss, err := t.trainStep(s)
		if err != nil {
			return res, err
		}
		tokens += ss.tokens
	}
	res.SFTTokensPerS = float64(tokens) / time.Since(start).Seconds()
	// the timed steps' computed tokens, as their passes counted them (the profile)
	res.PadFraction = 1 - float64(tokens)/float64(t.prof.p.PaddedTokens[0]-padded)
	tb, err := model.BenchmarkTrain(ctx, m, o.TokensPerStep/o.SeqLen, o.SeqLen, o.Steps, o.Seed)
	if err != nil {
		return res, err
	}
	res.TrainTokensPerS = tb.TokensPerSecond
	res.Ratio = res.SFTTokensPerS / res.TrainTokensPerS
	return res, nil
}
