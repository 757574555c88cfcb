package model

import (
	"fmt"
	"math"
	"testing"

	"gorstar/kernels"
)

// bf16U is bfloat16's unit roundoff, 2^-8 (8 significand bits).
const bf16U = 1.0 / 256

// relL2 is ‖a − b‖ / ‖b‖.
func relL2(a, b []float32) float64 {
	var num, den float64
	for i := range b {
		d := float64(a[i]) - float64(b[i])
		num += d * d
		den += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(num / den)
}

func readBuf(b kernels.Buf, n int) []float32 {
	h := make([]float32, n)
	b.Slice(0, n).CopyTo(h)
	return h
}

// The tiny preset in bf16 against the same weights in fp32: the output of every layer (the
// residual stream after it, and the final norm) and the gradient of every parameter tensor, as
// relative L2 errors within stated multiples of u = 2^-8.
//
// The bound. Each bf16 product's result is off by a relative RMS of about u·√(2/3) (two operands
// rounded, each by a relative error uniform within ±u; the kernel tests bound it element by element
// at (2u + u² + 2γ_K)·Σ|a||b|, and float32 sums add only K·2^-24 to that). A layer runs three
// products in series on its way to the residual stream (q/k/v → o, gate/up → down), each adding its
// own rounding to the error it is handed, so layer l's output may be off by at most l·3·u relative
// (errors of independent roundings add, a lower-order amplification through RMSNorm and softmax is
// absorbed by treating them as if they added in full rather than in quadrature). The gradients run
// back through every layer twice more (dx and dW products of each layer, and the lm_head's),
// so a tensor's gradient gets (2·layers + 2)·3·u. The logged errors are a few times under these
// bounds; a wrong result (one token of the batch changed, in the bf16 model only) must break them.
func TestBF16TinyLayersAndGradientsWithinBound(t *testing.T) {
	c, err := Preset("tiny", 0)
	if err != nil {
		t.Fatal(err)
	}
	low, full := bf16Pair(t, c, 11)
	b := randomBatch(c, 3, 32, 13)
	L, C := c.NumHiddenLayers, c.HiddenSize
	layerBound := func(l int) float64 { return float64(l) * 3 * bf16U }
	gradBound := float64(2*L+2) * 3 * bf16U

	type snapshot struct {
		resid [][]float32 // resid[0] is the embedding, resid[l] layer l's output
		lnf   []float32
		grads []float32
	}
	run := func(m *Model, b *Batch) snapshot {
		m.ZeroGrads()
		if _, err := m.ForwardBackward(b); err != nil {
			t.Fatal(err)
		}
		T := b.B * b.L
		var s snapshot
		for l := 0; l <= L; l++ {
			s.resid = append(s.resid, readBuf(m.act.resid[l], T*C))
		}
		s.lnf = readBuf(m.act.lnf, T*C)
		s.grads = gradsOf(t, m)
		return s
	}
	// exceeds names the first layer output (or final norm) and the first gradient that break their
	// bounds against fp32 ("" where none does). The embedding (fp32 in both) is not compared: a wrong
	// batch changes it.
	exceeds := func(sl, sf snapshot, log bool) (layer, grad string) {
		for l := 1; l <= L; l++ {
			e := relL2(sl.resid[l], sf.resid[l])
			if log {
				t.Logf("layer %d output: relative error %.3g u (bound %.0f u)", l, e/bf16U, layerBound(l)/bf16U)
			}
			if (e > layerBound(l) || e == 0) && layer == "" {
				layer = fmt.Sprintf("layer %d output", l)
			}
		}
		e := relL2(sl.lnf, sf.lnf)
		if log {
			t.Logf("final norm: relative error %.3g u (bound %.0f u)", e/bf16U, layerBound(L)/bf16U)
		}
		if e > layerBound(L) && layer == "" {
			layer = "final norm"
		}
		for _, ts := range full.Grads.Tensors {
			e := relL2(sl.grads[ts.Offset:ts.Offset+ts.Size], sf.grads[ts.Offset:ts.Offset+ts.Size])
			if log {
				t.Logf("gradient of %s: relative error %.3g u (bound %.0f u)", ts.Name, e/bf16U, gradBound/bf16U)
			}
			if (e > gradBound || e == 0) && grad == "" {
				grad = "gradient of " + ts.Name
			}
		}
		return layer, grad
	}
	sf, sl := run(full, b), run(low, b)
	for i := range sf.resid[0] {
		if sl.resid[0][i] != sf.resid[0][i] {
			t.Fatal("the embeddings differ: the two models do not hold the same weights")
		}
	}
	if layer, grad := exceeds(sl, sf, true); layer != "" || grad != "" {
		t.Fatalf("bf16 vs fp32: %s%s out of bound (or exactly equal: the bf16 path did not run)", layer, grad)
	}
	// Wrong results: one token changed in the bf16 model's batch must break a layer's bound and a
	// gradient's; one token's loss weight negated (the same forward) a gradient's.
	wrong := *b
	wrong.IDs = append([]int32(nil), b.IDs...)
	wrong.IDs[40] = (wrong.IDs[40] + 1) % int32(c.VocabSize)
	if layer, grad := exceeds(run(low, &wrong), sf, false); layer == "" || grad == "" {
		t.Fatalf("a batch with one token changed stayed within the bounds (layer outputs broken: %q, gradients: %q)", layer, grad)
	}
	wrong = *b
	wrong.Weights = append([]float32(nil), b.Weights...)
	for i := 40; ; i++ {
		if i%b.L != 0 && wrong.Weights[i] != 0 {
			wrong.Weights[i] = -wrong.Weights[i]
			break
		}
	}
	if layer, grad := exceeds(run(low, &wrong), sf, false); layer != "" || grad == "" {
		t.Fatalf("one loss weight negated: layer outputs broken %q (want none), gradients %q (want one)", layer, grad)
	}
}
