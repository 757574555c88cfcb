package rl

// Sample is what RoC down-sampling needs to know about one rollout of a group.
type Sample struct {
	// Reward is the graded reward: 1 when the final answer is right, else 0. A truncated rollout
	// must already score 0 here (the paper's rule); Downsample looks at Reward alone.
	Reward float64
	// ToolCalls counts the tool calls the model made, malformed ones (parse errors) included.
	ToolCalls int
	// FailedCalls counts the calls that failed because of the model's code: an exception, a
	// timeout, a memory or output limit, a parse error. Failures of the infrastructure (a lost
	// worker, an unreachable sandbox) are not the model's and must not be counted.
	FailedCalls int
	// AnswerTags counts complete <answer>…</answer> blocks in the model's own text.
	AnswerTags int
	// Turns counts assistant turns.
	Turns int
	// Truncated is true when the response budget ran out, and ResponseTokens counts the
	// response's tokens. Downsample ignores both; Stats reports them.
	Truncated      bool
	ResponseTokens int
}

// Positive reports whether the rollout counts as correct for RoC (reward > 0, as the release).
func (s Sample) Positive() bool { return s.Reward > 0 }

// Penalty is RoC's p = p_err + p_fmt, in [0, 2]; lower is a cleaner trajectory.
func (s Sample) Penalty() float64 { return s.ToolErrorPenalty() + s.FormatPenalty() }

// ToolErrorPenalty is p_err: 0.5 for a rollout that made no tool call (neither rewarded nor
// punished for not using the tool), else the share of its calls that failed.
func (s Sample) ToolErrorPenalty() float64 {
	if s.ToolCalls <= 0 {
		return 0.5
	}
	return clamp01(float64(s.FailedCalls) / float64(s.ToolCalls))
}

// FormatPenalty is p_fmt: 1 without an answer block (or without a turn to hold one), else
// min(1, (answer blocks − 1) / turns), so a single answer costs nothing and repeated answers cost
// more the fewer turns they were spread over.
func (s Sample) FormatPenalty() float64 {
	if s.AnswerTags <= 0 || s.Turns <= 0 {
		return 1
	}
	return clamp01(float64(s.AnswerTags-1) / float64(s.Turns))
}

func clamp01(x float64) float64 {
	return min(max(x, 0), 1)
}
