package rl

import (
	"context"

	"gorstar/config"
	"gorstar/dist"
	"gorstar/model"
	"gorstar/rollout"
)

// Options are one RL run: the stage's sections of the configuration and its files.
type Options struct {
	Model    string // the SFT checkpoint (a Hugging Face directory) the policy starts from
	Data     string // training problems (Parquet or JSONL); a stage's own data overrides it
	EvalData string // held-out problems whose accuracy is measured along the run (optional)
	Out      string // final model, checkpoints/ and metrics.jsonl
	// Resume continues from the newest complete checkpoint in Out/checkpoints; without it, Out
	// must not hold checkpoints already.
	Resume bool

	RL      config.RL
	Rollout config.Rollout // template, tool text, sampling, endpoints; the stage sets turns and budget
	Reward  config.Reward
	Exec    config.Exec
	Eval    config.Eval // held-out accuracy: samples, temperature, turns, budget, limit
	Seed    uint64
	// Precision is the arithmetic of the policy's linear layers, trainer and rollout engine alike
	// (config model.dtype; "" = fp32).
	Precision model.Precision
	// Recompute and LossChunkTokens set the trained model's Recompute and LossChunkTokens (config
	// model.recompute_layers, model.loss_chunk_tokens).
	Recompute, LossChunkTokens int
	// MemoryGiB is the memory a training step may take (config model.memory_gib; 0: nine tenths
	// of what the machine has available, negative: no check). A step estimated larger is refused
	// before the model loads, with what would fit (model.Config.CheckFit).
	MemoryGiB float64
	// ServedModel is the model id the servers of Rollout.Endpoints list, sent with every request
	// (empty: each server's only model). The servers must serve Model's architecture: they load the
	// trainer's weights before the first step and after every update.
	ServedModel string

	// Progress, when set, is called after every RL step, once its metrics line and any checkpoint
	// of the step are written.
	Progress func(Progress) `json:"-"`
	// Logf, when set, receives one-line notes: skipped updates, rejected groups, re-rolls,
	// checkpoints.
	Logf func(format string, args ...any) `json:"-"`
	// StageEnd, when set, is called after the last step of each stage, once that stage's
	// checkpoint is written, with the stage's index and name and the checkpoint's directory (a
	// loadable Hugging Face model directory). The pipeline evaluates each stage's model from it; an
	// error stops the run, the checkpoint kept. A resumed run does not call it again for a stage
	// that ended before the resume.
	StageEnd func(ctx context.Context, stage int, name, modelDir string) error `json:"-"`
	// StepTrajectories, when set, receives each step's rollouts (before RoC) with the stage's
	// name and the step number, after the update; the pipeline keeps a few for its report. An
	// error stops the run.
	StepTrajectories func(stage string, step int, trajs []rollout.Trajectory) error `json:"-"`
	// World is the data-parallel job this process is a rank of (package dist; parallel.go); nil
	// trains alone. Every rank runs Run with the same options; rank 0 alone writes Out and reports.
	World *dist.World `json:"-"`
}

func (o Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// Progress is the state after one RL step.
type Progress struct {
	Stage       string
	Step, Steps int // steps done, of the whole run (all stages)
	Metrics     StepMetrics
}

// StageResult sums up one stage (its last step and its means).
type StageResult struct {
	Name                    string  `json:"name"`
	Steps                   int     `json:"steps"`
	Problems                int     `json:"problems"` // after the hard_only filter
	RewardMean              float64 `json:"reward_mean"`
	Accuracy                float64 `json:"accuracy"`
	FailedToolSharePositive float64 `json:"failed_tool_share_positive"`
	EvalAccuracy            float64 `json:"eval_accuracy,omitempty"`
}

// Result is the summary of a finished run (the JSON of `gorstar rl --json`): the last step's
// figures and one summary per stage.
type Result struct {
	Steps                   int           `json:"steps"`
	RewardMean              float64       `json:"reward_mean"`
	Accuracy                float64       `json:"accuracy"`
	FailedToolSharePositive float64       `json:"failed_tool_share_positive"`
	EvalAccuracy            float64       `json:"eval_accuracy,omitempty"`
	Seconds                 float64       `json:"seconds"`
	Stages                  []StageResult `json:"stages"`
}
