package kernels

/*
#include <stdlib.h>
#include "gorstar_kernels.h"
int gk_gemm_bf16_use_kernel(const char *name);
void gk_rmsnorm_forward_bf16(uint16_t *y, float *rstd, const float *x, const float *w, int T, int C, float eps);
void gk_swiglu_forward_bf16(uint16_t *out, const float *gate, const float *up, size_t n);
void gk_linear_forward_bf16_in(float *y, const uint16_t *x, const uint16_t *W, const float *b, int T, int in, int out);
void gk_linear_backward_bf16_in(float *dx, float *dW, float *db, const float *dy, const uint16_t *x, const uint16_t *W,
                                int T, int in, int out);
void gk_gemm_bf16_scalar_pack(int off);
long gk_gemm_bf16_resident_limit(long bytes);
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// AllocBF16 returns an uninitialized bfloat16 buffer of n elements.
func AllocBF16(n int) Buf { return alloc(n, BF16) }

// BF16s returns a bfloat16 buffer's elements (their bits) as a Go slice over the same memory (nil
// for any other buffer).
func (b Buf) BF16s() []uint16 {
	if b.p == nil || b.dt != BF16 {
		return nil
	}
	return unsafe.Slice((*uint16)(b.p), b.n)
}

// CopyFromBF16 copies bfloat16 bits from host memory into the first len(src) elements.
func (b Buf) CopyFromBF16(src []uint16) {
	b.mustHost("CopyFromBF16", len(src), BF16)
	if b.d != 0 {
		dev.CopyFromBF16(b, src)
		return
	}
	if len(src) > 0 {
		C.gk_copy_to_device(b.p, unsafe.Pointer(&src[0]), C.size_t(2*len(src)))
	}
}

// CopyToBF16 copies the first len(dst) elements' bits to host memory.
func (b Buf) CopyToBF16(dst []uint16) {
	b.mustHost("CopyToBF16", len(dst), BF16)
	if b.d != 0 {
		dev.CopyToBF16(dst, b)
		return
	}
	if len(dst) > 0 {
		C.gk_copy_to_host(unsafe.Pointer(&dst[0]), b.p, C.size_t(2*len(dst)))
	}
}

// ToBF16 writes src's first n float32 values into dst rounded to the nearest bfloat16, ties to
// even (NaN stays NaN).
func ToBF16(dst, src Buf, n int) {
	dims("ToBF16", "n", n)
	need("ToBF16", "dst", dst, n, BF16)
	need("ToBF16", "src", src, n, F32)
	if dev != nil {
		dev.ToBF16(dst, src, n)
		return
	}
	C.gk_bf16_from_f32((*C.uint16_t)(dst.p), fp(src), C.size_t(n))
}

// RoundBF16 rounds x's first n float32 values to the nearest bfloat16 (ties to even, NaN stays
// NaN) in place, as float32: what a bfloat16 cache holds of them. On a device it goes through a
// bfloat16 scratch buffer (ToBF16, FromBF16: the same rounding).
func RoundBF16(x Buf, n int) {
	dims("RoundBF16", "n", n)
	need("RoundBF16", "x", x, n, F32)
	if dev != nil {
		tmp := AllocBF16(n)
		defer tmp.Free()
		ToBF16(tmp, x, n)
		FromBF16(x, tmp, n)
		return
	}
	C.gk_bf16_round_f32(fp(x), C.size_t(n))
}

// FromBF16 widens src's first n bfloat16 values into dst (exact).
func FromBF16(dst, src Buf, n int) {
	dims("FromBF16", "n", n)
	need("FromBF16", "dst", dst, n, F32)
	need("FromBF16", "src", src, n, BF16)
	if dev != nil {
		dev.FromBF16(dst, src, n)
		return
	}
	C.gk_bf16_to_f32(fp(dst), (*C.uint16_t)(src.p), C.size_t(n))
}

func gkDType(op, arg string, b Buf) C.int {
	switch b.dt {
	case F32:
		return C.GK_F32
	case BF16:
		return C.GK_BF16
	}
	panic(fmt.Sprintf("kernels: %s: %s is %s, want float32 or bfloat16", op, arg, b.dt))
}

// GEMMBF16 is SGEMM in bfloat16 arithmetic: C[M,N] = alpha * op(A) * op(B) + beta * C with every
// element of A and B rounded to bfloat16 and the products summed in float32. A and B may each be
// float32 or bfloat16 buffers (float32 ones are rounded as they are packed, with no copy); C is
// float32 or bfloat16 (rounded once, at the end). On AVX-512 BF16 it runs on vdpbf16ps.
func GEMMBF16(transA, transB bool, M, N, K int, alpha float32, A Buf, lda int, B Buf, ldb int, beta float32, C_ Buf, ldc int) {
	ar, ac, br, bc := checkGEMM("GEMMBF16", transA, transB, M, N, K, lda, ldb, ldc)
	adt, bdt, cdt := gkDType("GEMMBF16", "A", A), gkDType("GEMMBF16", "B", B), gkDType("GEMMBF16", "C", C_)
	need("GEMMBF16", "A", A, matrixLen(ar, ac, lda), A.dt)
	need("GEMMBF16", "B", B, matrixLen(br, bc, ldb), B.dt)
	need("GEMMBF16", "C", C_, matrixLen(M, N, ldc), C_.dt)
	if dev != nil {
		dev.GEMMBF16(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C_, ldc)
		return
	}
	C.gk_gemm_bf16(cbool(transA), cbool(transB), C.int(M), C.int(N), C.int(K), C.float(alpha), A.p, adt, C.int(lda),
		B.p, bdt, C.int(ldb), C.float(beta), C_.p, cdt, C.int(ldc))
}

// GEMMBF16Kernel names the bfloat16 GEMM's kernel: "bf16-avx512" (vdpbf16ps) or "f32-" and the
// SGEMM microkernel that multiplies the widened values.
func GEMMBF16Kernel() string { return C.GoString(C.gk_gemm_bf16_kernel()) }

// gemmBF16Kernels lists the bf16 GEMM kernels this CPU runs.
func gemmBF16Kernels() []string {
	var names []string
	for _, n := range append([]string{"bf16-avx512"}, prefixed("f32-", sgemmKernels())...) {
		if useGEMMBF16Kernel(n) == nil {
			names = append(names, n)
		}
	}
	useGEMMBF16Kernel("")
	return names
}

func prefixed(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + s
	}
	return out
}

// useGEMMBF16Kernel switches the bf16 GEMM's kernel ("" = the best here); for tests and benchmarks,
// not safe while other calls run.
func useGEMMBF16Kernel(name string) error {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	if C.gk_gemm_bf16_use_kernel(cs) != 0 {
		return fmt.Errorf("no bf16 GEMM kernel %q that runs here", name)
	}
	return nil
}

// gemmBF16ScalarPack makes the bf16 GEMM pack every operand with its scalar loops (on) or the
// fastest code (off); for tests, not safe while other calls run.
func gemmBF16ScalarPack(on bool) {
	off := C.int(0)
	if on {
		off = 1
	}
	C.gk_gemm_bf16_scalar_pack(off)
}

// gemmBF16ResidentLimit sets the largest op(B), in bytes over all of K, for which the bf16 GEMM
// keeps each block of C over all of K (0: always slice by slice) and returns the previous limit;
// for tests, not safe while other calls run.
func gemmBF16ResidentLimit(bytes int) int {
	return int(C.gk_gemm_bf16_resident_limit(C.long(bytes)))
}

// LinearForwardBF16 is LinearForward in bfloat16 arithmetic: w[out,in] is bfloat16, x is rounded to
// bfloat16 as it is packed, the products are summed in float32 into y (plus b, float32, may be the
// zero Buf). A row of y gets the same bits whatever T is, so a decoder's steps and a training
// forward agree. x may be a bfloat16 buffer: the same bits as a float32 x rounding to its values.
func LinearForwardBF16(y, x, w, b Buf, T, in, out int) {
	dims("LinearForwardBF16", "T", T, "in", in, "out", out)
	need("LinearForwardBF16", "y", y, T*out, F32)
	need("LinearForwardBF16", "w", w, out*in, BF16)
	optional("LinearForwardBF16", "b", b, out, F32)
	if x.dt == BF16 {
		need("LinearForwardBF16", "x", x, T*in, BF16)
		cpuOnly("LinearForwardBF16 with bfloat16 activations")
		C.gk_linear_forward_bf16_in(fp(y), (*C.uint16_t)(x.p), (*C.uint16_t)(w.p), fp(b), C.int(T), C.int(in), C.int(out))
		return
	}
	need("LinearForwardBF16", "x", x, T*in, F32)
	if dev != nil {
		dev.LinearForward(y, x, w, b, T, in, out)
		return
	}
	C.gk_linear_forward_bf16(fp(y), fp(x), (*C.uint16_t)(w.p), fp(b), C.int(T), C.int(in), C.int(out))
}

// LinearBackwardBF16 is LinearBackward with bfloat16 weights: dx += dy·w and dw += dyᵀ·x in
// bfloat16 arithmetic (dy and x rounded as they are packed, float32 sums added into the float32
// dx and dw), db += column sums of dy in float32. x may be a bfloat16 buffer (as in
// LinearForwardBF16).
func LinearBackwardBF16(dx, dw, db, dy, x, w Buf, T, in, out int) {
	dims("LinearBackwardBF16", "T", T, "in", in, "out", out)
	optional("LinearBackwardBF16", "dx", dx, T*in, F32)
	optional("LinearBackwardBF16", "dw", dw, out*in, F32)
	optional("LinearBackwardBF16", "db", db, out, F32)
	need("LinearBackwardBF16", "dy", dy, T*out, F32)
	if !dx.IsNil() {
		need("LinearBackwardBF16", "w", w, out*in, BF16)
	}
	if x.dt == BF16 {
		if !dw.IsNil() {
			need("LinearBackwardBF16", "x", x, T*in, BF16)
		}
		cpuOnly("LinearBackwardBF16 with bfloat16 activations")
		C.gk_linear_backward_bf16_in(fp(dx), fp(dw), fp(db), fp(dy), (*C.uint16_t)(x.p), (*C.uint16_t)(w.p), C.int(T),
			C.int(in), C.int(out))
		return
	}
	if !dw.IsNil() {
		need("LinearBackwardBF16", "x", x, T*in, F32)
	}
	if dev != nil {
		dev.LinearBackward(dx, dw, db, dy, x, w, T, in, out)
		return
	}
	C.gk_linear_backward_bf16(fp(dx), fp(dw), fp(db), fp(dy), fp(x), (*C.uint16_t)(w.p), C.int(T), C.int(in), C.int(out))
}

// PackedLinearBF16Words is the size, in 32-bit words, of the buffer PackLinearBF16 fills for a
// bfloat16 [out,in] weight (allocate it with Alloc: a float32 buffer of that many elements).
func PackedLinearBF16Words(in, out int) int {
	dims("PackedLinearBF16Words", "in", in, "out", out)
	return int(C.gk_linear_bf16_packed_words(C.int(in), C.int(out)))
}

// PackLinearBF16 lays the bfloat16 w[out,in] out in the bf16 GEMM's panel order in wp, once, for
// many LinearForwardBF16Packed calls (a decoder's steps). Pack again after w changes.
func PackLinearBF16(wp, w Buf, in, out int) {
	dims("PackLinearBF16", "in", in, "out", out)
	need("PackLinearBF16", "wp", wp, PackedLinearBF16Words(in, out), F32)
	need("PackLinearBF16", "w", w, out*in, BF16)
	cpuOnly("PackLinearBF16")
	C.gk_linear_bf16_pack((*C.uint32_t)(wp.p), (*C.uint16_t)(w.p), C.int(in), C.int(out))
}

// LinearForwardBF16Packed is LinearForwardBF16 with w also given packed (PackLinearBF16 of the same
// w): the same bits, without packing w again.
func LinearForwardBF16Packed(y, x, w, wp, b Buf, T, in, out int) {
	dims("LinearForwardBF16Packed", "T", T, "in", in, "out", out)
	need("LinearForwardBF16Packed", "y", y, T*out, F32)
	need("LinearForwardBF16Packed", "x", x, T*in, F32)
	need("LinearForwardBF16Packed", "w", w, out*in, BF16)
	need("LinearForwardBF16Packed", "wp", wp, 16, F32) // the header; its sizes are checked in C
	optional("LinearForwardBF16Packed", "b", b, out, F32)
	cpuOnly("LinearForwardBF16Packed")
	C.gk_linear_forward_bf16_packed(fp(y), fp(x), (*C.uint16_t)(w.p), (*C.uint32_t)(wp.p), fp(b), C.int(T), C.int(in), C.int(out))
}

// embeddingForwardBF16 is EmbeddingForward from a bfloat16 table: row ids[t] widened to float32
// (exact) into out[t].
func embeddingForwardBF16(out, ids, table Buf, T, C_ int) {
	rows := table.n / C_
	for t, id := range ids.Int32s()[:T] {
		if id < 0 || int(id) >= rows {
			panic(fmt.Sprintf("kernels: EmbeddingForward: id %d at %d outside the table's %d rows", id, t, rows))
		}
		C.gk_bf16_to_f32((*C.float)(unsafe.Add(out.p, 4*t*C_)), (*C.uint16_t)(unsafe.Add(table.p, 2*int(id)*C_)), C.size_t(C_))
	}
}

// LinearForwardBF16PackedMulti runs LinearForwardBF16Packed for each of ls (at most 4; W bf16, WP
// from PackLinearBF16) on one input x[T,in] — q, k and v, or gate and up — in one parallel region
// with x packed once: the same bits as the calls one by one.
func LinearForwardBF16PackedMulti(x Buf, T, in int, ls ...Linear) {
	if len(ls) > 4 {
		panic(fmt.Sprintf("kernels: LinearForwardBF16PackedMulti of %d products, want at most 4", len(ls)))
	}
	dims("LinearForwardBF16PackedMulti", "T", T, "in", in, "out", 1)
	need("LinearForwardBF16PackedMulti", "x", x, T*in, F32)
	var ys, bs [4]*C.float
	var ws [4]*C.uint16_t
	var wps [4]*C.uint32_t
	var outs [4]C.int
	for i, l := range ls {
		dims("LinearForwardBF16PackedMulti", "T", T, "in", in, "out", l.Out)
		need("LinearForwardBF16PackedMulti", "y", l.Y, T*l.Out, F32)
		need("LinearForwardBF16PackedMulti", "w", l.W, l.Out*in, BF16)
		need("LinearForwardBF16PackedMulti", "wp", l.WP, 16, F32) // the header; its sizes are checked in C
		optional("LinearForwardBF16PackedMulti", "b", l.B, l.Out, F32)
		ys[i], ws[i], wps[i], bs[i], outs[i] = fp(l.Y), (*C.uint16_t)(l.W.p), (*C.uint32_t)(l.WP.p), fp(l.B), C.int(l.Out)
	}
	cpuOnly("LinearForwardBF16PackedMulti")
	C.gk_linear_forward_bf16_packed_multi(C.int(len(ls)), &ys[0], fp(x), &ws[0], &wps[0], &bs[0], C.int(T), C.int(in), &outs[0])
}

// rmsNormForwardBF16 is RMSNormForward into a bfloat16 y (checked by the caller).
func rmsNormForwardBF16(y, rstd, x, w Buf, T, C_ int, eps float32) {
	C.gk_rmsnorm_forward_bf16((*C.uint16_t)(y.p), fp(rstd), fp(x), fp(w), C.int(T), C.int(C_), C.float(eps))
}

// swiGLUForwardBF16 is SwiGLUForward into a bfloat16 out (checked by the caller).
func swiGLUForwardBF16(out, gate, up Buf, n int) {
	C.gk_swiglu_forward_bf16((*C.uint16_t)(out.p), fp(gate), fp(up), C.size_t(n))
}
