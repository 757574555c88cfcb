package rl

// SampleStats describes a set of rollouts, e.g. a step's before and after RoC, for the metrics
// that show what RoC does: with it, the share of failed tool calls among positives keeps falling.
type SampleStats struct {
	N        int     `json:"n"`
	Accuracy float64 `json:"accuracy"` // share of positives
	// FailedCallSharePositive is failed calls / calls over the positives; ...Negative over the
	// negatives. 0 where there are no calls.
	FailedCallSharePositive float64 `json:"failed_tool_share_positive"`
	FailedCallShareNegative float64 `json:"failed_tool_share_negative"`
	MeanTokensPositive      float64 `json:"mean_response_tokens_positive"` // 0 without positives
	MeanTokensNegative      float64 `json:"mean_response_tokens_negative"` // 0 without negatives
	CallsPerRollout         float64 `json:"tool_calls_per_rollout"`
	TurnsPerRollout         float64 `json:"turns_per_rollout"`
	TruncationRate          float64 `json:"truncation_rate"`
}

// Stats summarizes samples; the zero value describes none.
func Stats(samples []Sample) SampleStats {
	var side [2]struct{ n, calls, failed, tokens int } // [0] negatives, [1] positives
	var turns, truncated int
	for _, s := range samples {
		i := 0
		if s.Positive() {
			i = 1
		}
		side[i].n++
		side[i].calls += s.ToolCalls
		side[i].failed += s.FailedCalls
		side[i].tokens += s.ResponseTokens
		turns += s.Turns
		if s.Truncated {
			truncated++
		}
	}
	n := len(samples)
	return SampleStats{
		N:                       n,
		Accuracy:                ratio(side[1].n, n),
		FailedCallSharePositive: ratio(side[1].failed, side[1].calls),
		FailedCallShareNegative: ratio(side[0].failed, side[0].calls),
		MeanTokensPositive:      ratio(side[1].tokens, side[1].n),
		MeanTokensNegative:      ratio(side[0].tokens, side[0].n),
		CallsPerRollout:         ratio(side[0].calls+side[1].calls, n),
		TurnsPerRollout:         ratio(turns, n),
		TruncationRate:          ratio(truncated, n),
	}
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
