package rl

import "math/rand/v2"

// PenaltyFloor bounds the penalty from below when ModePaper weighs positives by 1/p. A flawless
// positive (every tool call succeeded, one answer block) has p = 0; flooring it here makes it the
// most likely pick — 1/PenaltyFloor = 100 against 1/0.05 = 20 for one failed call in twenty — while
// every weight stays finite, so a group of flawless positives is sampled uniformly.
const PenaltyFloor = 0.01

// downsamplePaper keeps keep rollouts of a group of n > keep:
//
//   - negatives: ⌊|neg|·keep/n⌋ of them, uniformly at random. With the paper's oversampling
//     (n = 2·keep) that is its ⌊|neg|/2⌋; the general form keeps the negatives' share of the group.
//   - positives: the remaining keep − ⌊|neg|·keep/n⌋ slots, drawn one after another without
//     replacement, each remaining positive with probability ∝ 1/max(p, PenaltyFloor).
//
// The positives always suffice: keep − ⌊|neg|·keep/n⌋ ≤ ⌈|pos|·keep/n⌉ ≤ |pos|. A group with no
// positive keeps keep negatives; one with no negative keeps keep positives. Should the positives
// ever fall short, the shortfall goes back to the negatives, so exactly keep are kept.
func downsamplePaper(group []Sample, keep int, rng *rand.Rand) []int {
	n := len(group)
	if n <= keep {
		return allIndices(n)
	}
	neg, pos := splitByReward(group)
	nNeg := len(neg) * keep / n
	nPos := min(keep-nNeg, len(pos))
	nNeg = keep - nPos
	kept := pickUniform(neg, nNeg, rng)
	return append(kept, pickByInversePenalty(group, pos, nPos, rng)...)
}

// pickUniform returns k of the candidates, each k-subset equally likely.
func pickUniform(candidates []int, k int, rng *rand.Rand) []int {
	picked := make([]int, 0, k)
	for _, j := range rng.Perm(len(candidates))[:k] {
		picked = append(picked, candidates[j])
	}
	return picked
}

// pickByInversePenalty draws k of the candidates without replacement, each draw choosing among
// those left with probability proportional to 1/max(penalty, PenaltyFloor).
func pickByInversePenalty(group []Sample, candidates []int, k int, rng *rand.Rand) []int {
	left := append([]int(nil), candidates...)
	weights := make([]float64, len(left))
	for i, c := range left {
		weights[i] = 1 / max(group[c].Penalty(), PenaltyFloor)
	}
	picked := make([]int, 0, k)
	for range k {
		j := drawWeighted(weights, rng)
		picked = append(picked, left[j])
		left = append(left[:j], left[j+1:]...)
		weights = append(weights[:j], weights[j+1:]...)
	}
	return picked
}

// drawWeighted returns index j with probability weights[j] / Σ weights (all weights positive).
func drawWeighted(weights []float64, rng *rand.Rand) int {
	total := 0.0
	for _, w := range weights {
		total += w
	}
	u := rng.Float64() * total
	for j, w := range weights {
		if u < w {
			return j
		}
		u -= w
	}
	return len(weights) - 1 // u landed on the top edge through rounding
}
