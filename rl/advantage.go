package rl

import "math"

// AdvantageEpsilon keeps the division finite when a group's rewards are nearly equal.
const AdvantageEpsilon = 1e-6

// GroupAdvantages returns each kept rollout's advantage (r − mean) / (std + AdvantageEpsilon) over
// the rewards of one group. std is the sample standard deviation (divided by n − 1), as the
// release's verl computes it with torch.std; for 0/1 rewards it is slightly larger than the
// population one, so advantages are a little smaller. A group of one rollout has no baseline and
// gets advantage 0 (verl instead uses mean 0 and std 1 there, i.e. the raw reward); a group whose
// rewards are all equal gets zeros.
func GroupAdvantages(rewards []float64) []float64 {
	adv := make([]float64, len(rewards))
	if len(rewards) < 2 {
		return adv
	}
	mean, std := meanAndSampleStd(rewards)
	for i, r := range rewards {
		adv[i] = (r - mean) / (std + AdvantageEpsilon)
	}
	return adv
}

// meanAndSampleStd needs at least two values.
func meanAndSampleStd(xs []float64) (mean, std float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}
