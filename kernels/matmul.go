package kernels

/*
#include "gorstar_kernels.h"
*/
import "C"

import "fmt"

// matrixLen is the number of elements a row-major rows x cols matrix with leading dimension ld spans.
func matrixLen(rows, cols, ld int) int {
	if rows == 0 || cols == 0 {
		return 0
	}
	return (rows-1)*ld + cols
}

// checkGEMM checks a GEMM's sizes and leading dimensions and returns the stored shapes of A
// (ar × ac) and B (br × bc).
func checkGEMM(op string, transA, transB bool, M, N, K, lda, ldb, ldc int) (ar, ac, br, bc int) {
	dims(op, "M", M, "N", N, "K", K)
	ar, ac = M, K
	if transA {
		ar, ac = K, M
	}
	br, bc = K, N
	if transB {
		br, bc = N, K
	}
	if ac > lda && ar > 0 || bc > ldb && br > 0 || N > ldc && M > 0 {
		panic(fmt.Sprintf("kernels: %s: leading dimensions lda=%d ldb=%d ldc=%d too small for M=%d N=%d K=%d transA=%v transB=%v",
			op, lda, ldb, ldc, M, N, K, transA, transB))
	}
	return ar, ac, br, bc
}

// SGEMM computes C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major, op = transpose
// when trans is true. With beta 0, C is not read.
func SGEMM(transA, transB bool, M, N, K int, alpha float32, A Buf, lda int, B Buf, ldb int, beta float32, C_ Buf, ldc int) {
	ar, ac, br, bc := checkGEMM("SGEMM", transA, transB, M, N, K, lda, ldb, ldc)
	need("SGEMM", "A", A, matrixLen(ar, ac, lda), F32)
	need("SGEMM", "B", B, matrixLen(br, bc, ldb), F32)
	need("SGEMM", "C", C_, matrixLen(M, N, ldc), F32)
	if dev != nil {
		dev.SGEMM(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C_, ldc)
		return
	}
	C.gk_sgemm(cbool(transA), cbool(transB), C.int(M), C.int(N), C.int(K), C.float(alpha), fp(A), C.int(lda),
		fp(B), C.int(ldb), C.float(beta), fp(C_), C.int(ldc))
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// LinearForward computes y[T,out] = x[T,in] * w[out,in]^T + b[out]; b may be the zero Buf.
//
// A bfloat16 w makes it a product in bfloat16 arithmetic (LinearForwardBF16).
func LinearForward(y, x, w, b Buf, T, in, out int) {
	if w.dt == BF16 {
		LinearForwardBF16(y, x, w, b, T, in, out)
		return
	}
	dims("LinearForward", "T", T, "in", in, "out", out)
	need("LinearForward", "y", y, T*out, F32)
	need("LinearForward", "x", x, T*in, F32)
	need("LinearForward", "w", w, out*in, F32)
	optional("LinearForward", "b", b, out, F32)
	if dev != nil {
		dev.LinearForward(y, x, w, b, T, in, out)
		return
	}
	C.gk_linear_forward(fp(y), fp(x), fp(w), fp(b), C.int(T), C.int(in), C.int(out))
}

// FewRows is the most rows for which LinearForward (weights not packed ahead) reads its weights in
// place rather than packing them (SMALL_M in matmul.c); LinearForwardPacked uses the packed copy at
// every row count.
const FewRows = 8

// packedHeader is the floats a packed weight starts with (PACK_HEADER in matmul.c).
const packedHeader = 16

// PackedLinearFloats is the size of the buffer PackLinear fills for a [out,in] weight.
func PackedLinearFloats(in, out int) int {
	dims("PackedLinearFloats", "in", in, "out", out)
	return int(C.gk_linear_packed_floats(C.int(in), C.int(out)))
}

// PackLinear lays w[out,in] out in the SGEMM kernel's panel order in wp (PackedLinearFloats
// floats), once, for many LinearForwardPacked calls: a forward over a few dozen rows (one decode
// step) otherwise spends as long repacking w as multiplying. Pack again after w changes.
func PackLinear(wp, w Buf, in, out int) {
	dims("PackLinear", "in", in, "out", out)
	need("PackLinear", "wp", wp, PackedLinearFloats(in, out), F32)
	need("PackLinear", "w", w, out*in, F32)
	cpuOnly("PackLinear")
	C.gk_linear_pack(fp(wp), fp(w), C.int(in), C.int(out))
}

// LinearForwardPacked is LinearForward with w also given packed (PackLinear of the same w):
// bit-identical results, without repacking w. Few rows read w in place, as LinearForward does.
func LinearForwardPacked(y, x, w, wp, b Buf, T, in, out int) {
	dims("LinearForwardPacked", "T", T, "in", in, "out", out)
	need("LinearForwardPacked", "y", y, T*out, F32)
	need("LinearForwardPacked", "x", x, T*in, F32)
	need("LinearForwardPacked", "w", w, out*in, F32)
	need("LinearForwardPacked", "wp", wp, packedHeader, F32) // PackLinear checked the rest against its header
	optional("LinearForwardPacked", "b", b, out, F32)
	cpuOnly("LinearForwardPacked")
	C.gk_linear_forward_packed(fp(y), fp(x), fp(w), fp(wp), fp(b), C.int(T), C.int(in), C.int(out))
}

// Linear is one product of LinearForwardPackedMulti: y[T,out] = x w^T + b, w also packed (wp, as
// for LinearForwardPacked; b may be the zero Buf).
type Linear struct {
	Y, W, WP, B Buf
	Out         int
}

// LinearForwardPackedMulti runs LinearForwardPacked for each of ls (at most 4) on one input x[T,in]
// — q, k and v, or gate and up — in one parallel region with x packed once: the same bits as the
// calls one by one.
func LinearForwardPackedMulti(x Buf, T, in int, ls ...Linear) {
	if len(ls) > 4 {
		panic(fmt.Sprintf("kernels: LinearForwardPackedMulti of %d products, want at most 4", len(ls)))
	}
	dims("LinearForwardPackedMulti", "T", T, "in", in, "out", 1)
	need("LinearForwardPackedMulti", "x", x, T*in, F32)
	var ys, ws, wps, bs [4]*C.float
	var outs [4]C.int
	for i, l := range ls {
		dims("LinearForwardPackedMulti", "T", T, "in", in, "out", l.Out)
		need("LinearForwardPackedMulti", "y", l.Y, T*l.Out, F32)
		need("LinearForwardPackedMulti", "w", l.W, l.Out*in, F32)
		need("LinearForwardPackedMulti", "wp", l.WP, packedHeader, F32)
		optional("LinearForwardPackedMulti", "b", l.B, l.Out, F32)
		ys[i], ws[i], wps[i], bs[i], outs[i] = fp(l.Y), fp(l.W), fp(l.WP), fp(l.B), C.int(l.Out)
	}
	cpuOnly("LinearForwardPackedMulti")
	C.gk_linear_forward_packed_multi(C.int(len(ls)), &ys[0], fp(x), &ws[0], &wps[0], &bs[0], C.int(T), C.int(in), &outs[0])
}

// LinearBackward adds dx += dy*w, dw += dy^T*x and db += column sums of dy; any of dx, dw, db may
// be the zero Buf. A bfloat16 w makes it LinearBackwardBF16.
func LinearBackward(dx, dw, db, dy, x, w Buf, T, in, out int) {
	if w.dt == BF16 {
		LinearBackwardBF16(dx, dw, db, dy, x, w, T, in, out)
		return
	}
	dims("LinearBackward", "T", T, "in", in, "out", out)
	optional("LinearBackward", "dx", dx, T*in, F32)
	optional("LinearBackward", "dw", dw, out*in, F32)
	optional("LinearBackward", "db", db, out, F32)
	need("LinearBackward", "dy", dy, T*out, F32)
	if !dx.IsNil() {
		need("LinearBackward", "w", w, out*in, F32)
	}
	if !dw.IsNil() {
		need("LinearBackward", "x", x, T*in, F32)
	}
	if dev != nil {
		dev.LinearBackward(dx, dw, db, dy, x, w, T, in, out)
		return
	}
	C.gk_linear_backward(fp(dx), fp(dw), fp(db), fp(dy), fp(x), fp(w), C.int(T), C.int(in), C.int(out))
}
