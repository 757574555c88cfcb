// Package model is gorstar's Qwen2/Qwen3 decoder-only transformer on top of package kernels: the
// architecture read from a Hugging Face config.json, weights in Hugging Face names and layouts
// loaded from and saved to safetensors, a training step (forward and backward over a batch of
// sequences with per-token loss weights, AdamW with global gradient-norm clipping) and resumable
// checkpoints.
//
// The Go side decides the order of kernel calls; every tensor lives in a kernels.Buf. Parameters,
// gradients and optimizer moments are each one buffer with the same layout (ParamSet), and the
// activations of a batch shape are allocated once and reused for every batch of that shape.
//
// A training step is either one call (ForwardBackward: the loss weights are known up front, as in
// SFT) or two (Forward gives per-token log-probabilities; the caller turns them into weights, as
// an RL policy loss does, and Backward finishes without repeating the forward).
package model

import "fmt"

// Model is a transformer with its parameters and, once it has trained, its gradients. Kernels
// must be initialized (kernels.Init) before New or Load. A Model is not safe for concurrent use.
type Model struct {
	Config Config
	Params *ParamSet
	Grads  *ParamSet // nil until the first backward

	// Files are the non-weight files of the Hugging Face directory (tokenizer.json,
	// tokenizer_config.json, generation_config.json, …) kept byte for byte and written back on Save.
	Files map[string][]byte

	// Recompute is the number of decoder layers, counted from the first, whose activations are
	// not kept between forward and backward but recomputed layer by layer during backward: less
	// memory for about one extra forward of those layers. Set it before the first batch of a shape.
	Recompute int

	// LossChunkTokens bounds the rows of logits ([tokens, vocab]) live at once in the lm_head and
	// cross-entropy; 0 picks a chunk of about 32 M logits (128 MB).
	LossChunkTokens int

	w, g weights
	act  *activations
	low  *lowPrecision // the bfloat16 weights of a bf16 model (SetPrecision), else nil

	inference bool // loaded for inference only (LoadOptions.Inference): no fp32 matrices, no training

	// saved lists the groups of saved activations a bf16 model stores in bfloat16: lowOperands,
	// set by SetPrecision; tests set others to compare the storage precisions.
	saved uint8

	// version counts changes of the weights (WeightsChanged); decoders re-derive what they
	// precomputed from them when it moves.
	version uint64

	overlap *gradOverlap // an armed overlapped gradient all-reduce (allreduce.go), else nil
}

// WeightsChanged tells the model's decoders that Params were written (the optimizer calls it; so
// must code that writes Params directly, such as a weight sync), so that they repack the weights
// they keep in their kernel's layout before their next step.
func (m *Model) WeightsChanged() { m.version++ }

// New returns a model with freshly initialized weights: normal(0, std) matrices with
// std = config.InitializerRange (0.02 when unset), norm weights 1, biases 0, deterministic in seed.
func New(c Config, seed uint64) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("new model: %w", err)
	}
	m := newEmpty(c)
	std := c.InitializerRange
	if std == 0 {
		std = 0.02
	}
	m.Params.initRandom(seed, std)
	return m, nil
}

func newEmpty(c Config) *Model {
	m := &Model{Config: c, Params: newParamSet(c), Files: map[string][]byte{}}
	m.w = m.Params.views(c)
	return m
}

// Close frees every device buffer the model holds.
func (m *Model) Close() {
	m.freeActivations()
	if m.low != nil {
		m.low.all.Free()
		m.low = nil
	}
	m.Params.Free()
	m.Grads.Free()
	m.Params, m.Grads = nil, nil
}

// ZeroGrads sets every gradient to zero, allocating the gradients on first use. Backward adds into
// the gradients, so several batches accumulate until the next ZeroGrads.
func (m *Model) ZeroGrads() {
	if m.inference {
		panic("model: ZeroGrads on a model loaded for inference only (LoadOptions.Inference)")
	}
	if m.Grads == nil {
		m.Grads = newParamSet(m.Config)
		m.g = m.Grads.views(m.Config)
		return // newParamSet zeroes
	}
	m.Grads.All.Zero()
}
