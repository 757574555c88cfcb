package metrics

// PassRate is how often a policy solved one problem: Correct of Samples samples.
type PassRate struct {
	ID       string  `json:"id"`
	Samples  int     `json:"samples"`
	Correct  int     `json:"correct"`
	PassRate float64 `json:"pass_rate"`
}

// AtMost reports whether the problem's share of correct samples is at most maxRate — the rule
// that keeps a problem in a pass-rate filter. The comparison is Correct ≤ maxRate·Samples with a
// hair of tolerance, so a threshold written to a few digits (0.875 for 7/8, 0.6667 for 2/3)
// keeps the count it names.
func (p PassRate) AtMost(maxRate float64) bool {
	return float64(p.Correct) <= maxRate*float64(p.Samples)+1e-9
}

// NotAlwaysSolved is the largest pass rate short of solving every one of k samples, (k−1)/k:
// rStar2's stage 3 keeps the problems its policy did not solve 8 times out of 8, i.e. pass rate
// at most 0.875.
func NotAlwaysSolved(k int) float64 {
	return float64(k-1) / float64(k)
}

// PassRates counts each problem's correct samples, k samples per problem: ids are the problems',
// and grade tells of each sample (in any order) the index of its problem in ids and whether it
// counts as correct (strict grading for a filter, the reward for RL).
func PassRates[S any](ids []string, k int, samples []S, grade func(S) (problem int, correct bool)) []PassRate {
	out := make([]PassRate, len(ids))
	for i, id := range ids {
		out[i] = PassRate{ID: id, Samples: k}
	}
	for _, s := range samples {
		if i, ok := grade(s); ok {
			out[i].Correct++
		}
	}
	for i := range out {
		out[i].PassRate = float64(out[i].Correct) / float64(k)
	}
	return out
}
