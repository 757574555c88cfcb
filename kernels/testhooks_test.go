package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpfNonpos: the softmaxes' exponential without gk_expf's clamps gives gk_expf's bits on
// every float it can be called with — every value up to 88 (+0 to 88, and every pattern with the
// sign bit: negatives, -0, -inf) and every NaN — through the vectorized loops of the instruction
// set this machine selects.
func TestExpfNonpos(t *testing.T) {
	ranges := [][2]uint32{
		{0, math.Float32bits(88)},
		{0x7f800001, 0x7fffffff}, // NaNs
		{0x80000000, 0xffffffff}, // -0, negatives, -inf, NaNs
	}
	if testing.Short() {
		ranges = [][2]uint32{{0, 1 << 20}, {math.Float32bits(80), math.Float32bits(88)}, {0x7fc00000, 0x7fc00fff},
			{0x80000000, 0x80100000}, {math.Float32bits(-86), math.Float32bits(-90)}, {0xff800000, 0xff801000}}
	}
	for _, r := range ranges {
		if n := expfNonposMismatches(r[0], r[1]); n != 0 {
			t.Errorf("bit patterns %#x..%#x: %d differ from gk_expf", r[0], r[1], n)
		}
	}
}

// TestAdamWVectorBits: AdamW's 8-wide loop gives what its one-element loop gives, bit for bit,
// over several steps, on chunks with and without tails, with zero and huge gradients and moments.
func TestAdamWVectorBits(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	n := 2*gkChunk + 1003
	p0, g0 := randn(r, n, 1), randn(r, n, 1)
	for i := 0; i < n; i += 97 {
		g0[i] = 0
		if i+1 < n {
			g0[i+1] *= 1e6
		}
		if i+2 < n {
			g0[i+2] *= 1e-12
		}
	}
	var got [2][3][]float64
	for k, update := range []func(p, g, m, v Buf){
		func(p, g, m, v Buf) {
			for step := 1; step <= 3; step++ {
				AdamW(p, g, m, v, n, 1e-3, 0.9, 0.95, 1e-8, 0.1, 0.7, step)
			}
		},
		func(p, g, m, v Buf) {
			for step := 1; step <= 3; step++ {
				adamWScalar(p, g, m, v, n, 1e-3, 0.9, 0.95, 1e-8, 0.1, 0.7, step)
			}
		},
	} {
		p, g, m, v := buf(t, p0), buf(t, g0), zeros(t, n), zeros(t, n)
		update(p, g, m, v)
		got[k] = [3][]float64{read(p), read(m), read(v)}
	}
	for j, name := range []string{"param", "m", "v"} {
		for i := range got[0][j] {
			if a, b := float32(got[0][j][i]), float32(got[1][j][i]); math.Float32bits(a) != math.Float32bits(b) {
				t.Errorf("%s[%d]: %g with the vector loop, %g with the scalar one", name, i, a, b)
				break
			}
		}
	}
}
