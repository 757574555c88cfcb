package model

import (
	"fmt"
	"math"

	"gorstar/kernels"
)

// AdamWConfig are the optimizer's hyperparameters; the learning rate is given per step.
type AdamWConfig struct {
	Beta1, Beta2, Eps float32
	// WeightDecay is decoupled (AdamW) and applies to matrices only: the embedding, the attention
	// and MLP projections and an untied lm_head. Norm weights and biases are not decayed, as in
	// the usual transformers/verl setup, since pulling a norm gain toward 0 changes the function
	// rather than regularizing it.
	WeightDecay float32
	// MaxGradNorm clips the global L2 norm of all gradients to this value before the update;
	// 0 disables clipping.
	MaxGradNorm float64
}

// DefaultAdamW returns β = (0.9, 0.999), ε = 1e-8, weight decay 0.01, clipping at norm 1.
func DefaultAdamW() AdamWConfig {
	return AdamWConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, MaxGradNorm: 1}
}

// Optimizer is AdamW over a model's parameters. Its moments share the parameter layout.
type Optimizer struct {
	Config AdamWConfig
	Step   int // completed steps
	M, V   *ParamSet
	model  *Model
}

// NewOptimizer returns an optimizer with zero moments for m.
func (m *Model) NewOptimizer(cfg AdamWConfig) *Optimizer {
	if m.inference {
		panic("model: NewOptimizer on a model loaded for inference only (LoadOptions.Inference)")
	}
	return &Optimizer{Config: cfg, M: newParamSet(m.Config), V: newParamSet(m.Config), model: m}
}

// Close frees the moments.
func (o *Optimizer) Close() {
	o.M.Free()
	o.V.Free()
}

// StepStats reports one optimizer step.
type StepStats struct {
	GradNorm float64 // global L2 norm before clipping
	Clipped  bool
}

// Update applies one AdamW step with learning rate lr to the model's accumulated gradients (it
// does not zero them). A non-finite gradient norm skips the update and returns an error, leaving
// parameters and moments untouched.
func (o *Optimizer) Update(lr float64) (StepStats, error) {
	g := o.model.Grads
	if g == nil {
		return StepStats{}, fmt.Errorf("optimizer step: the model has no gradients")
	}
	norm := math.Sqrt(kernels.SumSquares(g.All, g.Size))
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return StepStats{GradNorm: norm}, fmt.Errorf("optimizer step %d: gradient norm is %g", o.Step+1, norm)
	}
	st := StepStats{GradNorm: norm}
	scale := float32(1)
	if c := o.Config.MaxGradNorm; c > 0 && norm > c {
		scale = float32(c / (norm + 1e-6))
		st.Clipped = true
	}
	o.Step++
	p, c := o.model.Params, o.Config
	decayed, rest := p.Decayed, p.Size-p.Decayed
	kernels.AdamW(p.All.Slice(0, decayed), g.All.Slice(0, decayed), o.M.All.Slice(0, decayed),
		o.V.All.Slice(0, decayed), decayed, float32(lr), c.Beta1, c.Beta2, c.Eps, c.WeightDecay, scale, o.Step)
	if rest > 0 {
		kernels.AdamW(p.All.Slice(decayed, rest), g.All.Slice(decayed, rest), o.M.All.Slice(decayed, rest),
			o.V.All.Slice(decayed, rest), rest, float32(lr), c.Beta1, c.Beta2, c.Eps, 0, scale, o.Step)
	}
	o.model.WeightsChanged()
	return st, nil
}
