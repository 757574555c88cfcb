//go:build !rocm

package kernels

import (
	"math"
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
