package rl

import (
	"cmp"
	"math"
	"slices"
)

// ReleaseFloor is the release's minimum number of negatives and of positives kept per group
// (its min_zero_reward_trace_num and min_non_zero_reward_trace_num).
const ReleaseFloor = 2

// downsampleRelease is the public release's RoC; nil means the group is rejected.
//
//  1. A group whose rewards are all equal is rejected (it carries no signal), and so is a group
//     smaller than keep (the release skips it, which drops it). A group of exactly keep is kept.
//  2. Negatives and positives are each ordered by penalty, lowest first; ties keep rollout order.
//  3. Each side gets its share of keep, rounded half to even (Python's round):
//     round(|neg|·keep/n) and round(|pos|·keep/n).
//  4. Floors: if the negatives' share is at most min(ReleaseFloor, |neg|) it becomes that and the
//     positives get the rest; then the same for the positives, the negatives getting the rest.
//  5. Each side keeps the first of its ordered list.
//
// The floors are ReleaseFloor each, or keep/2 and keep − keep/2 when keep < 2·ReleaseFloor (the
// release refuses such a configuration). Where the two rounded shares miss keep by one and no floor
// fixed it (the release would fail an assertion), the positives take the difference as far as there
// are positives, then the negatives. The release's other branch — keep the whole group when both
// shares fall below their floors — cannot happen once the floors add up to at most keep.
func downsampleRelease(group []Sample, keep int) []int {
	n := len(group)
	if n < keep || allRewardsEqual(group) {
		return nil
	}
	if n == keep {
		return allIndices(n)
	}
	neg, pos := splitByReward(group)
	byPenalty := func(a, b int) int { return cmp.Compare(group[a].Penalty(), group[b].Penalty()) }
	slices.SortStableFunc(neg, byPenalty)
	slices.SortStableFunc(pos, byPenalty)
	nNeg, nPos := releaseShares(len(neg), len(pos), keep)
	return append(slices.Clone(pos[:nPos]), neg[:nNeg]...)
}

// releaseShares splits keep between nNegAll negatives and nPosAll positives (steps 3 and 4).
func releaseShares(nNegAll, nPosAll, keep int) (nNeg, nPos int) {
	n := nNegAll + nPosAll
	floorNeg := min(ReleaseFloor, keep/2)
	floorPos := min(ReleaseFloor, keep-floorNeg)
	nNeg = int(math.RoundToEven(float64(nNegAll*keep) / float64(n)))
	nPos = int(math.RoundToEven(float64(nPosAll*keep) / float64(n)))
	if f := min(floorNeg, nNegAll); nNeg <= f {
		nNeg, nPos = f, keep-f
	}
	if f := min(floorPos, nPosAll); nPos <= f {
		nPos, nNeg = f, keep-f
	}
	nPos = min(keep-nNeg, nPosAll)
	return keep - nPos, nPos
}

// allRewardsEqual compares rewards with the tolerances of the release's torch.allclose.
func allRewardsEqual(group []Sample) bool {
	for _, s := range group[1:] {
		if math.Abs(s.Reward-group[0].Reward) > 1e-8+1e-5*math.Abs(group[0].Reward) {
			return false
		}
	}
	return true
}
