package safetensors

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refF16 is the value of a half bit pattern computed in float64 from the IEEE definition.
func refF16(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e := int(h>>10) & 0x1f
	m := float64(h & 0x3ff)
	switch e {
	case 0x1f:
		if m != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	case 0:
		return sign * m * math.Ldexp(1, -24)
	}
	return sign * (1 + m/1024) * math.Ldexp(1, e-15)
}

func sameFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return a == b && math.Signbit(a) == math.Signbit(b)
}

func TestF16ToFloat32AllPatterns(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		got := F16ToFloat32(h)
		if !sameFloat(float64(got), refF16(h)) {
			t.Fatalf("F16ToFloat32(%#04x) = %g, want %g", h, got, refF16(h))
		}
		back := Float32ToF16(got)
		if math.IsNaN(float64(got)) {
			if back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, back)
			}
			continue
		}
		if back != h {
			t.Fatalf("F16 %#04x → %g → %#04x", h, got, back)
		}
	}
}

func TestBF16RoundTripAllPatterns(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := BF16ToFloat32(h)
		if got := math.Float32bits(f); got != uint32(h)<<16 {
			t.Fatalf("BF16ToFloat32(%#04x) bits %#08x", h, got)
		}
		back := Float32ToBF16(f)
		if math.IsNaN(float64(f)) {
			if !math.IsNaN(float64(BF16ToFloat32(back))) {
				t.Fatalf("NaN %#04x came back as %#04x", h, back)
			}
			continue
		}
		if back != h {
			t.Fatalf("BF16 %#04x → %g → %#04x", h, f, back)
		}
	}
}

// nearestCheck verifies that round(x) is the nearest of its neighbours, ties to an even pattern.
func nearestCheck(t *testing.T, kind string, x float32, got uint16, value func(uint16) float64) {
	t.Helper()
	xf := float64(x)
	gv := value(got)
	if math.IsInf(gv, 0) {
		// Overflow is right only if x is at least halfway past the largest finite value.
		maxFinite := value(got&0x8000 | (got&0x7fff - 1))
		next := 2*maxFinite - value(got&0x8000|(got&0x7fff-2)) // one step beyond max
		if math.Abs(xf) < math.Abs((maxFinite+next)/2) {
			t.Fatalf("%s(%g) overflowed to %g", kind, x, gv)
		}
		return
	}
	for _, n := range []uint16{got - 1, got + 1, got ^ 0x8000} {
		nv := value(n)
		if math.IsNaN(nv) || math.IsInf(nv, 0) {
			continue
		}
		d, dn := math.Abs(xf-gv), math.Abs(xf-nv)
		if dn < d || (dn == d && got&1 == 1 && n&0x8000 == got&0x8000) {
			t.Fatalf("%s(%g) = %#04x (%g), but %#04x (%g) is nearer or an even tie", kind, x, got, gv, n, nv)
		}
	}
}

func TestFloat32ToF16Rounding(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(x float32) {
		nearestCheck(t, "Float32ToF16", x, Float32ToF16(x), refF16)
	}
	for i := 0; i < 0x7c00-1; i++ { // every midpoint between neighbouring finite halves, and beside it
		lo, hi := refF16(uint16(i)), refF16(uint16(i+1))
		mid := float32((lo + hi) / 2)
		check(mid)
		check(math.Nextafter32(mid, 0))
		check(math.Nextafter32(mid, 1e9))
		check(-mid)
	}
	for i := 0; i < 200000; i++ {
		x := math.Float32frombits(r.Uint32())
		if math.IsNaN(float64(x)) {
			continue
		}
		check(x)
	}
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{65504, 0x7bff}, {65519.99, 0x7bff}, {65520, 0x7c00}, {-1e9, 0xfc00},
		{float32(math.Ldexp(1, -24)), 0x0001}, {float32(math.Ldexp(1, -25)), 0}, {float32(math.Ldexp(1.5, -25)), 0x0001},
		{float32(math.Ldexp(1, -14)), 0x0400}, {float32(math.Inf(1)), 0x7c00}, {float32(math.Copysign(0, -1)), 0x8000},
	} {
		if got := Float32ToF16(c.in); got != c.want {
			t.Errorf("Float32ToF16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if got := Float32ToF16(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("Float32ToF16(NaN) = %#04x, not a NaN", got)
	}
}

func TestFloat32ToBF16Rounding(t *testing.T) {
	value := func(h uint16) float64 { return float64(BF16ToFloat32(h)) }
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200000; i++ {
		x := math.Float32frombits(r.Uint32())
		if math.IsNaN(float64(x)) {
			continue
		}
		nearestCheck(t, "Float32ToBF16", x, Float32ToBF16(x), value)
	}
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80}, {math.Float32frombits(0x3f808000), 0x3f80}, {math.Float32frombits(0x3f818000), 0x3f82},
		{math.Float32frombits(0x3f808001), 0x3f81}, {math.MaxFloat32, 0x7f80}, {math.Float32frombits(0x00000001), 0},
		{math.Float32frombits(0x00018000), 0x0002}, {float32(math.Inf(-1)), 0xff80},
	} {
		if got := Float32ToBF16(c.in); got != c.want {
			t.Errorf("Float32ToBF16(%#08x) = %#04x, want %#04x", math.Float32bits(c.in), got, c.want)
		}
	}
	for _, nan := range []uint32{0x7f800001, 0xff800001, 0x7fc00000, 0x7fffffff} {
		if got := Float32ToBF16(math.Float32frombits(nan)); !math.IsNaN(float64(BF16ToFloat32(got))) {
			t.Errorf("Float32ToBF16(NaN %#08x) = %#04x, not a NaN", nan, got)
		}
	}
}
