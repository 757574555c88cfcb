package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The bounds of the bf16 ops against their fp32 twins.
//
// u = 2^-8 is bfloat16's unit roundoff: rounding to nearest gives bf16(x) = x(1+δ), |δ| ≤ u (8
// significand bits). A product of two rounded operands is then ab(1+δ₁)(1+δ₂), off by at most
// (2u+u²)|ab|, and it is exact in float32 (8+8 significand bits), so the only other error of a
// K-term bf16 dot product is its float32 accumulation, at most γ_K·Σ|a_k b_k| with γ_K =
// K·2^-24/(1−K·2^-24) in any summation order. The fp32 kernel's own error is at most γ_K·Σ|a_k b_k|
// too. Hence, element by element,
//
//	|y_bf16 − y_exact| ≤ (2u + u² + γ_K)·Σ|a_k||b_k|,   |y_fp32 − y_exact| ≤ γ_K·Σ|a_k||b_k|,
//	|y_bf16 − y_fp32|  ≤ (2u + u² + 2γ_K)·Σ|a_k||b_k|  = u·(2 + u + 2γ_K/u)·Σ|a_k||b_k|,
//
// a factor of about 2 + K·2^-15 units u (2.02 at K = 600): the K-dependence is the float32 sums',
// the 2 is one rounding of each operand. A bias adds one more term (K+1). The bound is worst case
// (every rounding error of one sign); random errors give about u·Σ|a_k||b_k|/√K, which the test
// logs as the ratio of the largest error to the bound. y_exact is a float64 product of the same
// inputs: the fp32 kernel is checked against it too, so neither path is only compared with itself.
const bf16U = 1.0 / 256

func gammaF32(K int) float64 { k := float64(K) * 0x1p-24; return k / (1 - k) }

// bf16ProductFactor is the bound's factor of Σ|a_k||b_k| between a bf16 and an fp32 product of K terms.
func bf16ProductFactor(K int) float64 { return 2*bf16U + bf16U*bf16U + 2*gammaF32(K) }

// worstRatio is the largest |got − ref| / bound over the elements (0 where both differences and
// bound are 0, +Inf where only the bound is) and where it is.
func worstRatio(got, ref, bound []float64) (float64, int) {
	worst, at := 0.0, -1
	for i := range ref {
		d := math.Abs(got[i] - ref[i])
		r := 0.0
		switch {
		case d == 0:
		case bound[i] == 0 || math.IsNaN(d):
			r = math.Inf(1)
		default:
			r = d / bound[i]
		}
		if r > worst || at < 0 {
			worst, at = r, i
		}
	}
	return worst, at
}

// transpose of x[rows,cols].
func transpose(x []float64, rows, cols int) []float64 {
	y := make([]float64, len(x))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			y[j*rows+i] = x[i*cols+j]
		}
	}
	return y
}

// exactProduct is C = A[M,K]·B[K,N] + bias (bias may be nil) in float64, and Σ|a||b| + |bias|.
func exactProduct(A, B, bias []float64, M, K, N int) (c, abs []float64) {
	c, abs = make([]float64, M*N), make([]float64, M*N)
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			var s, a float64
			if bias != nil {
				s, a = bias[j], math.Abs(bias[j])
			}
			for k := 0; k < K; k++ {
				p := A[i*K+k] * B[k*N+j]
				s += p
				a += math.Abs(p)
			}
			c[i*N+j], abs[i*N+j] = s, a
		}
	}
	return c, abs
}

func scaled(x []float64, f float64) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = v * f
	}
	return y
}

// weightBuf is w as a bfloat16 (rounded) or a float32 buffer.
func weightBuf(t *testing.T, w []float64, low bool) Buf {
	if low {
		return bufBF16(t, w)
	}
	return buf(t, w)
}

// bf16ProductOp is one op with a bf16 path, seen as C[M,N] = A[M,K]·B[K,N] (+ bias): run computes
// it with the op in bf16 (low) or with its fp32 twin.
type bf16ProductOp struct {
	name    string
	M, K, N int
	bias    bool
	run     func(t *testing.T, A, B, bias []float64, M, K, N int, low bool) []float64
}

var bf16ProductOps = []bf16ProductOp{
	// y[T,out] = x[T,in]·w[out,in]ᵀ + b: A = x, B = wᵀ, K = in.
	{"linear forward", 64, 96, 200, true, func(t *testing.T, A, B, bias []float64, M, K, N int, low bool) []float64 {
		y := zeros(t, M*N)
		LinearForward(y, buf(t, A), weightBuf(t, transpose(B, K, N), low), buf(t, bias), M, K, N)
		return read(y)
	}},
	// dx[T,in] += dy[T,out]·w[out,in]: A = dy, B = w, K = out.
	{"linear backward dx", 48, 200, 96, false, func(t *testing.T, A, B, _ []float64, M, K, N int, low bool) []float64 {
		dx := zeros(t, M*N)
		LinearBackward(dx, Buf{}, Buf{}, buf(t, A), Buf{}, weightBuf(t, B, low), M, N, K)
		return read(dx)
	}},
	// dw[out,in] += dy[T,out]ᵀ·x[T,in]: A = dyᵀ, B = x, K = T (w only selects the bf16 path).
	{"linear backward dw", 96, 130, 80, false, func(t *testing.T, A, B, _ []float64, M, K, N int, low bool) []float64 {
		dw := zeros(t, M*N)
		LinearBackward(Buf{}, dw, Buf{}, buf(t, transpose(A, M, K)), buf(t, B), weightBuf(t, make([]float64, M*N), low), K, N, M)
		return read(dw)
	}},
	// The lm_head's input gradient, dx[n,C] = dlogits[n,V]·W[V,C] (GEMMBF16 with a float32 C, beta 0,
	// as the model's loss chunks call it), K = V.
	{"GEMMBF16 (lm_head dx)", 32, 384, 128, false, func(t *testing.T, A, B, _ []float64, M, K, N int, low bool) []float64 {
		c := buf(t, randn(rand.New(rand.NewPCG(1, 1)), M*N, 1)) // beta 0 overwrites it
		if low {
			GEMMBF16(false, false, M, N, K, 1, buf(t, A), K, bufBF16(t, B), N, 0, c, N)
		} else {
			SGEMM(false, false, M, N, K, 1, buf(t, A), K, buf(t, B), N, 0, c, N)
		}
		return read(c)
	}},
	// A decode step's product on prepacked weights (two K slices, edge panels): bf16
	// LinearForwardBF16Packed against the fp32 LinearForwardPacked.
	{"packed decode product", 3, 600, 333, true, func(t *testing.T, A, B, bias []float64, M, K, N int, low bool) []float64 {
		y, w := zeros(t, M*N), weightBuf(t, transpose(B, K, N), low)
		if low {
			wp := Alloc(PackedLinearBF16Words(K, N))
			t.Cleanup(wp.Free)
			PackLinearBF16(wp, w, K, N)
			LinearForwardBF16Packed(y, buf(t, A), w, wp, buf(t, bias), M, K, N)
		} else {
			wp := Alloc(PackedLinearFloats(K, N))
			t.Cleanup(wp.Free)
			PackLinear(wp, w, K, N)
			LinearForwardPacked(y, buf(t, A), w, wp, buf(t, bias), M, K, N)
		}
		return read(y)
	}},
	// The multi-product call (q, k, v of a decode step): B's columns split into three products of
	// 100, 64 and 36 outputs, their rows laid side by side again.
	{"packed multi-product", 5, 256, 200, true, func(t *testing.T, A, B, bias []float64, M, K, N int, low bool) []float64 {
		outs := []int{100, 64, 36}
		x := buf(t, A)
		var ls []Linear
		j0 := 0
		for _, out := range outs {
			w := make([]float64, out*K) // w[o,k] = B[k, j0+o]
			for o := 0; o < out; o++ {
				for k := 0; k < K; k++ {
					w[o*K+k] = B[k*N+j0+o]
				}
			}
			wb := weightBuf(t, w, low)
			var wp Buf
			if low {
				wp = Alloc(PackedLinearBF16Words(K, out))
				PackLinearBF16(wp, wb, K, out)
			} else {
				wp = Alloc(PackedLinearFloats(K, out))
				PackLinear(wp, wb, K, out)
			}
			t.Cleanup(wp.Free)
			ls = append(ls, Linear{Y: zeros(t, M*out), W: wb, WP: wp, B: buf(t, bias[j0:j0+out]), Out: out})
			j0 += out
		}
		if low {
			LinearForwardBF16PackedMulti(x, M, K, ls...)
		} else {
			LinearForwardPackedMulti(x, M, K, ls...)
		}
		y := make([]float64, M*N)
		j0 = 0
		for i, out := range outs {
			yi := read(ls[i].Y)
			for r := 0; r < M; r++ {
				copy(y[r*N+j0:r*N+j0+out], yi[r*out:(r+1)*out])
			}
			j0 += out
		}
		return y
	}},
}

// TestBF16OpsWithinBound: every op with a bf16 path against its fp32 twin and a float64 product of
// the same inputs, element by element, within the bounds above; then the same op with one term of
// one sum dropped (the largest, as a kernel that skipped an element of K would) must break the
// bound, so the bound is tight enough to catch a wrong result.
func TestBF16OpsWithinBound(t *testing.T) {
	for _, kernel := range gemmBF16Kernels() {
		if err := useGEMMBF16Kernel(kernel); err != nil {
			t.Fatal(err)
		}
		for oi, op := range bf16ProductOps {
			t.Run(kernel+"/"+op.name, func(t *testing.T) {
				r := rand.New(rand.NewPCG(47, uint64(oi)))
				M, K, N := op.M, op.K, op.N
				A, B := rounded(randn(r, M*K, 1)), rounded(randn(r, K*N, 0.1))
				var bias []float64
				if op.bias {
					bias = rounded(randn(r, N, 0.5))
				}
				exact, abs := exactProduct(A, B, bias, M, K, N)
				kk := K
				if op.bias {
					kk++
				}
				lowB, fullB, exactB := make([]float64, M*N), make([]float64, M*N), make([]float64, M*N)
				for i, a := range abs {
					lowB[i] = bf16ProductFactor(kk) * a
					fullB[i] = gammaF32(kk) * a
					exactB[i] = (2*bf16U + bf16U*bf16U + gammaF32(kk)) * a
				}
				low, full := op.run(t, A, B, bias, M, K, N, true), op.run(t, A, B, bias, M, K, N, false)
				rl, il := worstRatio(low, full, lowB)
				rf, iff := worstRatio(full, exact, fullB)
				re, ie := worstRatio(low, exact, exactB)
				t.Logf("K %d, bound (2u + u² + 2γ_K)·Σ|a||b| = %.4f u·Σ|a||b|: worst |bf16 − fp32| %.3g of it; |fp32 − exact| %.3g of γ_K·Σ; |bf16 − exact| %.3g of its bound",
					kk, bf16ProductFactor(kk)/bf16U, rl, rf, re)
				if rl > 1 || rf > 1 || re > 1 {
					t.Fatalf("out of bound: bf16 %.9g vs fp32 %.9g at %d (ratio %.3g); fp32 %.9g vs exact %.9g at %d (%.3g); bf16 vs exact at %d (%.3g)",
						low[il], full[il], il, rl, full[iff], exact[iff], iff, rf, ie, re)
				}
				if rl == 0 {
					t.Fatal("bf16 and fp32 agree exactly: the bf16 path did not run")
				}
				// A wrong result: the largest term a_ik·b_kj of all sums left out (a_ik = 0).
				bi, bk, big := 0, 0, 0.0
				for i := 0; i < M; i++ {
					for k := 0; k < K; k++ {
						for j := 0; j < N; j++ {
							if p := math.Abs(A[i*K+k] * B[k*N+j]); p > big {
								bi, bk, big = i, k, p
							}
						}
					}
				}
				bad := append([]float64(nil), A...)
				bad[bi*K+bk] = 0
				if rb, _ := worstRatio(op.run(t, bad, B, bias, M, K, N, true), full, lowB); rb <= 1 {
					t.Fatalf("dropping the term %.3g of row %d left the bf16 result within the bound (ratio %.3g)", big, bi, rb)
				} else {
					t.Logf("one term dropped: worst ratio %.3g", rb)
				}
			})
		}
	}
	useGEMMBF16Kernel("")
}

// The lm_head and cross-entropy of one loss chunk as the model runs it (LinearForward, SoftmaxXent
// writing dlogits over the logits, GEMMBF16 for dx, LinearBackward for dW), bf16 weights against
// fp32 ones. Bounds, from the product bound: each logit z_j moves by at most
// E_j = (2u+u²+2γ_C)·Σ_c|h_c||W_jc|; log p_t = z_t − logsumexp(z) and logsumexp moves by at most
// E = max_j E_j, so |Δ log p_t| ≤ E_t + E (+ fp32 softmax rounding, ε = 1e-5·(1+|log p_t|)); each
// probability moves by a factor within e^{±2E}, so |Δ dlogits_j| ≤ |w|·p_j·(e^{2E} − 1 + ε) =: D_j;
// dx and dW are products of dlogits, rounded again in bf16: |Δ| ≤ Σ (D + f·(|dlogits| + D))·|other|
// with f the product factor of their K (V for dx, chunk rows for dW).
func TestBF16LossChunkWithinBound(t *testing.T) {
	const n, C, V = 24, 128, 384
	r := rand.New(rand.NewPCG(47, 100))
	h, W := rounded(randn(r, n*C, 1)), rounded(randn(r, V*C, 0.05))
	targets, wt := make([]int32, n), make([]float64, n)
	for i := range targets {
		targets[i], wt[i] = int32(r.IntN(V)), float64(float32(r.Float64()*2-0.5))
	}
	run := func(h []float64, low bool) (lp, dx, dW []float64) {
		hb, Wb := buf(t, h), weightBuf(t, W, low)
		logits, lpb, dxb, dWb := zeros(t, n*V), zeros(t, n), buf(t, randn(r, n*C, 1)), zeros(t, V*C)
		LinearForward(logits, hb, Wb, Buf{}, n, C, V)
		SoftmaxXent(lpb, logits, logits, bufI32(t, targets), buf(t, wt), n, V)
		if low {
			GEMMBF16(false, false, n, C, V, 1, logits, V, Wb, C, 0, dxb, C)
		} else {
			SGEMM(false, false, n, C, V, 1, logits, V, Wb, C, 0, dxb, C)
		}
		LinearBackward(Buf{}, dWb, Buf{}, logits, hb, Wb, n, C, V)
		return read(lpb), read(dxb), read(dWb)
	}
	// The float64 reference and the bounds.
	z, absZ := exactProduct(h, transpose(W, V, C), nil, n, C, V)
	eps := 1e-5
	lpRef, dlog, D := make([]float64, n), make([]float64, n*V), make([]float64, n*V)
	lpB := make([]float64, n)
	for i := 0; i < n; i++ {
		row, E := z[i*V:(i+1)*V], 0.0
		mx := math.Inf(-1)
		for j, v := range row {
			mx = max(mx, v)
			E = max(E, bf16ProductFactor(C)*absZ[i*V+j])
		}
		var s float64
		for _, v := range row {
			s += math.Exp(v - mx)
		}
		lse := mx + math.Log(s)
		lpRef[i] = row[targets[i]] - lse
		lpB[i] = bf16ProductFactor(C)*absZ[i*V+int(targets[i])] + E + eps*(1+math.Abs(lpRef[i]))
		for j, v := range row {
			p := math.Exp(v - lse)
			g := p
			if j == int(targets[i]) {
				g--
			}
			dlog[i*V+j] = wt[i] * g
			D[i*V+j] = math.Abs(wt[i]) * p * (math.Expm1(2*E) + eps)
		}
	}
	fx, fw := bf16ProductFactor(V), bf16ProductFactor(n)
	dxB, dWB := make([]float64, n*C), make([]float64, V*C)
	for i := 0; i < n; i++ {
		for j := 0; j < V; j++ {
			d, a := D[i*V+j], math.Abs(dlog[i*V+j])
			for c := 0; c < C; c++ {
				dxB[i*C+c] += (d + fx*(a+d)) * math.Abs(W[j*C+c])
				dWB[j*C+c] += (d + fw*(a+d)) * math.Abs(h[i*C+c])
			}
		}
	}
	check := func(lp, dx, dW, lp32, dx32, dW32 []float64) (worst float64, what string) {
		for _, c := range []struct {
			name          string
			got, ref, bnd []float64
		}{{"log p", lp, lp32, lpB}, {"dx", dx, dx32, dxB}, {"dW", dW, dW32, dWB}} {
			if r, _ := worstRatio(c.got, c.ref, c.bnd); r > worst {
				worst, what = r, c.name
			}
		}
		return worst, what
	}
	for _, kernel := range gemmBF16Kernels() {
		if err := useGEMMBF16Kernel(kernel); err != nil {
			t.Fatal(err)
		}
		lp, dx, dW := run(h, true)
		lp32, dx32, dW32 := run(h, false)
		if r, _ := worstRatio(lp32, lpRef, scaled(lpB, 1e-3)); r > 1 { // fp32 against float64: far inside
			t.Fatalf("%s: fp32 log-probabilities off the float64 ones by %.3g of the bf16 bound/1000", kernel, r)
		}
		worst, what := check(lp, dx, dW, lp32, dx32, dW32)
		t.Logf("%s: worst |bf16 − fp32| / bound %.3g (%s)", kernel, worst, what)
		if worst > 1 {
			t.Fatalf("%s: bf16 loss chunk out of bound: %s ratio %.3g", kernel, what, worst)
		}
		if worst == 0 {
			t.Fatalf("%s: bf16 and fp32 loss chunks agree exactly: the bf16 path did not run", kernel)
		}
		// A wrong result: the largest element of the chunk's input left out.
		bad, bi := append([]float64(nil), h...), 0
		for i, v := range h {
			if math.Abs(v) > math.Abs(h[bi]) {
				bi = i
			}
		}
		bad[bi] = 0
		lp, dx, dW = run(bad, true)
		if w, what := check(lp, dx, dW, lp32, dx32, dW32); w <= 1 {
			t.Fatalf("%s: zeroing h[%d] = %.3g left the loss chunk within the bound (worst %.3g, %s)", kernel, bi, h[bi], w, what)
		}
	}
	useGEMMBF16Kernel("")
}

// The embedding from a bfloat16 table (an inference-only bf16 model's) is the fp32 table's rows
// rounded to bf16: |Δ| ≤ u·|e| element by element, and exactly the reference rounding.
func TestBF16EmbeddingWithinBound(t *testing.T) {
	const T, V, C = 40, 300, 72
	r := rand.New(rand.NewPCG(47, 101))
	table := rounded(randn(r, V*C, 0.5))
	ids := make([]int32, T)
	for i := range ids {
		ids[i] = int32(r.IntN(V))
	}
	run := func(ids []int32, low bool) []float64 {
		out := zeros(t, T*C)
		EmbeddingForward(out, bufI32(t, ids), weightBuf(t, table, low), T, C)
		return read(out)
	}
	low, full := run(ids, true), run(ids, false)
	bound, exact := make([]float64, T*C), make([]float64, T*C)
	for i, id := range ids {
		row := bf16Rounded(table[int(id)*C : int(id+1)*C])
		for c := 0; c < C; c++ {
			exact[i*C+c] = table[int(id)*C+c]
			bound[i*C+c] = bf16U * math.Abs(exact[i*C+c])
			if low[i*C+c] != row[c] {
				t.Fatalf("token %d, column %d: %g, want %g (the fp32 row rounded to bf16)", i, c, low[i*C+c], row[c])
			}
		}
	}
	if r, _ := worstRatio(full, exact, make([]float64, T*C)); r != 0 {
		t.Fatal("the fp32 embedding is not the table's rows")
	}
	rl, _ := worstRatio(low, full, bound)
	t.Logf("worst |bf16 − fp32| %.3g of u·|e|", rl)
	if rl > 1 || rl == 0 {
		t.Fatalf("bf16 embedding: worst ratio %.3g to u·|e|, want in (0, 1]", rl)
	}
	bad := append([]int32(nil), ids...)
	bad[7] = (bad[7] + 1) % V
	if rb, _ := worstRatio(run(bad, true), full, bound); rb <= 1 {
		t.Fatalf("a wrong row stayed within the bound (ratio %.3g)", rb)
	}
}
