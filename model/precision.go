package model

import (
	"fmt"

	"gorstar/kernels"
)

// Precision is the arithmetic of a model's matrix products.
//
// With "bf16" every linear layer (q, k, v, o, gate, up, down and the lm_head, forward and both
// backward products) multiplies in bfloat16 with float32 sums: the weights are a bfloat16 copy of
// the float32 master weights, rounded to nearest even whenever the master weights change (after
// each optimizer step), and the float32 inputs are rounded to bfloat16 as the GEMM packs them. The
// master weights, their gradients and the AdamW moments stay float32, and so do the embedding
// lookup, RMSNorm, RoPE, attention, SwiGLU, softmax, log-probabilities, loss and gradient norm —
// PyTorch's autocast on a CPU draws the same line. Of the activations kept for backward, those
// read only as products' operands are stored in bfloat16 (the values the products round them to). The decoder and the trainer run the same
// kernels, and a product's row has the same bits whatever the number of rows, so a rollout's
// log-probabilities match the trainer's as they do in float32.
type Precision string

const (
	FP32 Precision = "fp32"
	BF16 Precision = "bf16"
	// Auto is bf16 where its products run natively (AutoPrecision), else fp32.
	Auto Precision = "auto"
)

// ParsePrecision checks a precision name ("fp32", "bf16" or "auto"; "" is fp32) and resolves
// "auto" with AutoPrecision.
func ParsePrecision(s string) (Precision, error) {
	switch Precision(s) {
	case "", FP32:
		return FP32, nil
	case BF16:
		return BF16, nil
	case Auto:
		return AutoPrecision(), nil
	}
	return "", fmt.Errorf("precision %q: want fp32, bf16 or auto", s)
}

// PrecisionOf is ParsePrecision for a name already checked (a validated model.dtype); a bad
// name comes back unchanged, for SetPrecision to reject.
func PrecisionOf(s string) Precision {
	p, err := ParsePrecision(s)
	if err != nil {
		return Precision(s)
	}
	return p
}

// AutoPrecision is what model.dtype = "auto" trains and decodes in: bf16 on a CPU whose bf16
// products run on AVX-512 BF16 (vdpbf16ps), where bf16 measured faster than fp32 in every
// configuration (docs/measurements.md: a training step 1.6×, decoding 1.9–2.0×); fp32 on other
// CPUs (bf16 there only halves the bytes: the products widen to fp32) and on a GPU, where bf16
// has not run yet. Call it after the kernels are set up (and the device, if any, installed).
func AutoPrecision() Precision {
	if !kernels.OnDevice() && kernels.GEMMBF16Kernel() == "bf16-avx512" {
		return BF16
	}
	return FP32
}

// lowPrecision is the bfloat16 copy of the parameters a bf16 model multiplies with.
type lowPrecision struct {
	all     kernels.Buf // one bfloat16 element per parameter, the ParamSet's layout
	version uint64      // the Model.version it was rounded from
}

// SetPrecision switches the model's matrix products to p. Switching to bf16 allocates the bfloat16
// copy of the weights (2 bytes a parameter); switching back frees it.
func (m *Model) SetPrecision(p Precision) error {
	p, err := ParsePrecision(string(p))
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if p == m.Precision() {
		return nil
	}
	if m.inference {
		return fmt.Errorf("model: precision %s: the model was loaded for bf16 inference only", p)
	}
	if p == FP32 {
		m.low.all.Free()
		m.low = nil
		m.w = m.Params.views(m.Config)
		return nil
	}
	m.low = &lowPrecision{all: kernels.AllocBF16(m.Params.Size)}
	m.saved = 0
	if !kernels.OnDevice() { // the device ops take float32 activations (bf16 weights only)
		m.saved = lowOperands
	}
	m.w = m.lowViews()
	m.round()
	return nil
}

// Precision is the arithmetic of the model's matrix products.
func (m *Model) Precision() Precision {
	if m.low != nil {
		return BF16
	}
	return FP32
}

// lowViews are the weights a bf16 model computes with: the linear layers' matrices (and the
// lm_head) from the bfloat16 copy, everything else from the float32 parameters.
func (m *Model) lowViews() weights {
	w := m.Params.views(m.Config)
	low := func(name string) kernels.Buf {
		t := m.Params.Tensor(name)
		return m.low.all.Slice(t.Offset, t.Size)
	}
	if m.Config.TieWordEmbeddings {
		w.lmHead = low(nameEmbed)
	} else {
		w.lmHead = low(nameLMHead)
	}
	for i := range w.layers {
		l, n := &w.layers[i], func(s string) string { return layerName(i, s) }
		l.q, l.k, l.v, l.o = low(n(nameQ)), low(n(nameK)), low(n(nameV)), low(n(nameO))
		l.gate, l.up, l.down = low(n(nameGate)), low(n(nameUp)), low(n(nameDown))
	}
	return w
}

// round refreshes the bfloat16 weights from the float32 ones when these changed since.
func (m *Model) round() {
	if m.low == nil || m.low.all.IsNil() || m.inference { // an inference model's bf16 weights are its only copy
		return
	}
	if m.low.version == m.version+1 { // version+1: 0 means never rounded
		return
	}
	kernels.ToBF16(m.low.all, m.Params.All, m.Params.Size)
	m.low.version = m.version + 1
}

// StepMemory is the memory a training step takes, in bytes, by what holds it.
type StepMemory struct {
	Weights     int64 `json:"weights"`     // what the products read: fp32 parameters, or the bf16 copy
	Master      int64 `json:"master"`      // the fp32 master weights of a bf16 model (0 in fp32: the weights are the master)
	Gradients   int64 `json:"gradients"`   // fp32
	Optimizer   int64 `json:"optimizer"`   // AdamW's two fp32 moments
	Activations int64 `json:"activations"` // kept for backward at batch × seq tokens, and the logits of one loss chunk
	Total       int64 `json:"total"`
}

// StepMemory estimates the memory of a training step of batch sequences of seq tokens with the
// first recompute layers recomputed in backward and loss chunks of lossChunk tokens (0: the
// model's default of about 32 M logits) at precision p. The activations are the buffers the step
// allocates, at the bytes of their precision (bf16 for the saved GEMM operands of a bf16 model);
// the kernels' own scratch (packed GEMM panels, attention workspaces) is not in it.
func (c Config) StepMemory(p Precision, batch, seq, recompute, lossChunk int) StepMemory {
	params := c.NumParams()
	tokens := int64(batch) * int64(seq)
	chunk := int64(lossChunk)
	if chunk <= 0 {
		chunk = max(1, (32<<20)/int64(c.VocabSize))
	}
	chunk = min(chunk, tokens)
	m := StepMemory{Weights: 4 * params, Gradients: 4 * params, Optimizer: 8 * params}
	if p == BF16 {
		m.Weights, m.Master = 2*params, 4*params
	}
	low := uint8(0)
	if p == BF16 {
		low = lowOperands
	}
	m.Activations = c.activationBytes(low, tokens, int64(recompute), chunk)
	m.Total = m.Weights + m.Master + m.Gradients + m.Optimizer + m.Activations
	return m
}

// SavedActivations says how a training step at precision p stores the activations it keeps for
// backward (for people: `model info` and CheckFit's refusal).
func SavedActivations(p Precision) string {
	if p == BF16 {
		return "GEMM operands bf16, the rest fp32"
	}
	return "fp32"
}
