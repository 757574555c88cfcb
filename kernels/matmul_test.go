package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// refGEMM returns alpha*op(A)*op(B) + beta*C in float64 and the bound sum|a||b| per element used
// for the float32 tolerance.
func refGEMM(tA, tB bool, M, N, K int, alpha float64, A []float64, lda int, B []float64, ldb int, beta float64, C []float64, ldc int) (want, bound []float64) {
	want = append([]float64(nil), C...)
	bound = make([]float64, len(C))
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			s, abs := 0.0, 0.0
			for p := 0; p < K; p++ {
				var a, b float64
				if tA {
					a = A[p*lda+i]
				} else {
					a = A[i*lda+p]
				}
				if tB {
					b = B[j*ldb+p]
				} else {
					b = B[p*ldb+j]
				}
				s += a * b
				abs += math.Abs(a * b)
			}
			c := alpha * s
			if beta != 0 {
				c += beta * C[i*ldc+j]
			}
			want[i*ldc+j] = c
			bound[i*ldc+j] = math.Abs(alpha)*abs + math.Abs(beta*C[i*ldc+j])
		}
	}
	return want, bound
}

// TestSGEMM runs every microkernel this CPU can run (and the few-rows path) over edge shapes, all
// transposes, alpha and beta, leading dimensions with padding.
func TestSGEMM(t *testing.T) {
	defer useSGEMMKernel("")
	r := rand.New(rand.NewPCG(1, 2))
	shapes := [][3]int{{1, 1, 1}, {1, 37, 19}, {7, 1, 5}, {5, 9, 0}, {13, 17, 33}, {6, 16, 256}, {70, 45, 300},
		{129, 67, 513}, {33, 200, 7}, {300, 130, 260}, {5, 4200, 3}, {3, 700, 200}, {8, 300, 100}, {9, 300, 100}}
	for _, s := range shapes {
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			for _, ab := range [][2]float64{{1, 0}, {0.5, 1}, {-2, 0.25}} {
				M, N, K := s[0], s[1], s[2]
				tA, tB := tr[0], tr[1]
				ar, ac, br, bc := M, K, K, N
				if tA {
					ar, ac = K, M
				}
				if tB {
					br, bc = N, K
				}
				lda, ldb, ldc := ac+r.IntN(3), bc+r.IntN(3), N+r.IntN(3)
				A := rounded(randn(r, max(1, ar*lda), 1))
				B := rounded(randn(r, max(1, br*ldb), 1))
				Cm := rounded(randn(r, max(1, M*ldc), 1))
				name := fmt.Sprintf("%dx%dx%d/tA=%v/tB=%v/alpha=%g/beta=%g", M, N, K, tA, tB, ab[0], ab[1])
				want, bound := refGEMM(tA, tB, M, N, K, ab[0], A, lda, B, ldb, ab[1], Cm, ldc)
				for _, kernel := range sgemmKernels() {
					if err := useSGEMMKernel(kernel); err != nil {
						t.Fatal(err)
					}
					checkSGEMM(t, name+"/"+kernel, tA, tB, M, N, K, ab[0], A, lda, B, ldb, ab[1], Cm, ldc, want, bound)
				}
			}
		}
	}
}

func checkSGEMM(t *testing.T, name string, tA, tB bool, M, N, K int, alpha float64, A []float64, lda int, B []float64, ldb int,
	beta float64, Cm []float64, ldc int, want, bound []float64) {
	cb := buf(t, Cm)
	if beta == 0 { // beta 0 must not read C: poison it
		f := make([]float32, cb.Len())
		for i := range f {
			f[i] = float32(math.NaN())
		}
		cb.CopyFrom(f)
	}
	SGEMM(tA, tB, M, N, K, float32(alpha), buf(t, A), lda, buf(t, B), ldb, float32(beta), cb, ldc)
	got := read(cb)
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			o := i*ldc + j
			if d := math.Abs(got[o] - want[o]); !(d <= 1e-6*bound[o]*float64(K+4)+1e-6) {
				t.Fatalf("%s: C[%d,%d] = %g, want %g", name, i, j, got[o], want[o])
			}
		}
		for j := N; j < ldc && beta != 0; j++ { // padding untouched
			if got[i*ldc+j] != Cm[i*ldc+j] {
				t.Fatalf("%s: wrote padding C[%d,%d]", name, i, j)
			}
		}
	}
}

func TestSGEMMThreadCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	M, N, K := 301, 257, 300
	A, B := buf(t, randn(r, M*K, 1)), buf(t, randn(r, K*N, 1))
	run := func(threads int) []float64 {
		if err := Init(0, threads); err != nil {
			t.Fatal(err)
		}
		c := zeros(t, M*N)
		SGEMM(false, false, M, N, K, 1, A, K, B, N, 0, c, N)
		return read(c)
	}
	defer Init(0, 2)
	one, two, again := run(1), run(2), run(2)
	closeTo(t, "2 threads vs 1", two, one, 1e-4, 1e-5)
	for i := range two {
		if two[i] != again[i] {
			t.Fatalf("two runs at 2 threads differ at %d: %g vs %g", i, two[i], again[i])
		}
	}
}

// TestSGEMMTransposedBSameBits: C = A·Bᵀ from B as stored (NT: packing transposes it) and from Bᵀ
// written out (NN: packing copies rows) packs the same panels, so the products agree bit for bit —
// over panels cut short (N not a multiple of the panel width), K slices with a ragged end, and
// several threads.
func TestSGEMMTransposedBSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, s := range []struct{ M, N, K int }{{40, 203, 389}, {9, 16, 8}, {130, 1536, 130}, {64, 37, 1000}} {
		A, Bv := buf(t, randn(r, s.M*s.K, 1)), randn(r, s.N*s.K, 1)
		Bt := make([]float64, len(Bv))
		for n := range s.N {
			for k := range s.K {
				Bt[k*s.N+n] = Bv[n*s.K+k]
			}
		}
		nt, nn := zeros(t, s.M*s.N), zeros(t, s.M*s.N)
		SGEMM(false, true, s.M, s.N, s.K, 1, A, s.K, buf(t, Bv), s.K, 0, nt, s.N)
		SGEMM(false, false, s.M, s.N, s.K, 1, A, s.K, buf(t, Bt), s.N, 0, nn, s.N)
		a, b := read(nt), read(nn)
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%+v: element %d: %g from B, %g from Bᵀ", s, i, a[i], b[i])
			}
		}
	}
}

// TestSGEMMPartitionsAgreeBitForBit: however C is cut into work units (column slices in a
// multiple of the threads, row slices of MR panels, KC slices of K) every element sees the same K
// order, so 1 to 4 threads give the same bits, transposed or not.
func TestSGEMMPartitionsAgreeBitForBit(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	defer Init(0, 2)
	for _, s := range []struct {
		ta, tb  bool
		M, N, K int
	}{
		{false, false, 301, 257, 300}, // one column slice: row slices
		{false, true, 50, 2100, 400},  // three slices of NC: rounded up to a multiple of the threads
		{false, true, 97, 1536, 130},
		{true, false, 700, 40, 900}, // dW-like: A transposed, K past one KC slice
		{true, false, 13, 600, 70},  // fewer MR panels than threads want
	} {
		lda, ldb := s.K, s.N
		if s.ta {
			lda = s.M
		}
		if s.tb {
			ldb = s.K
		}
		A, B := buf(t, randn(r, s.M*s.K, 1)), buf(t, randn(r, s.K*s.N, 1))
		var first []float64
		for threads := 1; threads <= 4; threads++ {
			if err := Init(0, threads); err != nil {
				t.Fatal(err)
			}
			c := zeros(t, s.M*s.N)
			SGEMM(s.ta, s.tb, s.M, s.N, s.K, 1, A, lda, B, ldb, 0, c, s.N)
			got := read(c)
			if first == nil {
				first = got
				continue
			}
			for i := range got {
				if got[i] != first[i] {
					t.Fatalf("%+v: %d threads differ from 1 at %d: %g vs %g", s, threads, i, got[i], first[i])
				}
			}
		}
	}
}

func TestLinear(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	T, in, out := 5, 7, 6
	x, w, b := rounded(randn(r, T*in, 1)), rounded(randn(r, out*in, 1)), rounded(randn(r, out, 1))
	dy := rounded(randn(r, T*out, 1))
	for _, withBias := range []bool{true, false} {
		bias, bb := b, buf(t, b)
		if !withBias {
			bias, bb = nil, Buf{}
		}
		y := zeros(t, T*out)
		LinearForward(y, buf(t, x), buf(t, w), bb, T, in, out)
		closeTo(t, "y", read(y), refLinear(x, w, bias, T, in, out), 1e-5, 1e-5)

		// Gradients add into what is there: start from ones and subtract them after.
		ones := func(n int) Buf {
			o := make([]float64, n)
			for i := range o {
				o[i] = 1
			}
			return buf(t, o)
		}
		dx, dw, db := ones(T*in), ones(out*in), ones(out)
		LinearBackward(dx, dw, db, buf(t, dy), buf(t, x), buf(t, w), T, in, out)
		loss := func(x, w, b []float64) float64 { return dotAll(dy, refLinear(x, w, b, T, in, out)) }
		sub1 := func(v []float64) []float64 {
			for i := range v {
				v[i]--
			}
			return v
		}
		closeTo(t, "dx", sub1(read(dx)), numericGrad(func(v []float64) float64 { return loss(v, w, b) }, x), 1e-4, 1e-4)
		closeTo(t, "dw", sub1(read(dw)), numericGrad(func(v []float64) float64 { return loss(x, v, b) }, w), 1e-4, 1e-4)
		closeTo(t, "db", sub1(read(db)), numericGrad(func(v []float64) float64 { return loss(x, w, v) }, b), 1e-4, 1e-4)
	}
}
