package gpu

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"math"
	"time"
	"unsafe"

	"gorstar/kernels"
)

func math32bits(f float32) uint32 { return math.Float32bits(f) }

func need(op, arg string, b Buf, n int, dt kernels.DType) {
	if b.p == 0 && n > 0 {
		panic(fmt.Sprintf("gpu: %s: %s is nil, want %d %s elements", op, arg, n, dt))
	}
	optional(op, arg, b, n, dt)
}

func optional(op, arg string, b Buf, n int, dt kernels.DType) {
	if b.p == 0 {
		return
	}
	if b.dt != dt {
		panic(fmt.Sprintf("gpu: %s: %s is %s, want %s", op, arg, b.dt, dt))
	}
	if b.n < n {
		panic(fmt.Sprintf("gpu: %s: %s has %d elements, want %d", op, arg, b.n, n))
	}
}

// ---- GEMM -------------------------------------------------------------------------------------

type gemmShape struct {
	ta, tb     bool
	m, n, k    int
	a, b, c    kernels.DType
	lda, ldb   int
	ldc        int
	alphaBeta0 bool
}

// cuBLAS / rocBLAS data types and constants.
const (
	cudaR32F, cudaR16BF      = 0, 14
	cublasCompute32F         = 68
	cublasGemmDefault        = -1
	rocblasF32, rocblasBF16  = 151, 168
	rocblasOpN, rocblasOpT   = 111, 112
	rocblasGemmAlgoStandard  = 0
	ownGEMMTile              = 64
	vendorGEMMTolerance      = 1e-2 // relative, against the own kernel's result in the probe
	vendorGEMMProbeRepeats   = 3
	bf16GEMMOperandsRequired = "gpu: GEMM: A and B must both be float32 or both bfloat16"
)

// GEMM is kernels.SGEMM and kernels.GEMMBF16 on the device, row-major: C[M,N] = alpha op(A) op(B)
// + beta C. A and B are both float32 (fp32 arithmetic) or both bfloat16 (fp32 accumulation); C is
// float32 or bfloat16. The vendor library (cuBLAS, rocBLAS) runs it where its probe on this shape
// was faster than gorstar's own kernel and agreed with it; otherwise the own kernel.
func (d *Device) GEMM(transA, transB bool, M, N, K int, alpha float32, A Buf, lda int, B Buf, ldb int, beta float32, Cm Buf, ldc int) {
	if A.dt != B.dt || A.dt == kernels.I32 || Cm.dt == kernels.I32 {
		panic(bf16GEMMOperandsRequired)
	}
	ar, ac, br, bc := M, K, K, N
	if transA {
		ar, ac = K, M
	}
	if transB {
		br, bc = N, K
	}
	need("GEMM", "A", A, (ar-1)*lda+ac, A.dt)
	need("GEMM", "B", B, (br-1)*ldb+bc, B.dt)
	need("GEMM", "C", Cm, (M-1)*ldc+N, Cm.dt)
	if M <= 0 || N <= 0 || d.Err() != nil {
		return
	}
	if A.dt == kernels.F32 && Cm.dt == kernels.BF16 {
		panic("gpu: GEMM: float32 operands with a bfloat16 C")
	}
	if K <= 0 || alpha == 0 {
		if Cm.dt != kernels.F32 {
			panic("gpu: GEMM: K = 0 with a bfloat16 C")
		}
		d.launch("gk_scale_c", blocks(M*N, 256), 1, 256, M, N, beta, Cm, ldc)
		return
	}
	s := gemmShape{transA, transB, M, N, K, A.dt, B.dt, Cm.dt, lda, ldb, ldc, false}
	if d.blas != nil && d.vendorWins(s, alpha, A, B, beta, Cm) {
		d.vendorGEMM(s, alpha, A, B, beta, Cm)
		return
	}
	d.ownGEMM(s, alpha, A, B, beta, Cm)
}

func (d *Device) ownGEMM(s gemmShape, alpha float32, A, B Buf, beta float32, Cm Buf) {
	name := "gk_gemm_fff"
	if s.a == kernels.BF16 {
		name = "gk_gemm_hhf"
		if s.c == kernels.BF16 {
			name = "gk_gemm_hhh"
		}
	}
	d.launch(name, blocks(s.n, ownGEMMTile), blocks(s.m, ownGEMMTile), 256,
		b2i(s.ta), b2i(s.tb), s.m, s.n, s.k, alpha, A, s.lda, B, s.ldb, beta, Cm, s.ldc)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// vendorGEMM: a row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, so the
// vendor call takes B first, with N and M swapped.
func (d *Device) vendorGEMM(s gemmShape, alpha float32, A, B Buf, beta float32, Cm Buf) bool {
	if d.bind() != nil {
		return false
	}
	al, be := alpha, beta
	var r C.gcu_result
	if d.Vendor == VendorCUDA {
		dt := func(t kernels.DType) C.int {
			if t == kernels.BF16 {
				return cudaR16BF
			}
			return cudaR32F
		}
		r = C.call_cublasGemmEx(d.blas, C.int(b2i(s.tb)), C.int(b2i(s.ta)), C.int(s.n), C.int(s.m), C.int(s.k),
			unsafe.Pointer(&al), B.ptrC(), dt(s.b), C.int(s.ldb), A.ptrC(), dt(s.a), C.int(s.lda),
			unsafe.Pointer(&be), Cm.ptrC(), dt(s.c), C.int(s.ldc), cublasCompute32F, cublasGemmDefault)
	} else {
		dt := func(t kernels.DType) C.int {
			if t == kernels.BF16 {
				return rocblasBF16
			}
			return rocblasF32
		}
		op := func(t bool) C.int {
			if t {
				return rocblasOpT
			}
			return rocblasOpN
		}
		r = C.call_rocblas_gemm_ex(d.blas, op(s.tb), op(s.ta), C.int(s.n), C.int(s.m), C.int(s.k),
			unsafe.Pointer(&al), B.ptrC(), dt(s.b), C.int(s.ldb), A.ptrC(), dt(s.a), C.int(s.lda),
			unsafe.Pointer(&be), Cm.ptrC(), dt(s.c), C.int(s.ldc), Cm.ptrC(), dt(s.c), C.int(s.ldc),
			rocblasF32, rocblasGemmAlgoStandard, 0, 0)
	}
	if r != 0 {
		d.fail(fmt.Errorf("gpu: %s GEMM %dx%dx%d: status %d", map[Vendor]string{VendorCUDA: "cublasGemmEx", VendorROCm: "rocblas_gemm_ex"}[d.Vendor], s.m, s.n, s.k, int(r)))
		return false
	}
	return true
}

func (b Buf) ptrC() unsafe.Pointer { return b.ptr() }

// vendorWins probes a shape once: the vendor GEMM and the own kernel each run on a scratch copy
// of C (beta may read it), the results must agree (relative 1e-2 of the largest |C|), and the
// faster one is kept for the shape. A vendor call that fails (rocBLAS without kernels for this
// architecture) leaves the own kernel, with a note.
func (d *Device) vendorWins(s gemmShape, alpha float32, A, B Buf, beta float32, Cm Buf) bool {
	d.gemmMu.Lock()
	win, seen := d.gemm[s]
	d.gemmMu.Unlock()
	if seen {
		return win
	}
	n := (s.m-1)*s.ldc + s.n
	ref, try := d.Alloc(n, s.c), d.Alloc(n, s.c)
	defer d.Free(ref)
	defer d.Free(try)
	timeIt := func(f func()) time.Duration {
		best := time.Duration(math.MaxInt64)
		for i := 0; i < vendorGEMMProbeRepeats; i++ {
			t0 := time.Now()
			f()
			d.Synchronize()
			best = min(best, time.Since(t0))
		}
		return best
	}
	if d.Err() != nil {
		return false
	}
	d.Copy(ref, Cm.Slice(0, n))
	d.ownGEMM(s, alpha, A, B, beta, ref)
	own := timeIt(func() { d.Copy(try, Cm.Slice(0, n)); d.ownGEMM(s, alpha, A, B, beta, try) })
	d.Copy(try, Cm.Slice(0, n))
	ok := d.vendorGEMM(s, alpha, A, B, beta, try)
	if ok && d.Synchronize() == nil {
		ok = d.agree(ref, try, n)
	}
	if !ok {
		d.errMu.Lock()
		if d.err != nil {
			d.Notes = append(d.Notes, d.err.Error()+": gorstar's own GEMM runs")
			d.err = nil // the own kernel runs instead
		} else {
			d.Notes = append(d.Notes, fmt.Sprintf("gpu: the vendor GEMM disagrees with the own kernel on %dx%dx%d: the own kernel runs", s.m, s.n, s.k))
		}
		d.errMu.Unlock()
		d.gemmMu.Lock()
		d.gemm[s] = false
		d.gemmMu.Unlock()
		return false
	}
	vendor := timeIt(func() { d.Copy(try, Cm.Slice(0, n)); d.vendorGEMM(s, alpha, A, B, beta, try) })
	win = vendor < own
	d.gemmMu.Lock()
	d.gemm[s] = win
	d.gemmMu.Unlock()
	return win
}

// agree compares two results of one GEMM on the host.
func (d *Device) agree(x, y Buf, n int) bool {
	a, b := make([]float32, n), make([]float32, n)
	if x.dt == kernels.BF16 {
		ha, hb := make([]uint16, n), make([]uint16, n)
		d.CopyToBF16(ha, x)
		d.CopyToBF16(hb, y)
		for i := range ha {
			a[i], b[i] = math.Float32frombits(uint32(ha[i])<<16), math.Float32frombits(uint32(hb[i])<<16)
		}
	} else {
		d.CopyTo(a, x)
		d.CopyTo(b, y)
	}
	var scale, diff float64
	for i := range a {
		scale = max(scale, math.Abs(float64(a[i])))
		diff = max(diff, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d.Err() == nil && diff <= vendorGEMMTolerance*max(scale, 1e-30)
}

// GEMMChoices reports, per probed shape, whether the vendor GEMM runs it.
func (d *Device) GEMMChoices() map[string]string {
	d.gemmMu.Lock()
	defer d.gemmMu.Unlock()
	out := map[string]string{}
	for s, v := range d.gemm {
		k := fmt.Sprintf("%dx%dx%d %s%s%s", s.m, s.n, s.k, s.a, s.b, s.c)
		out[k] = "own"
		if v {
			out[k] = "vendor"
		}
	}
	return out
}

// ---- linear layers ----------------------------------------------------------------------------

// LinearForward: y[T,out] = x[T,in] W[out,in]^T + b. W is float32 or bfloat16; with a bfloat16 W
// the product is in bf16 arithmetic (x rounded to bf16 into a scratch buffer), as
// kernels.LinearForwardBF16.
func (d *Device) LinearForward(y, x, W, b Buf, T, in, out int) {
	need("LinearForward", "y", y, T*out, kernels.F32)
	need("LinearForward", "x", x, T*in, kernels.F32)
	need("LinearForward", "W", W, out*in, W.dt)
	optional("LinearForward", "b", b, out, kernels.F32)
	if b.p != 0 {
		d.launch("gk_bias_rows", blocks(T*out, 256), 1, 256, y, b, T, out)
	}
	beta := float32(0)
	if b.p != 0 {
		beta = 1
	}
	xin := x
	if W.dt == kernels.BF16 {
		xin = d.Alloc(T*in, kernels.BF16)
		defer d.Free(xin)
		d.ToBF16(xin, x, T*in)
	}
	d.GEMM(false, true, T, out, in, 1, xin, in, W, in, beta, y, out)
}

// LinearBackward: dx += dy W; dW += dy^T x; db += column sums of dy (each may be the zero Buf).
// With a bfloat16 W the products are in bf16 arithmetic and dW stays float32.
func (d *Device) LinearBackward(dx, dW, db, dy, x, W Buf, T, in, out int) {
	need("LinearBackward", "dy", dy, T*out, kernels.F32)
	need("LinearBackward", "x", x, T*in, kernels.F32)
	need("LinearBackward", "W", W, out*in, W.dt)
	optional("LinearBackward", "dx", dx, T*in, kernels.F32)
	optional("LinearBackward", "dW", dW, out*in, kernels.F32)
	optional("LinearBackward", "db", db, out, kernels.F32)
	dyin, xin := dy, x
	if W.dt == kernels.BF16 {
		dyin = d.Alloc(T*out, kernels.BF16)
		defer d.Free(dyin)
		d.ToBF16(dyin, dy, T*out)
		if dW.p != 0 {
			xin = d.Alloc(T*in, kernels.BF16)
			defer d.Free(xin)
			d.ToBF16(xin, x, T*in)
		}
	}
	if dx.p != 0 {
		d.GEMM(false, false, T, in, out, 1, dyin, out, W, in, 1, dx, in)
	}
	if dW.p != 0 {
		d.GEMM(true, false, out, in, T, 1, dyin, out, xin, in, 1, dW, in)
	}
	if db.p != 0 {
		d.launch("gk_column_sum", blocks(out, 256), 1, 256, db, dy, T, out)
	}
}

// ---- elementwise, norms, rope, embedding, bf16 ------------------------------------------------

func (d *Device) RMSNormForward(y, rstd, x, w Buf, T, C int, eps float32) {
	need("RMSNormForward", "y", y, T*C, kernels.F32)
	need("RMSNormForward", "x", x, T*C, kernels.F32)
	need("RMSNormForward", "w", w, C, kernels.F32)
	optional("RMSNormForward", "rstd", rstd, T, kernels.F32)
	d.launch("gk_rmsnorm_forward", T, 1, 256, y, rstd, x, w, C, eps)
}

func (d *Device) RMSNormBackward(dx, dw, dy, x, w, rstd Buf, T, C int) {
	need("RMSNormBackward", "dy", dy, T*C, kernels.F32)
	need("RMSNormBackward", "x", x, T*C, kernels.F32)
	need("RMSNormBackward", "w", w, C, kernels.F32)
	need("RMSNormBackward", "rstd", rstd, T, kernels.F32)
	if dx.p != 0 {
		need("RMSNormBackward", "dx", dx, T*C, kernels.F32)
		d.launch("gk_rmsnorm_backward_dx", T, 1, 256, dx, dy, x, w, rstd, C)
	}
	if dw.p != 0 {
		need("RMSNormBackward", "dw", dw, C, kernels.F32)
		d.launch("gk_rmsnorm_backward_dw", blocks(C, 256), 1, 256, dw, dy, x, rstd, T, C)
	}
}

func (d *Device) rope(x, pos Buf, T, heads, headDim int, theta, sign float32) {
	need("RoPE", "x", x, T*heads*headDim, kernels.F32)
	need("RoPE", "pos", pos, T, kernels.I32)
	d.launch("gk_rope", blocks(T*heads*(headDim/2), 256), 1, 256, x, pos, T, heads, headDim, theta, sign)
}

func (d *Device) RoPEForward(x, pos Buf, T, heads, headDim int, theta float32) {
	d.rope(x, pos, T, heads, headDim, theta, 1)
}

func (d *Device) RoPEBackward(dx, pos Buf, T, heads, headDim int, theta float32) {
	d.rope(dx, pos, T, heads, headDim, theta, -1)
}

func (d *Device) RoPETable(cs, pos Buf, T, headDim int, theta float32) {
	need("RoPETable", "cs", cs, T*headDim, kernels.F32)
	need("RoPETable", "pos", pos, T, kernels.I32)
	d.launch("gk_rope_table", blocks(T*(headDim/2), 256), 1, 256, cs, pos, T, headDim, theta)
}

func (d *Device) RoPEApply(x, cs Buf, T, heads, headDim int) {
	need("RoPEApply", "x", x, T*heads*headDim, kernels.F32)
	need("RoPEApply", "cs", cs, T*headDim, kernels.F32)
	d.launch("gk_rope_apply", blocks(T*heads*(headDim/2), 256), 1, 256, x, cs, T, heads, headDim)
}

func (d *Device) SwiGLUForward(out, gate, up Buf, n int) {
	need("SwiGLUForward", "out", out, n, kernels.F32)
	need("SwiGLUForward", "gate", gate, n, kernels.F32)
	need("SwiGLUForward", "up", up, n, kernels.F32)
	d.launch("gk_swiglu_forward", blocks(n, 256), 1, 256, out, gate, up, size(n))
}

func (d *Device) SwiGLUBackward(dgate, dup, dout, gate, up Buf, n int) {
	optional("SwiGLUBackward", "dgate", dgate, n, kernels.F32)
	optional("SwiGLUBackward", "dup", dup, n, kernels.F32)
	need("SwiGLUBackward", "dout", dout, n, kernels.F32)
	need("SwiGLUBackward", "gate", gate, n, kernels.F32)
	need("SwiGLUBackward", "up", up, n, kernels.F32)
	d.launch("gk_swiglu_backward", blocks(n, 256), 1, 256, dgate, dup, dout, gate, up, size(n))
}

func (d *Device) Add(y, x Buf, n int) {
	need("Add", "y", y, n, kernels.F32)
	need("Add", "x", x, n, kernels.F32)
	d.launch("gk_add", blocks(n, 256), 1, 256, y, x, size(n))
}

func (d *Device) Scale(y Buf, a float32, n int) {
	need("Scale", "y", y, n, kernels.F32)
	d.launch("gk_scale", blocks(n, 256), 1, 256, y, a, size(n))
}

// EmbeddingForward copies rows ids[t] of table (float32, or bfloat16 widened exactly) into out.
func (d *Device) EmbeddingForward(out, ids, table Buf, T, C int) {
	need("EmbeddingForward", "out", out, T*C, kernels.F32)
	need("EmbeddingForward", "ids", ids, T, kernels.I32)
	if table.dt == kernels.BF16 { // an inference-only bf16 model's table
		need("EmbeddingForward", "table", table, C, kernels.BF16)
		d.launch("gk_embedding_forward_bf16", blocks(T*C, 256), 1, 256, out, ids, table, T, C)
		return
	}
	need("EmbeddingForward", "table", table, C, kernels.F32)
	d.launch("gk_embedding_forward", blocks(T*C, 256), 1, 256, out, ids, table, T, C)
}

func (d *Device) EmbeddingBackward(dtable, dout, ids Buf, T, C int) {
	need("EmbeddingBackward", "dtable", dtable, C, kernels.F32)
	need("EmbeddingBackward", "dout", dout, T*C, kernels.F32)
	need("EmbeddingBackward", "ids", ids, T, kernels.I32)
	d.launch("gk_embedding_backward", blocks(C, 256), 1, 256, dtable, dout, ids, T, C)
}

// ToBF16 rounds src's first n float32 values into dst (nearest, ties to even); FromBF16 widens.
func (d *Device) ToBF16(dst, src Buf, n int) {
	need("ToBF16", "dst", dst, n, kernels.BF16)
	need("ToBF16", "src", src, n, kernels.F32)
	d.launch("gk_bf16_from_f32", blocks(n, 256), 1, 256, dst, src, size(n))
}

func (d *Device) FromBF16(dst, src Buf, n int) {
	need("FromBF16", "dst", dst, n, kernels.F32)
	need("FromBF16", "src", src, n, kernels.BF16)
	d.launch("gk_bf16_to_f32", blocks(n, 256), 1, 256, dst, src, size(n))
}

// ---- attention --------------------------------------------------------------------------------

func (d *Device) checkAttention(op string, B, Lq, Lk, nh, nkv, hd int) {
	if Lq > Lk || nkv <= 0 || nh%nkv != 0 || hd > 256 || hd <= 0 {
		panic(fmt.Sprintf("gpu: %s: Lq %d, Lk %d, nh %d, nkv %d, hd %d (want Lq <= Lk, nh a multiple of nkv, hd <= 256)", op, Lq, Lk, nh, nkv, hd))
	}
}

// AttentionForward is kernels.AttentionForwardDocs: docStart (int32 [B, Lk]) may be the zero Buf.
func (d *Device) AttentionForward(out, lse, q, k, v, docStart Buf, B, Lq, Lk, nh, nkv, hd int, scale float32) {
	d.checkAttention("AttentionForward", B, Lq, Lk, nh, nkv, hd)
	need("AttentionForward", "out", out, B*Lq*nh*hd, kernels.F32)
	optional("AttentionForward", "lse", lse, B*nh*Lq, kernels.F32)
	need("AttentionForward", "q", q, B*Lq*nh*hd, kernels.F32)
	need("AttentionForward", "k", k, B*Lk*nkv*hd, kernels.F32)
	need("AttentionForward", "v", v, B*Lk*nkv*hd, kernels.F32)
	optional("AttentionForward", "docStart", docStart, B*Lk, kernels.I32)
	d.launch("gk_attention_forward", B*nh*Lq, 1, WaveSize(d.Vendor), out, lse, q, k, v, B, Lq, Lk, nh, nkv, hd, scale, docStart)
}

// AttentionBackward adds into dq, dk and dv (each may be the zero Buf); lse may be the zero Buf
// (recomputed).
func (d *Device) AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse, docStart Buf, B, Lq, Lk, nh, nkv, hd int, scale float32) {
	d.checkAttention("AttentionBackward", B, Lq, Lk, nh, nkv, hd)
	for _, a := range []struct {
		name string
		b    Buf
		n    int
	}{{"dout", dout, B * Lq * nh * hd}, {"q", q, B * Lq * nh * hd}, {"k", k, B * Lk * nkv * hd}, {"v", v, B * Lk * nkv * hd}, {"out", out, B * Lq * nh * hd}} {
		need("AttentionBackward", a.name, a.b, a.n, kernels.F32)
	}
	optional("AttentionBackward", "dq", dq, B*Lq*nh*hd, kernels.F32)
	optional("AttentionBackward", "dk", dk, B*Lk*nkv*hd, kernels.F32)
	optional("AttentionBackward", "dv", dv, B*Lk*nkv*hd, kernels.F32)
	optional("AttentionBackward", "lse", lse, B*nh*Lq, kernels.F32)
	optional("AttentionBackward", "docStart", docStart, B*Lk, kernels.I32)
	rows := B * nh * Lq
	if rows == 0 {
		return
	}
	DL := d.Alloc(2*rows, kernels.F32)
	defer d.Free(DL)
	w := WaveSize(d.Vendor)
	d.launch("gk_attention_backward_q", rows, 1, w, dq, DL.Slice(0, rows), DL.Slice(rows, rows), dout, q, k, v, out, lse,
		B, Lq, Lk, nh, nkv, hd, scale, docStart)
	if dk.p != 0 || dv.p != 0 {
		d.launch("gk_attention_backward_kv", B*nkv*Lk, 1, w, dk, dv, dout, q, k, v, DL.Slice(0, rows), DL.Slice(rows, rows),
			B, Lq, Lk, nh, nkv, hd, scale, docStart)
	}
	d.Synchronize() // DL is freed on return
}

// AttentionDecode is kernels.AttentionDecode without key tiles or shared prefixes: one decode step
// for len(kvLens) sequences, each cache [capacity, nkv, hd] with kvLens[s] valid rows after kNew
// and vNew (may be the zero Buf) are appended at row kvLens[s]-1.
func (d *Device) AttentionDecode(out, q, kNew, vNew Buf, kCaches, vCaches []Buf, kvLens []int32, nh, nkv, hd int, scale float32) {
	nseq := len(kvLens)
	d.checkAttention("AttentionDecode", 1, 1, 1, nh, nkv, hd)
	if len(kCaches) != nseq || len(vCaches) != nseq {
		panic(fmt.Sprintf("gpu: AttentionDecode: %d lengths, %d key and %d value caches", nseq, len(kCaches), len(vCaches)))
	}
	if nseq == 0 {
		return
	}
	need("AttentionDecode", "out", out, nseq*nh*hd, kernels.F32)
	need("AttentionDecode", "q", q, nseq*nh*hd, kernels.F32)
	optional("AttentionDecode", "kNew", kNew, nseq*nkv*hd, kernels.F32)
	optional("AttentionDecode", "vNew", vNew, nseq*nkv*hd, kernels.F32)
	for s := range kvLens {
		if kvLens[s] < 1 {
			panic(fmt.Sprintf("gpu: AttentionDecode: kvLens[%d] = %d", s, kvLens[s]))
		}
		need("AttentionDecode", "kCaches[s]", kCaches[s], int(kvLens[s])*nkv*hd, kernels.F32)
		need("AttentionDecode", "vCaches[s]", vCaches[s], int(kvLens[s])*nkv*hd, kernels.F32)
	}
	// The pointer tables and lengths go to the device with the launch: 2*nseq addresses and
	// nseq lengths in one buffer (addresses as pairs of int32).
	table := make([]int32, 4*nseq+nseq)
	for s := 0; s < nseq; s++ {
		for j, p := range []uint64{kCaches[s].p, vCaches[s].p} {
			table[2*(j*nseq+s)] = int32(uint32(p))
			table[2*(j*nseq+s)+1] = int32(uint32(p >> 32))
		}
	}
	copy(table[4*nseq:], kvLens)
	dev := d.Alloc(len(table), kernels.I32)
	defer d.Free(dev)
	d.CopyFromI32(dev, table)
	kc, vc, lens := dev.at(0), dev.at(2*nseq), dev.at(4*nseq)
	if kNew.p != 0 || vNew.p != 0 {
		d.launch("gk_attention_decode_append", nseq*nkv, 1, 64, kc, vc, lens, kNew, vNew, nkv, hd)
	}
	d.launch("gk_attention_decode", nseq*nh, 1, WaveSize(d.Vendor), out, q, kc, vc, lens, nh, nkv, hd, scale)
	d.Synchronize() // the table is freed on return
}

// ---- loss and optimizer -----------------------------------------------------------------------

// SoftmaxXent is kernels.SoftmaxXent: logprob and dlogits (may alias logits) are optional, weight
// may be the zero Buf (all 1); the loss is summed on the host in row order.
func (d *Device) SoftmaxXent(logprob, dlogits, logits, target, weight Buf, T, V int) float64 {
	need("SoftmaxXent", "logits", logits, T*V, kernels.F32)
	need("SoftmaxXent", "target", target, T, kernels.I32)
	optional("SoftmaxXent", "logprob", logprob, T, kernels.F32)
	optional("SoftmaxXent", "dlogits", dlogits, T*V, kernels.F32)
	optional("SoftmaxXent", "weight", weight, T, kernels.F32)
	if T == 0 {
		return 0
	}
	rows := d.Alloc(2*T, kernels.F32) // T doubles
	defer d.Free(rows)
	d.launch("gk_softmax_xent", T, 1, 256, logprob, dlogits, rows, logits, target, weight, V)
	return d.sumDoubles(rows, T)
}

// sumDoubles adds n float64 values of a device buffer (allocated as 2n float32) in order.
func (d *Device) sumDoubles(b Buf, n int) float64 {
	raw := make([]float32, 2*n)
	d.CopyTo(raw, b)
	if d.Err() != nil {
		return math.NaN()
	}
	var total float64
	for i := 0; i < n; i++ {
		total += math.Float64frombits(uint64(math.Float32bits(raw[2*i])) | uint64(math.Float32bits(raw[2*i+1]))<<32)
	}
	return total
}

// SumSquares is the sum of x[i]^2 in float64: per chunk of 4,096 on the device, chunks in order
// on the host.
func (d *Device) SumSquares(x Buf, n int) float64 {
	need("SumSquares", "x", x, n, kernels.F32)
	chunks := (n + 4095) / 4096
	if chunks == 0 {
		return 0
	}
	part := d.Alloc(2*chunks, kernels.F32)
	defer d.Free(part)
	d.launch("gk_sum_squares", chunks, 1, 256, part, x, size(n))
	return d.sumDoubles(part, chunks)
}

// AdamW is kernels.AdamW (PyTorch's formula, decoupled weight decay, grad_scale for clipping).
func (d *Device) AdamW(param, grad, m, v Buf, n int, lr, beta1, beta2, eps, weightDecay, gradScale float32, step int) {
	for _, a := range []struct {
		name string
		b    Buf
	}{{"param", param}, {"grad", grad}, {"m", m}, {"v", v}} {
		need("AdamW", a.name, a.b, n, kernels.F32)
	}
	bc1 := float32(1 - math.Pow(float64(beta1), float64(step)))
	bc2 := float32(1 - math.Pow(float64(beta2), float64(step)))
	d.launch("gk_adamw", blocks(n, 256), 1, 256, param, grad, m, v, size(n), lr, beta1, beta2, eps,
		1-lr*weightDecay, gradScale, bc1, bc2)
}
