package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// bf16Bits is the reference rounding: float32 to the nearest bfloat16, ties to even, NaN quiet.
func bf16Bits(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	lower := u & 0xffff
	up := u >> 16
	if lower > 0x8000 || lower == 0x8000 && up&1 == 1 {
		up++
	}
	return uint16(up)
}

func bf16Value(h uint16) float64 { return float64(math.Float32frombits(uint32(h) << 16)) }

// bf16Rounded is x rounded to float32, then to bfloat16, as a float64.
func bf16Rounded(x []float64) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = bf16Value(bf16Bits(float32(v)))
	}
	return y
}

// bufBF16 allocates a bfloat16 buffer holding x rounded; the test frees it.
func bufBF16(t testing.TB, x []float64) Buf {
	b := AllocBF16(len(x))
	h := make([]uint16, len(x))
	for i, v := range x {
		h[i] = bf16Bits(float32(v))
	}
	b.CopyFromBF16(h)
	t.Cleanup(b.Free)
	return b
}

func readBF16(b Buf) []float64 {
	h := make([]uint16, b.Len())
	b.CopyToBF16(h)
	x := make([]float64, len(h))
	for i, v := range h {
		x[i] = bf16Value(v)
	}
	return x
}

func TestBF16Conversion(t *testing.T) {
	r := rand.New(rand.NewPCG(46, 1))
	var f []float32
	for _, u := range []uint32{0, 0x80000000, 0x3f808000, 0x3f818000, 0x3f808001, 0x3f80ffff, 0x7f7fffff, 0xff7fffff,
		0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffa00000, 0x00000001, 0x00008000, 0x00018000, 0x007fffff} {
		f = append(f, math.Float32frombits(u))
	}
	for range 100000 {
		f = append(f, math.Float32frombits(r.Uint32()))
	}
	n := len(f)
	src, dst, back := Alloc(n), AllocBF16(n), Alloc(n)
	defer src.Free()
	defer dst.Free()
	defer back.Free()
	src.CopyFrom(f)
	ToBF16(dst, src, n)
	FromBF16(back, dst, n)
	got, wide := dst.BF16s(), back.Floats()
	for i, v := range f {
		if want := bf16Bits(v); got[i] != want {
			t.Fatalf("ToBF16(%#08x) = %#04x, want %#04x", math.Float32bits(v), got[i], want)
		}
		if math.Float32bits(wide[i]) != uint32(got[i])<<16 {
			t.Fatalf("FromBF16(%#04x) = %#08x", got[i], math.Float32bits(wide[i]))
		}
	}
	// Ties go to even: 1 + 2^-8 (halfway between 1 and 1 + 2^-7) rounds down, 1 + 3·2^-8 up.
	if bf16Bits(1+1.0/256) != 0x3f80 || bf16Bits(1+3.0/256) != 0x3f82 {
		t.Fatal("reference rounding is not ties-to-even")
	}
}

// gemmBF16Case runs GEMMBF16 for one shape and dtype choice and compares it with float64 sums of
// the bf16-rounded inputs (the error left is the float32 accumulation's) and with the float32
// product of the unrounded inputs (within bf16's rounding of the inputs).
func gemmBF16Case(t *testing.T, r *rand.Rand, name string, tA, tB bool, M, N, K int, alpha, beta float64, aDT, bDT, cDT DType, pad bool) []float64 {
	t.Helper()
	ar, ac, br, bc := M, K, K, N
	if tA {
		ar, ac = K, M
	}
	if tB {
		br, bc = N, K
	}
	lda, ldb, ldc := ac, bc, N
	if pad {
		lda, ldb, ldc = ac+r.IntN(3), bc+r.IntN(3), N+r.IntN(3)
	}
	A, B, Cm := rounded(randn(r, max(1, ar*lda), 1)), rounded(randn(r, max(1, br*ldb), 1)), randn(r, max(1, M*ldc), 1)
	if cDT == BF16 {
		Cm = bf16Rounded(Cm)
	} else {
		Cm = rounded(Cm)
	}
	want, bound := refGEMM(tA, tB, M, N, K, alpha, bf16Rounded(A), lda, bf16Rounded(B), ldb, beta, Cm, ldc)
	exact, _ := refGEMM(tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, Cm, ldc)
	mk := func(x []float64, dt DType) Buf {
		if dt == BF16 {
			return bufBF16(t, x)
		}
		return buf(t, x)
	}
	cb := mk(Cm, cDT)
	GEMMBF16(tA, tB, M, N, K, float32(alpha), mk(A, aDT), lda, mk(B, bDT), ldb, float32(beta), cb, ldc)
	var got []float64
	if cDT == BF16 {
		got = readBF16(cb)
	} else {
		got = read(cb)
	}
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			o := i*ldc + j
			tol := 1e-6*bound[o]*float64(K+4) + 1e-6 // float32 sums of the rounded inputs
			if cDT == BF16 {
				tol += math.Abs(want[o]) / 256 // one bf16 rounding of the result
			}
			if d := math.Abs(got[o] - want[o]); !(d <= tol) {
				t.Fatalf("%s: C[%d,%d] = %g, want %g (bf16 inputs)", name, i, j, got[o], want[o])
			}
			// Against the unrounded inputs: each input is off by at most 2^-9 relative.
			if d := math.Abs(got[o] - exact[o]); !(d <= tol+bound[o]*2.0/256) {
				t.Fatalf("%s: C[%d,%d] = %g, want %g (fp32 inputs) within bf16 rounding", name, i, j, got[o], exact[o])
			}
		}
		for j := N; j < ldc && beta != 0; j++ {
			if got[i*ldc+j] != Cm[i*ldc+j] {
				t.Fatalf("%s: wrote padding C[%d,%d]", name, i, j)
			}
		}
	}
	return got
}

// TestGEMMBF16 covers every bf16 kernel this CPU runs over edge shapes, every transpose, alpha and
// beta, padded leading dimensions and each operand's dtype.
func TestGEMMBF16(t *testing.T) {
	defer useGEMMBF16Kernel("")
	shapes := [][3]int{{1, 1, 1}, {1, 37, 19}, {7, 1, 5}, {5, 9, 0}, {13, 17, 33}, {12, 32, 256}, {70, 45, 301},
		{129, 67, 513}, {33, 200, 7}, {150, 70, 1030}}
	dts := [][3]DType{{BF16, BF16, F32}, {F32, BF16, F32}, {F32, F32, F32}, {BF16, F32, BF16}}
	for _, kernel := range gemmBF16Kernels() {
		if err := useGEMMBF16Kernel(kernel); err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(46, 2))
		for _, s := range shapes {
			for ti, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
				for ai, ab := range [][2]float64{{1, 0}, {0.5, 1}, {-2, 0.25}} {
					dt := dts[(ti+ai)%len(dts)]
					name := fmt.Sprintf("%s/%dx%dx%d/tA=%v/tB=%v/alpha=%g/beta=%g/%v", kernel, s[0], s[1], s[2], tr[0], tr[1], ab[0], ab[1], dt)
					gemmBF16Case(t, r, name, tr[0], tr[1], s[0], s[1], s[2], ab[0], ab[1], dt[0], dt[1], dt[2], true)
				}
			}
		}
	}
}

// TestGEMMBF16TrainingShapes: the products of a training step of the small preset's layer widths,
// as the model runs them (forward x Wᵀ with bf16 weights, backward dy W and dyᵀ x from float32
// activations), at 96 tokens (the float64 reference is slow).
func TestGEMMBF16TrainingShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(46, 3))
	const T, C, I = 96, 512, 1536
	cases := []struct {
		name    string
		tA, tB  bool
		M, N, K int
		a, b    DType
	}{
		{"up_fwd", false, true, T, I, C, F32, BF16},
		{"down_fwd", false, true, T, C, I, F32, BF16},
		{"up_dx", false, false, T, C, I, F32, BF16},
		{"up_dw", true, false, I, C, T, F32, F32},
		{"lm_head_fwd", false, true, 64, 4000, C, BF16, BF16},
		{"lm_head_dw", true, false, 4000, C, 64, F32, F32},
	}
	for _, c := range cases {
		gemmBF16Case(t, r, c.name, c.tA, c.tB, c.M, c.N, c.K, 1, 0, c.a, c.b, F32, false)
	}
}

// TestGEMMBF16KernelsAgree: the vdpbf16ps kernel and the widened-fp32 kernels add the same products
// in the same order, so on normal values they give the same bits.
func TestGEMMBF16KernelsAgree(t *testing.T) {
	defer useGEMMBF16Kernel("")
	ks := gemmBF16Kernels()
	if len(ks) < 2 {
		t.Skip("one bf16 GEMM kernel here")
	}
	for _, s := range [][5]int{{70, 45, 301, 0, 0}, {129, 67, 1100, 1, 0}, {64, 130, 513, 0, 1}, {200, 96, 777, 1, 1}} {
		var first []float64
		for _, k := range ks {
			if err := useGEMMBF16Kernel(k); err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(46, 4))
			got := gemmBF16Case(t, r, k, s[3] == 1, s[4] == 1, s[0], s[1], s[2], 1, 0, F32, BF16, F32, false)
			if first == nil {
				first = got
				continue
			}
			for i := range got {
				if got[i] != first[i] {
					t.Fatalf("%v: %s differs from %s at %d: %.9g vs %.9g", s, k, ks[0], i, got[i], first[i])
				}
			}
		}
	}
}

// TestGEMMBF16VectorPackSameBits compares the vector packing of bf16 operands (vdpbf16ps panels)
// with the scalar loops, bit for bit, over every transpose, odd K, K past one slice, row and column
// counts off the panel widths and padded (odd) leading dimensions; each result is also checked
// against the float64 reference.
func TestGEMMBF16VectorPackSameBits(t *testing.T) {
	defer useGEMMBF16Kernel("")
	defer gemmBF16ScalarPack(false)
	for _, k := range gemmBF16Kernels() {
		if err := useGEMMBF16Kernel(k); err != nil {
			t.Fatal(err)
		}
		for _, s := range [][3]int{{1, 1, 1}, {13, 33, 31}, {12, 32, 32}, {29, 70, 67}, {150, 97, 1045}, {37, 16, 17}} {
			for tr := range 4 {
				tA, tB := tr&1 == 1, tr&2 == 2
				var runs [2][]float64
				for i, scalar := range []bool{true, false} {
					gemmBF16ScalarPack(scalar)
					r := rand.New(rand.NewPCG(46, uint64(tr)))
					name := fmt.Sprintf("%s %v tA=%v tB=%v scalar=%v", k, s, tA, tB, scalar)
					runs[i] = gemmBF16Case(t, r, name, tA, tB, s[0], s[1], s[2], 1, 0.5, BF16, BF16, F32, true)
				}
				sameBits(t, fmt.Sprintf("%s %v tA=%v tB=%v: vector packing, against scalar:", k, s, tA, tB), runs[1], runs[0])
			}
		}
	}
}

// TestGEMMBF16PackRounding packs fp32 rows that each hold one value (a rounding tie, a value that
// rounds up to infinity, NaN, an infinity, a signed zero, a subnormal) at a column that moves from
// row to row, and multiplies them by ones, so that every element of a row of C is that value as the
// packing rounded it: the default packing and the scalar loops give the same bits (NaN as NaN), and every value
// the kernel does not flush (vdpbf16ps zeroes subnormals) is the fp32 value rounded to nearest even.
func TestGEMMBF16PackRounding(t *testing.T) {
	defer useGEMMBF16Kernel("")
	defer gemmBF16ScalarPack(false)
	specials := []float64{1 + 1.0/256, 1 + 3.0/256, -(1 + 5.0/256), 1 + 1.0/256 + 1.0/(1<<20), 3.3961e38, -3.4e38,
		3.38e38, math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 1e-40, -3e-39, 1.1754944e-38, 65504.5, 0.1}
	const N = 8
	for _, k := range gemmBF16Kernels() {
		if err := useGEMMBF16Kernel(k); err != nil {
			t.Fatal(err)
		}
		for _, K := range []int{34, 33} {
			M := 2 * len(specials)
			x := make([]float32, M)
			for i := range x {
				x[i] = float32(specials[i%len(specials)] * float64(1+i/len(specials)))
			}
			x[M-1] = math.Float32frombits(0x7f800001) // a NaN whose payload is below bf16's bits: not infinity
			ones := make([]float64, K*N)
			for i := range ones {
				ones[i] = 1
			}
			for _, tA := range []bool{false, true} {
				a, lda := make([]float32, M*K), K // float32: a NaN's payload stays as it is
				if tA {
					lda = M
				}
				for i := range M {
					col := (i * 5) % K
					if tA {
						a[col*M+i] = x[i]
					} else {
						a[i*K+col] = x[i]
					}
				}
				ab := Alloc(M * K)
				ab.CopyFrom(a)
				t.Cleanup(ab.Free)
				var runs [2][]float64
				for i, scalar := range []bool{true, false} {
					gemmBF16ScalarPack(scalar)
					c := zeros(t, M*N)
					GEMMBF16(tA, false, M, N, K, 1, ab, lda, buf(t, ones), N, 0, c, N)
					runs[i] = read(c)
				}
				for i := range runs[0] {
					s, v := runs[0][i], runs[1][i]
					if math.IsNaN(s) != math.IsNaN(v) || !math.IsNaN(s) && math.Float64bits(s) != math.Float64bits(v) {
						t.Fatalf("%s K=%d tA=%v: C[%d] vector packing %g, scalar %g", k, K, tA, i, v, s)
					}
					xi := x[i/N]
					want := bf16Value(bf16Bits(xi))
					if math.IsNaN(float64(xi)) != math.IsNaN(v) || !math.IsNaN(v) && v != 0 && v != want {
						t.Fatalf("%s K=%d tA=%v: C[%d] = %g, want %g (%g rounded)", k, K, tA, i, v, want, xi)
					}
				}
			}
		}
	}
}

// eachKernelThreads runs f for every bf16 GEMM kernel at 1 and 2 threads.
func eachKernelThreads(t *testing.T, f func(k string, threads int)) {
	t.Helper()
	defer useGEMMBF16Kernel("")
	defer Init(0, 2)
	for _, k := range gemmBF16Kernels() {
		if err := useGEMMBF16Kernel(k); err != nil {
			t.Fatal(err)
		}
		for _, threads := range []int{1, 2} {
			if err := Init(0, threads); err != nil {
				t.Fatal(err)
			}
			f(k, threads)
		}
	}
}

// TestGEMMBF16DirectASameBits checks the products whose bf16 A the vdpbf16ps kernel reads in place
// (not transposed, even K and leading dimension) against packing every operand with the scalar
// loops, bit for bit, at 1 and 2 threads: rows off the panel height, K of several slices.
func TestGEMMBF16DirectASameBits(t *testing.T) {
	defer gemmBF16ScalarPack(false)
	eachKernelThreads(t, func(k string, threads int) {
		for _, s := range [][3]int{{5, 40, 64}, {12, 32, 32}, {29, 70, 1100}, {150, 97, 1046}} {
			for _, tB := range []bool{false, true} {
				var runs [2][]float64
				for i, scalar := range []bool{true, false} {
					gemmBF16ScalarPack(scalar)
					r := rand.New(rand.NewPCG(48, uint64(s[0])))
					name := fmt.Sprintf("%s %v tB=%v scalar=%v threads=%d", k, s, tB, scalar, threads)
					runs[i] = gemmBF16Case(t, r, name, false, tB, s[0], s[1], s[2], 1, 0.5, BF16, BF16, F32, false)
				}
				sameBits(t, fmt.Sprintf("%s %v tB=%v threads=%d: A read in place, against packed:", k, s, tB, threads),
					runs[1], runs[0])
			}
		}
	})
}

// TestGEMMBF16ResidentOrderSameBits runs products of several K slices with each block of C kept
// over all of K (B packed for every slice first) and slice by slice, at 1 and 2 threads: the same
// bits, each checked against the float64 reference.
func TestGEMMBF16ResidentOrderSameBits(t *testing.T) {
	old := gemmBF16ResidentLimit(0)
	defer gemmBF16ResidentLimit(old)
	eachKernelThreads(t, func(k string, threads int) {
		for _, s := range [][3]int{{150, 97, 1100}, {301, 45, 1601}, {13, 200, 2000}} {
			for tr := range 4 {
				tA, tB := tr&1 == 1, tr&2 == 2
				var runs [2][]float64
				for i, limit := range []int{0, 8 << 20} {
					gemmBF16ResidentLimit(limit)
					r := rand.New(rand.NewPCG(47, uint64(tr)))
					name := fmt.Sprintf("%s %v tA=%v tB=%v limit=%d", k, s, tA, tB, limit)
					runs[i] = gemmBF16Case(t, r, name, tA, tB, s[0], s[1], s[2], 1, 0.5, BF16, F32, F32, true)
				}
				sameBits(t, fmt.Sprintf("%s %v tA=%v tB=%v threads=%d: resident order, against slice order:", k, s, tA, tB,
					threads), runs[1], runs[0])
			}
		}
	})
}

func TestGEMMBF16ThreadCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(46, 5))
	M, N, K := 301, 257, 600
	A, B := bufBF16(t, randn(r, M*K, 1)), bufBF16(t, randn(r, K*N, 1))
	run := func(threads int) []float64 {
		if err := Init(0, threads); err != nil {
			t.Fatal(err)
		}
		c := zeros(t, M*N)
		GEMMBF16(false, false, M, N, K, 1, A, K, B, N, 0, c, N)
		return read(c)
	}
	defer Init(0, 2)
	one, two := run(1), run(2)
	for i := range two {
		if two[i] != one[i] {
			t.Fatalf("1 and 2 threads differ at %d: %g vs %g", i, one[i], two[i])
		}
	}
}

// TestLinearBF16: the forward and both backward products of a linear layer with bfloat16 weights
// against float64 sums of the bf16-rounded operands, and a decode step's rows (T of 1 to 9) the
// same bits as the same rows inside a 64-row forward.
func TestLinearBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(46, 6))
	const T, in, out = 64, 96, 200
	x, w, b, dy := rounded(randn(r, T*in, 1)), randn(r, out*in, 0.1), rounded(randn(r, out, 1)), rounded(randn(r, T*out, 1))
	w16 := bf16Rounded(w)
	xb, wb, bb, dyb := buf(t, x), bufBF16(t, w), buf(t, b), buf(t, dy)
	y := zeros(t, T*out)
	LinearForward(y, xb, wb, bb, T, in, out) // a bfloat16 w routes to LinearForwardBF16
	want := refLinear(bf16Rounded(x), w16, b, T, in, out)
	closeTo(t, "y", read(y), want, 1e-4, 1e-4)

	dx, dw, db := buf(t, make([]float64, T*in)), buf(t, make([]float64, out*in)), zeros(t, out)
	dw0 := randn(r, out*in, 1)
	dw.CopyFrom(f32s(dw0))
	LinearBackward(dx, dw, db, dyb, xb, wb, T, in, out)
	dy16, x16 := bf16Rounded(dy), bf16Rounded(x)
	wantDx, wantDw, wantDb := make([]float64, T*in), append([]float64(nil), dw0...), make([]float64, out)
	for ti := 0; ti < T; ti++ {
		for o := 0; o < out; o++ {
			wantDb[o] += dy[ti*out+o]
			for i := 0; i < in; i++ {
				wantDx[ti*in+i] += dy16[ti*out+o] * w16[o*in+i]
				wantDw[o*in+i] += dy16[ti*out+o] * x16[ti*in+i]
			}
		}
	}
	closeTo(t, "dx", read(dx), wantDx, 1e-4, 1e-4)
	closeTo(t, "dw", read(dw), wantDw, 1e-4, 1e-4)
	closeTo(t, "db", read(db), wantDb, 1e-4, 1e-5)

	full := read(y)
	for _, rows := range []int{1, 2, 3, 8, 9} {
		ys := zeros(t, rows*out)
		LinearForwardBF16(ys, xb.Slice(5*in, rows*in), wb, bb, rows, in, out)
		got := read(ys)
		for i := range got {
			if got[i] != full[5*out+i] {
				t.Fatalf("%d rows: y[%d] = %.9g, the 64-row forward gave %.9g", rows, i, got[i], full[5*out+i])
			}
		}
	}
}

func f32s(x []float64) []float32 {
	f := make([]float32, len(x))
	for i, v := range x {
		f[i] = float32(v)
	}
	return f
}

// Prepacked bf16 weights give LinearForwardBF16's bits at every row count, on every kernel (and a
// weight packed under another kernel falls back to w).
func TestLinearBF16PackedSameBits(t *testing.T) {
	defer useGEMMBF16Kernel("")
	r := rand.New(rand.NewPCG(46, 7))
	const in, out = 600, 333 // two K slices, edge panels
	x, w, b := rounded(randn(r, 150*in, 1)), randn(r, out*in, 0.1), rounded(randn(r, out, 1))
	xb, wb, bb := buf(t, x), bufBF16(t, w), buf(t, b)
	var other Buf
	for ki, k := range gemmBF16Kernels() {
		if err := useGEMMBF16Kernel(k); err != nil {
			t.Fatal(err)
		}
		wp := Alloc(PackedLinearBF16Words(in, out))
		t.Cleanup(wp.Free)
		PackLinearBF16(wp, wb, in, out)
		if ki == 0 {
			other = wp
		}
		for _, T := range []int{1, 2, 5, 12, 13, 40, 150} { // 150: more than one block of rows
			want, got, fallback := zeros(t, T*out), zeros(t, T*out), zeros(t, T*out)
			LinearForwardBF16(want, xb, wb, bb, T, in, out)
			LinearForwardBF16Packed(got, xb, wb, wp, bb, T, in, out)
			LinearForwardBF16Packed(fallback, xb, wb, other, bb, T, in, out)
			wv, gv, fv := read(want), read(got), read(fallback)
			for i := range wv {
				if gv[i] != wv[i] || fv[i] != wv[i] {
					t.Fatalf("%s, %d rows: y[%d] packed %.9g, packed for %s %.9g, unpacked %.9g", k, T, i, gv[i], gemmBF16Kernels()[0], fv[i], wv[i])
				}
			}
		}
	}
}

// TestLinearBF16PackedMultiSameBits: several packed bf16 products of one input in one call give the
// bits of LinearForwardBF16 one by one, for every kernel, on 1 and 2 threads, from a decode step's
// few rows to more than one block of rows (where the call runs them one at a time).
func TestLinearBF16PackedMultiSameBits(t *testing.T) {
	defer useGEMMBF16Kernel("")
	defer Init(0, 2)
	r := rand.New(rand.NewPCG(46, 8))
	const in = 600
	outs := []int{333, 64, 100}
	x := rounded(randn(r, 150*in, 1))
	xb := buf(t, x)
	var ws, bs []Buf
	for i, out := range outs {
		ws = append(ws, bufBF16(t, randn(r, out*in, 0.1)))
		if i != 1 {
			bs = append(bs, buf(t, rounded(randn(r, out, 1))))
		} else {
			bs = append(bs, Buf{}) // one without a bias
		}
	}
	for _, k := range gemmBF16Kernels() {
		if err := useGEMMBF16Kernel(k); err != nil {
			t.Fatal(err)
		}
		var wps []Buf
		for i, out := range outs {
			wp := Alloc(PackedLinearBF16Words(in, out))
			t.Cleanup(wp.Free)
			PackLinearBF16(wp, ws[i], in, out)
			wps = append(wps, wp)
		}
		for _, threads := range []int{1, 2} {
			if err := Init(0, threads); err != nil {
				t.Fatal(err)
			}
			for _, T := range []int{1, 3, 8, 13, 40, 150} {
				var ls []Linear
				var wants []Buf
				for i, out := range outs {
					want := zeros(t, T*out)
					LinearForwardBF16(want, xb, ws[i], bs[i], T, in, out)
					wants = append(wants, want)
					ls = append(ls, Linear{Y: zeros(t, T*out), W: ws[i], WP: wps[i], B: bs[i], Out: out})
				}
				LinearForwardBF16PackedMulti(xb, T, in, ls...)
				for i := range ls {
					wv, gv := read(wants[i]), read(ls[i].Y)
					for j := range wv {
						if gv[j] != wv[j] {
							t.Fatalf("%s, %d threads, %d rows, product %d: y[%d] multi %.9g, one by one %.9g", k, threads, T, i, j, gv[j], wv[j])
						}
					}
				}
			}
		}
	}
}
