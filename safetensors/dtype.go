package safetensors

import (
	"fmt"
	"math"
)

// DType is a tensor element type as spelled in the safetensors header.
type DType string

// The element types this package reads. F32, BF16 and F16 convert to float32; I32 and I64 are
// integer tensors (position ids, masks) that convert to int64.
const (
	F32  DType = "F32"
	BF16 DType = "BF16"
	F16  DType = "F16"
	I32  DType = "I32"
	I64  DType = "I64"
)

// Size is the number of bytes of one element, or 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case F32, I32:
		return 4
	case BF16, F16:
		return 2
	case I64:
		return 8
	}
	return 0
}

// IsFloat reports whether d converts to float32.
func (d DType) IsFloat() bool { return d == F32 || d == BF16 || d == F16 }

func parseDType(s string) (DType, error) {
	d := DType(s)
	if d.Size() == 0 {
		return "", fmt.Errorf("unknown dtype %q (want F32, BF16, F16, I32 or I64)", s)
	}
	return d, nil
}

// BF16ToFloat32 widens a bfloat16 bit pattern to float32; every value, NaN payloads included,
// is represented exactly.
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Float32ToBF16 rounds f to the nearest bfloat16, ties to even. Values beyond the bfloat16 range
// become ±Inf as IEEE rounding prescribes; NaN stays NaN (quiet, sign kept).
func Float32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: truncating could turn it into Inf
		return uint16(b>>16) | 0x0040
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// F16ToFloat32 widens an IEEE half-precision bit pattern to float32 exactly, subnormals,
// infinities and NaN payloads included.
func F16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0: // normal: rebias 15 → 127
		return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
	case man == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal half: man × 2^-24, normal in float32. Shift the leading one into the
	// implicit-bit position and lower the exponent to match.
	e := uint32(113) // exponent of 2^-14 (the smallest normal half) biased for float32
	for man&0x400 == 0 {
		man <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (man&0x3ff)<<13)
}

// Float32ToF16 rounds f to the nearest IEEE half, ties to even, producing subnormals below
// 2^-14 and ±Inf above 65504 (after rounding); NaN stays NaN.
func Float32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00 | uint16(man>>13) // quiet NaN, keep the top payload bits
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // half exponent field
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Result is subnormal (or zero): value = m × 2^-24 with m = full significand >> shift.
		if e < -10 {
			return sign // below half the smallest subnormal: rounds to zero
		}
		full := man | 0x800000
		shift := uint32(14 - e) // 13 to drop float32's extra bits, plus 1-e to denormalize
		m := full >> shift
		rem := full & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && m&1 == 1) {
			m++ // may carry into the smallest normal, which is the right answer
		}
		return sign | uint16(m)
	}
	m := man >> 13
	rem := man & 0x1fff
	h := uint32(e)<<10 | m
	if rem > 0x1000 || (rem == 0x1000 && m&1 == 1) {
		h++ // a carry out of the mantissa bumps the exponent, up to Inf: still correct
	}
	return sign | uint16(h)
}
