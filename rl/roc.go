package rl

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Mode selects how Downsample keeps `keep` of a group's rollouts.
type Mode string

const (
	// ModePaper is GRPO-RoC as the paper states it: negatives down-sampled uniformly at random,
	// positives drawn without replacement with probability ∝ 1/p (see Sample.Penalty).
	ModePaper Mode = "paper"
	// ModeRelease is the public release's deterministic variant: groups whose rewards are all
	// equal are rejected, positives and negatives are each taken lowest penalty first, in
	// proportion to their counts, with at least ReleaseFloor of each where the group has them.
	ModeRelease Mode = "release"
	// ModeNone is plain GRPO: `keep` rollouts drawn uniformly at random.
	ModeNone Mode = "none"
)

// ParseMode checks a configured RoC mode.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModePaper, ModeRelease, ModeNone:
		return m, nil
	}
	return "", fmt.Errorf("RoC mode %q: want paper, release or none", s)
}

// Downsample chooses which rollouts of one prompt's group to train on. It returns the kept indices
// into group in ascending order, or rejected = true (and no indices) when the mode throws the whole
// group away. rng drives the random modes; ModeRelease does not use it.
//
// In every mode a group of at most keep rollouts is kept whole (ModeRelease rejects one smaller
// than keep, as the release drops it), and keep ≤ 0 keeps nothing. The paper and none modes never
// reject: a group whose rewards are all equal gets zero advantages, and dropping it is the
// caller's choice. An unknown mode panics (ParseMode checks configurations).
func Downsample(mode Mode, group []Sample, keep int, rng *rand.Rand) (kept []int, rejected bool) {
	if keep <= 0 {
		return nil, false
	}
	switch mode {
	case ModePaper:
		kept = downsamplePaper(group, keep, rng)
	case ModeRelease:
		kept = downsampleRelease(group, keep)
		if kept == nil {
			return nil, true
		}
	case ModeNone:
		kept = downsampleUniform(len(group), keep, rng)
	default:
		panic(fmt.Sprintf("rl.Downsample: unknown mode %q", mode))
	}
	slices.Sort(kept)
	return kept, false
}

// downsampleUniform keeps keep of n indices, each subset equally likely.
func downsampleUniform(n, keep int, rng *rand.Rand) []int {
	if n <= keep {
		return allIndices(n)
	}
	return rng.Perm(n)[:keep]
}

// splitByReward returns the indices of the negative and the positive rollouts, in group order.
func splitByReward(group []Sample) (neg, pos []int) {
	for i, s := range group {
		if s.Positive() {
			pos = append(pos, i)
		} else {
			neg = append(neg, i)
		}
	}
	return neg, pos
}

func allIndices(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}
