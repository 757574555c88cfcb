package sft

import (
	"gorstar/config"
	"gorstar/dist"
	"gorstar/model"
)

// Options are one SFT run.
type Options struct {
	Model    string // Hugging Face directory to start from (and whose tokenizer renders the data)
	Data     string // conversations table, .parquet or .jsonl
	EvalData string // held-out conversations; empty: hold out Config.EvalFraction of Data
	Out      string // final model (a Hugging Face directory), checkpoints/ and metrics.jsonl
	// Resume continues from the newest complete checkpoint in Out/checkpoints; without it, Out
	// must not hold checkpoints already.
	Resume bool
	Config config.SFT
	// Precision is the arithmetic of the model's linear layers (config model.dtype; "" = fp32).
	Precision model.Precision
	// Recompute and LossChunkTokens set the trained model's Recompute and LossChunkTokens (config
	// model.recompute_layers, model.loss_chunk_tokens).
	Recompute, LossChunkTokens int
	// MemoryGiB is the memory a training step may take (config model.memory_gib; 0: nine tenths
	// of what the machine has available, negative: no check). A step estimated larger is refused
	// before the model loads, with what would fit (model.Config.CheckFit).
	MemoryGiB float64
	// Template is the chat template, a built-in name or a file ("" = rstar2). Pass the one
	// rollouts use (config rollout.template), so the model learns the layout it will be sampled in.
	Template string
	Seed     uint64
	// Progress, when set, is called after every optimizer step (the CLI draws its bar from it).
	Progress func(Progress)
	// Logf, when set, receives one-line notes: the overlong policy's counts, checkpoints written.
	Logf func(format string, args ...any)
	// World is the data-parallel job this process is a rank of (package dist); nil trains alone.
	// Every rank runs Run with the same options; rank 0 alone writes Out and reports.
	World *dist.World
}

// Progress is the state after one optimizer step.
type Progress struct {
	Step, Steps int // steps done, of the whole run
	Epoch       int // 0-based epoch of the step
	Loss        float64
	EvalLoss    float64 // the last held-out loss, 0 before the first
	LR          float64
	GradNorm    float64
	TokensPerS  float64 // over the whole run so far
	Tokens      int64
}

// Result is the summary of a finished run (the JSON of `gorstar sft --json`).
type Result struct {
	Steps      int     `json:"steps"`
	TrainLoss  float64 `json:"train_loss"` // mean over the last (up to) 10 steps
	EvalLoss   float64 `json:"eval_loss"`  // on the held-out set at the end; 0 without one
	Tokens     int64   `json:"tokens"`     // real (non-pad) tokens trained on, all epochs
	TokensPerS float64 `json:"tokens_per_s"`
	Dropped    int     `json:"dropped"`
	Truncated  int     `json:"truncated"`
	// Profile is where this process's steps' time went (rank 0's in a data-parallel run).
	Profile *Profile `json:"profile,omitempty"`
}

func (o Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}
