package rl

import (
	"fmt"
	"math"
)

// LossConfig sets the clipped policy objective.
type LossConfig struct {
	// ClipLow and ClipHigh bound the importance ratio to [1 − ClipLow, 1 + ClipHigh] (clip-higher:
	// rStar2 uses 0.2 and 0.28, so unlikely tokens of good rollouts may grow further).
	ClipLow, ClipHigh float64
	// DualClip, when > 1, also bounds the objective of a token with a negative advantage from
	// below by DualClip·Â, so a ratio that has run far above 1 cannot push it without limit.
	// 0 turns it off.
	DualClip float64
	// TISCap, when > 0, weighs each token by the truncated importance ratio
	// min(exp(old − rollout logprob), TISCap): the correction for rollouts sampled by another
	// engine (remote servers) whose probabilities differ from the trainer's. 0 turns it off.
	TISCap float64
}

// DefaultLossConfig is rStar2's objective: clip [0.8, 1.28], no dual clip, no TIS.
func DefaultLossConfig() LossConfig { return LossConfig{ClipLow: 0.2, ClipHigh: 0.28} }

// Validate reports a setting outside its range.
func (c LossConfig) Validate() error {
	switch {
	case !(c.ClipLow >= 0 && c.ClipLow < 1):
		return fmt.Errorf("clip_low %v: want 0 ≤ clip_low < 1", c.ClipLow)
	case !(c.ClipHigh >= 0):
		return fmt.Errorf("clip_high %v: want ≥ 0", c.ClipHigh)
	case c.DualClip != 0 && !(c.DualClip > 1):
		return fmt.Errorf("dual_clip %v: want 0 (off) or > 1", c.DualClip)
	case !(c.TISCap >= 0):
		return fmt.Errorf("tis_cap %v: want 0 (off) or > 0", c.TISCap)
	}
	return nil
}

// TokenBatch holds aligned per-token slices, typically in the model's batch layout (B×L, row by
// row). Only tokens whose Mask is true count: the ones the policy generated.
type TokenBatch struct {
	Logprobs        []float32 // log π_θ(token) under the weights being trained (model Forward)
	OldLogprobs     []float32 // under the weights before this RL step's first update
	RolloutLogprobs []float32 // as the sampler reported them; read only when TISCap > 0
	Advantages      []float32 // the rollout's advantage, repeated on each of its tokens
	Mask            []bool
	// Normalizer is the number of tokens the loss is averaged over; 0 means this batch's masked
	// tokens. Set it to a mini-batch's token count when the mini-batch is run in micro-batches, so
	// their gradients add up to the mini-batch's token-level mean.
	Normalizer float64
}

// LossResult is the policy loss of a TokenBatch and what the trainer needs besides.
type LossResult struct {
	// Loss = −(1/N) Σ_t mask_t · tis_t · min(ρ_t Â_t, clip(ρ_t) Â_t), dual-clipped when set,
	// with ρ_t = exp(logprob_t − old_t) and N the Normalizer.
	Loss float64
	// Weights[t] = −∂Loss/∂logprob_t: pass them to model.Backward, whose gradient is that of
	// −Σ w·logprob. Zero off the mask and where a clip holds the objective constant.
	Weights []float32
	// Tokens counts the masked tokens; the fractions and ApproxKL are means over them.
	Tokens int
	// ClipFraction is the share of tokens where the ratio clip acted (the clipped term was the
	// smaller); DualClipFraction where the dual clip acted; TISCappedFraction where the TIS
	// weight hit its cap.
	ClipFraction, DualClipFraction, TISCappedFraction float64
	// ApproxKL estimates KL(old ‖ new) with the k3 estimator ρ − 1 − log ρ, always ≥ 0.
	ApproxKL float64
}

// PolicyLoss computes the token-level clipped surrogate loss over a batch and its per-token
// gradient weights. No KL or entropy term enters the loss. An error means the slices disagree in
// length or the config is out of range.
func PolicyLoss(cfg LossConfig, b TokenBatch) (LossResult, error) {
	if err := cfg.Validate(); err != nil {
		return LossResult{}, err
	}
	if err := b.check(cfg.TISCap > 0); err != nil {
		return LossResult{}, err
	}
	res := LossResult{Weights: make([]float32, len(b.Mask))}
	var sumObj, nClip, nDual, nCapped, sumKL float64
	for t, on := range b.Mask {
		if !on {
			continue
		}
		res.Tokens++
		logRatio := float64(b.Logprobs[t]) - float64(b.OldLogprobs[t])
		ratio := math.Exp(logRatio)
		tok := cfg.surrogate(ratio, float64(b.Advantages[t]))
		tis, capped := cfg.tisWeight(b, t)
		sumObj += tis * tok.obj
		res.Weights[t] = float32(tis * tok.dObj) // scaled by 1/N below
		nClip += b2f(tok.clipped)
		nDual += b2f(tok.dualClipped)
		nCapped += b2f(capped)
		sumKL += ratio - 1 - logRatio
	}
	if res.Tokens == 0 {
		return res, nil
	}
	norm := b.Normalizer
	if norm <= 0 {
		norm = float64(res.Tokens)
	}
	for t := range res.Weights {
		res.Weights[t] = float32(float64(res.Weights[t]) / norm)
	}
	n := float64(res.Tokens)
	res.Loss = -sumObj / norm
	res.ClipFraction, res.DualClipFraction, res.TISCappedFraction = nClip/n, nDual/n, nCapped/n
	res.ApproxKL = sumKL / n
	return res, nil
}

// tokenObjective is one token's surrogate objective and its derivative in the token's logprob.
type tokenObjective struct {
	obj, dObj            float64
	clipped, dualClipped bool
}

// surrogate is min(ρÂ, clip(ρ)Â), then max(·, DualClip·Â) for Â < 0 when the dual clip is on.
// Where the unclipped term is the one taken its derivative is ρÂ (dρ/dlogprob = ρ); a clipped
// term is constant in the logprob. On a tie the unclipped term is taken, so gradient flows.
func (c LossConfig) surrogate(ratio, adv float64) tokenObjective {
	unclipped := ratio * adv
	tok := tokenObjective{obj: unclipped, dObj: unclipped}
	if clipped := min(max(ratio, 1-c.ClipLow), 1+c.ClipHigh) * adv; clipped < unclipped {
		tok = tokenObjective{obj: clipped, clipped: true}
	}
	if c.DualClip > 0 && adv < 0 && tok.obj < c.DualClip*adv {
		tok = tokenObjective{obj: c.DualClip * adv, dualClipped: true}
	}
	return tok
}

// tisWeight is token t's truncated importance weight (1 when TIS is off); it is a constant of the
// loss, not differentiated.
func (c LossConfig) tisWeight(b TokenBatch, t int) (w float64, capped bool) {
	if c.TISCap <= 0 {
		return 1, false
	}
	w = math.Exp(float64(b.OldLogprobs[t]) - float64(b.RolloutLogprobs[t]))
	if w >= c.TISCap {
		return c.TISCap, true
	}
	return w, false
}

// check wants every slice the loss reads to be as long as Mask.
func (b TokenBatch) check(needRollout bool) error {
	names := []string{"logprobs", "old logprobs", "advantages", "rollout logprobs (TIS is on)"}
	lens := []int{len(b.Logprobs), len(b.OldLogprobs), len(b.Advantages), len(b.RolloutLogprobs)}
	if !needRollout {
		names, lens = names[:3], lens[:3]
	}
	for i, l := range lens {
		if l != len(b.Mask) {
			return fmt.Errorf("policy loss: %d %s for %d mask entries", l, names[i], len(b.Mask))
		}
	}
	return nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
