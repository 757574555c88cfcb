package rl

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
	// TISCappedFraction is the share of trained tokens whose truncated importance weight hit
	// rl.tis_cap (remote rollouts; 0 natively, where TIS is off).
	TISCappedFraction float64 `json:"tis_capped_fraction"`

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
