package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// sameBits fails unless got and want hold the same values bit for bit.
func sameBits(t *testing.T, what string, got, want []float64) {
	t.Helper()
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("%s[%d] = %.9g, want %.9g (the same bits)", what, i, got[i], want[i])
		}
	}
}

// bf16Of is a float32 buffer's values rounded to bfloat16 by ToBF16.
func bf16Of(t *testing.T, x Buf, n int) []float64 {
	h := AllocBF16(n)
	t.Cleanup(h.Free)
	ToBF16(h, x, n)
	return readBF16(h)
}

// The ops that store a trainer's activations in bfloat16 give the float32 op's values rounded
// (RMSNormForward, SwiGLUForward into a bf16 buffer), and a bf16 input to the linear layer gives
// the bits of the float32 input it was rounded from (the GEMM rounds that as it packs it), forward
// and backward, with and without bias, at row counts that leave partial tiles.
func TestBF16StoredActivationsSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 1))
	for _, T := range []int{1, 13, 70} {
		const C, I = 96, 200
		x, w := buf(t, randn(r, T*C, 1)), buf(t, randn(r, C, 0.5))
		y32, r32 := zeros(t, T*C), zeros(t, T)
		RMSNormForward(y32, r32, x, w, T, C, 1e-6)
		y16, r16 := AllocBF16(T*C), zeros(t, T)
		t.Cleanup(y16.Free)
		RMSNormForward(y16, r16, x, w, T, C, 1e-6)
		sameBits(t, "RMSNormForward bf16 y", readBF16(y16), bf16Of(t, y32, T*C))
		sameBits(t, "RMSNormForward bf16 rstd", read(r16), read(r32))

		gate, up := buf(t, randn(r, T*I, 2)), buf(t, randn(r, T*I, 1))
		s32, s16 := zeros(t, T*I), AllocBF16(T*I)
		t.Cleanup(s16.Free)
		SwiGLUForward(s32, gate, up, T*I)
		SwiGLUForward(s16, gate, up, T*I)
		sameBits(t, "SwiGLUForward bf16", readBF16(s16), bf16Of(t, s32, T*I))

		// The linear layer on y32 and on its bf16 rounding y16.
		const out = 72
		wb, bias, dy := bufBF16(t, randn(r, out*C, 0.1)), buf(t, randn(r, out, 1)), buf(t, randn(r, T*out, 1))
		for _, b := range []Buf{{}, bias} {
			f32, b16 := zeros(t, T*out), zeros(t, T*out)
			LinearForward(f32, y32, wb, b, T, C, out)
			LinearForward(b16, y16, wb, b, T, C, out)
			sameBits(t, "LinearForwardBF16 y", read(b16), read(f32))
			dx32, dw32, db32 := zeros(t, T*C), zeros(t, out*C), zeros(t, out)
			dx16, dw16, db16 := zeros(t, T*C), zeros(t, out*C), zeros(t, out)
			LinearBackward(dx32, dw32, db32, dy, y32, wb, T, C, out)
			LinearBackward(dx16, dw16, db16, dy, y16, wb, T, C, out)
			sameBits(t, "LinearBackwardBF16 dx", read(dx16), read(dx32))
			sameBits(t, "LinearBackwardBF16 dw", read(dw16), read(dw32))
			sameBits(t, "LinearBackwardBF16 db", read(db16), read(db32))
		}
	}
	// The check is not vacuous: the fp32 input itself differs from its rounding.
	x := buf(t, randn(r, 64, 1))
	if got := bf16Of(t, x, 64); got[0] == read(x)[0] && got[1] == read(x)[1] {
		t.Fatal("rounding to bf16 left the values unchanged")
	}
}
