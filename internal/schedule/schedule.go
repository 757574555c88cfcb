// Package schedule is the learning-rate schedule of the training stages (sft, rl): linear
// warm-up to a peak, then constant or half a cosine.
package schedule

import (
	"fmt"
	"math"
)

// Kind names the shape of the learning rate after warm-up.
type Kind string

const (
	// Constant holds the peak after warm-up (rStar2's RL: 1e-6 after 20 steps).
	Constant Kind = "constant"
	// Cosine decays from the peak to 0 along half a cosine (rStar2's SFT).
	Cosine Kind = "cosine"
)

// ParseKind checks a configured schedule name.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(s); k {
	case Constant, Cosine:
		return k, nil
	}
	return "", fmt.Errorf("lr schedule %q: want constant or cosine", s)
}

// LR returns the learning rate of optimizer step `step` (0-based) of `total`.
//
// Warm-up is linear and reaches the peak on its last step: step s < warmup gets
// peak·(s+1)/warmup, so no step is spent at lr 0 (the Hugging Face schedulers start at 0). After
// warm-up, Constant gives peak; Cosine gives peak·(1 + cos(π·q))/2 with
// q = (s − warmup)/(total − warmup), so the first step after warm-up is at the peak and the rate
// would reach 0 at step total; steps past total stay at 0, and with no steps left after warm-up
// (total ≤ warmup) the peak is kept. An unknown kind panics (ParseKind checks configs).
func LR(step, total, warmup int, peak float64, kind Kind) float64 {
	if step < warmup {
		return peak * float64(step+1) / float64(warmup)
	}
	switch kind {
	case Constant:
		return peak
	case Cosine:
		decay := total - warmup
		if decay <= 0 {
			return peak
		}
		q := min(float64(step-warmup)/float64(decay), 1)
		return peak * (1 + math.Cos(math.Pi*q)) / 2
	}
	panic(fmt.Sprintf("schedule.LR: unknown kind %q", kind))
}
