package rl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"gorstar/internal/atomicfile"
)

// StepMetrics is one line of OUT/metrics.jsonl: what one RL step did. Before/after refer to RoC's
// down-sampling; lengths and failed-call shares of the kept rollouts show what RoC trains on.
type StepMetrics struct {
	Step  int     `json:"step"` // RL steps done in the whole run
	Stage string  `json:"stage"`
	LR    float64 `json:"lr"`

	RewardMean              float64 `json:"reward_mean"` // over every rollout of the step
	AccuracyBefore          float64 `json:"accuracy_before_roc"`
	AccuracyAfter           float64 `json:"accuracy_after_roc"`
	FailedToolSharePositive float64 `json:"failed_tool_share_positive"` // all rollouts
	FailedToolShareNegative float64 `json:"failed_tool_share_negative"`
	KeptFailedSharePositive float64 `json:"kept_failed_tool_share_positive"` // after RoC
	MeanTokensPositive      float64 `json:"mean_response_tokens_positive"`
	MeanTokensNegative      float64 `json:"mean_response_tokens_negative"`
	TruncationRate          float64 `json:"truncation_rate"`
	TurnsPerRollout         float64 `json:"turns_per_rollout"`
	CallsPerRollout         float64 `json:"tool_calls_per_rollout"`

	Loss         float64 `json:"loss"`
	ClipFraction float64 `json:"clip_fraction"`
	ApproxKL     float64 `json:"approx_kl"`
	// Entropy estimates the policy's per-token entropy as the mean −log p of the sampled tokens
	// (an unbiased estimate when rollouts sample at temperature 1).
	Entropy       float64 `json:"entropy"`
	GradNorm      float64 `json:"grad_norm"`
	TrainedTokens int     `json:"trained_tokens"`
	// LogprobDeltaMax and Mean compare the rollout's log-probabilities with the trainer's
	// recomputed ones over every generated token (the mismatch guard).
	LogprobDeltaMax  float64 `json:"logprob_delta_max"`
	LogprobDeltaMean float64 `json:"logprob_delta_mean"`

	RolloutSeconds   float64 `json:"rollout_s"`
	ToolSeconds      float64 `json:"tool_s"` // summed over calls (they overlap generation)
	UpdateSeconds    float64 `json:"update_s"`
	ToolWaitFraction float64 `json:"tool_wait_fraction"`

	InfraRerolls   int `json:"infra_rerolls"`   // rollouts rolled again for the sandbox's failures
	RejectedGroups int `json:"rejected_groups"` // dropped by RoC (release) or all-equal rewards
	SkippedUpdates int `json:"skipped_updates"` // non-finite loss or gradient

	// Held-out accuracy (average pass@1) when measured at this step.
	EvalAccuracy                *float64 `json:"eval_accuracy,omitempty"`
	EvalFailedToolSharePositive *float64 `json:"eval_failed_tool_share_positive,omitempty"`
}

// metricsLog appends one JSON object a line to OUT/metrics.jsonl, each line written through so a
// killed run keeps every step it finished.
type metricsLog struct{ f *os.File }

// openMetrics starts OUT/metrics.jsonl at step `from`: lines of later steps (written after the
// checkpoint a resume starts from) are dropped, so every step appears once.
func openMetrics(out string, from int) (*metricsLog, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", out, err)
	}
	path := filepath.Join(out, "metrics.jsonl")
	kept, err := metricsUpTo(path, from)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteBytes(path, kept); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &metricsLog{f}, nil
}

// metricsUpTo returns the lines of path whose step is at most step; a fresh run (from < 0) keeps
// none.
func metricsUpTo(path string, step int) ([]byte, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) || step < 0 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var kept bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct{ Step int }
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Step > step {
			continue // a line cut by a kill, or a step redone after the resume
		}
		kept.Write(sc.Bytes())
		kept.WriteByte('\n')
	}
	return kept.Bytes(), nil
}

func (l *metricsLog) write(rec any) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", l.f.Name(), err)
	}
	return nil
}

func (l *metricsLog) Close() error { return l.f.Close() }
