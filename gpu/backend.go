package gpu

import (
	"fmt"

	"gorstar/kernels"
)

// Kernels returns d as package kernels' Device: kernels.UseDevice(d.Kernels()) before the first
// buffer makes every op of the model run here. Its buffers are kernels.Buf carrying this device's
// addresses; a failure the device keeps (Err) panics where a result reaches the host.
func (d *Device) Kernels() kernels.Device { return backend{d} }

type backend struct{ d *Device }

func toDev(b kernels.Buf) Buf { return Buf{p: b.DeviceAddr(), n: b.Len(), dt: b.DType()} }

func toKernels(b Buf) kernels.Buf { return kernels.DeviceBuf(b.p, b.n, b.dt) }

func bufs(bs []kernels.Buf) []Buf {
	out := make([]Buf, len(bs))
	for i, b := range bs {
		out[i] = toDev(b)
	}
	return out
}

// failed panics with the device's first failure, if any.
func (k backend) failed(op string) {
	if err := k.d.Err(); err != nil {
		panic(fmt.Sprintf("gpu: %s on %s: %v", op, k.d.Name(), err))
	}
}

func (k backend) Name() string                               { return k.d.Name() }
func (k backend) Alloc(n int, dt kernels.DType) kernels.Buf  { return toKernels(k.d.Alloc(n, dt)) }
func (k backend) Free(b kernels.Buf)                         { k.d.Free(toDev(b)) }
func (k backend) Zero(b kernels.Buf)                         { k.d.Zero(toDev(b)) }
func (k backend) Copy(dst, src kernels.Buf)                  { k.d.Copy(toDev(dst), toDev(src)) }
func (k backend) Synchronize() error                         { return k.d.Synchronize() }
func (k backend) CopyFromF32(dst kernels.Buf, src []float32) { k.d.CopyFrom(toDev(dst), src) }
func (k backend) CopyFromI32(dst kernels.Buf, src []int32)   { k.d.CopyFromI32(toDev(dst), src) }
func (k backend) CopyFromBF16(dst kernels.Buf, src []uint16) { k.d.CopyFromBF16(toDev(dst), src) }

func (k backend) CopyToF32(dst []float32, src kernels.Buf) {
	k.d.CopyTo(dst, toDev(src))
	k.failed("copy to host")
}

func (k backend) CopyToI32(dst []int32, src kernels.Buf) {
	k.d.CopyToI32(dst, toDev(src))
	k.failed("copy to host")
}

func (k backend) CopyToBF16(dst []uint16, src kernels.Buf) {
	k.d.CopyToBF16(dst, toDev(src))
	k.failed("copy to host")
}

func (k backend) SGEMM(transA, transB bool, M, N, K int, alpha float32, A kernels.Buf, lda int, B kernels.Buf, ldb int, beta float32, C kernels.Buf, ldc int) {
	k.d.GEMM(transA, transB, M, N, K, alpha, toDev(A), lda, toDev(B), ldb, beta, toDev(C), ldc)
}

// GEMMBF16: a float32 operand is rounded to bfloat16 into scratch first (the CPU backend rounds
// it as it packs: the same values).
func (k backend) GEMMBF16(transA, transB bool, M, N, K int, alpha float32, A kernels.Buf, lda int, B kernels.Buf, ldb int, beta float32, C kernels.Buf, ldc int) {
	a, b := k.rounded(toDev(A)), k.rounded(toDev(B))
	k.d.GEMM(transA, transB, M, N, K, alpha, a, lda, b, ldb, beta, toDev(C), ldc)
	if a.p != A.DeviceAddr() {
		k.d.Free(a)
	}
	if b.p != B.DeviceAddr() {
		k.d.Free(b)
	}
}

func (k backend) rounded(x Buf) Buf {
	if x.dt == kernels.BF16 {
		return x
	}
	r := k.d.Alloc(x.n, kernels.BF16)
	k.d.ToBF16(r, x, x.n)
	return r
}

func (k backend) LinearForward(y, x, w, b kernels.Buf, T, in, out int) {
	k.d.LinearForward(toDev(y), toDev(x), toDev(w), toDev(b), T, in, out)
}

func (k backend) LinearBackward(dx, dw, db, dy, x, w kernels.Buf, T, in, out int) {
	k.d.LinearBackward(toDev(dx), toDev(dw), toDev(db), toDev(dy), toDev(x), toDev(w), T, in, out)
}

func (k backend) RMSNormForward(y, rstd, x, w kernels.Buf, T, C int, eps float32) {
	k.d.RMSNormForward(toDev(y), toDev(rstd), toDev(x), toDev(w), T, C, eps)
}

func (k backend) RMSNormBackward(dx, dw, dy, x, w, rstd kernels.Buf, T, C int) {
	k.d.RMSNormBackward(toDev(dx), toDev(dw), toDev(dy), toDev(x), toDev(w), toDev(rstd), T, C)
}

func (k backend) RoPEForward(x, pos kernels.Buf, T, heads, headDim int, theta float32) {
	k.d.RoPEForward(toDev(x), toDev(pos), T, heads, headDim, theta)
}

func (k backend) RoPEBackward(dx, pos kernels.Buf, T, heads, headDim int, theta float32) {
	k.d.RoPEBackward(toDev(dx), toDev(pos), T, heads, headDim, theta)
}

func (k backend) RoPETable(cs, pos kernels.Buf, T, headDim int, theta float32) {
	k.d.RoPETable(toDev(cs), toDev(pos), T, headDim, theta)
}

func (k backend) RoPEApply(x, cs kernels.Buf, T, heads, headDim int) {
	k.d.RoPEApply(toDev(x), toDev(cs), T, heads, headDim)
}

func (k backend) AttentionForward(out, lse, q, kk, v, docStart kernels.Buf, B, Lq, Lk, nh, nkv, hd int, scale float32) {
	k.d.AttentionForward(toDev(out), toDev(lse), toDev(q), toDev(kk), toDev(v), toDev(docStart), B, Lq, Lk, nh, nkv, hd, scale)
}

func (k backend) AttentionBackward(dq, dk, dv, dout, q, kk, v, out, lse, docStart kernels.Buf, B, Lq, Lk, nh, nkv, hd int, scale float32) {
	k.d.AttentionBackward(toDev(dq), toDev(dk), toDev(dv), toDev(dout), toDev(q), toDev(kk), toDev(v), toDev(out), toDev(lse),
		toDev(docStart), B, Lq, Lk, nh, nkv, hd, scale)
}

func (k backend) AttentionDecode(out, q, kNew, vNew kernels.Buf, kCaches, vCaches []kernels.Buf, kvLens []int32, nh, nkv, hd int, scale float32) {
	k.d.AttentionDecode(toDev(out), toDev(q), toDev(kNew), toDev(vNew), bufs(kCaches), bufs(vCaches), kvLens, nh, nkv, hd, scale)
}

func (k backend) SwiGLUForward(out, gate, up kernels.Buf, n int) {
	k.d.SwiGLUForward(toDev(out), toDev(gate), toDev(up), n)
}

func (k backend) SwiGLUBackward(dgate, dup, dout, gate, up kernels.Buf, n int) {
	k.d.SwiGLUBackward(toDev(dgate), toDev(dup), toDev(dout), toDev(gate), toDev(up), n)
}

func (k backend) Add(y, x kernels.Buf, n int)           { k.d.Add(toDev(y), toDev(x), n) }
func (k backend) Scale(y kernels.Buf, a float32, n int) { k.d.Scale(toDev(y), a, n) }
func (k backend) ToBF16(dst, src kernels.Buf, n int)    { k.d.ToBF16(toDev(dst), toDev(src), n) }
func (k backend) FromBF16(dst, src kernels.Buf, n int)  { k.d.FromBF16(toDev(dst), toDev(src), n) }

func (k backend) EmbeddingForward(out, ids, table kernels.Buf, T, C int) {
	k.d.EmbeddingForward(toDev(out), toDev(ids), toDev(table), T, C)
}

func (k backend) EmbeddingBackward(dtable, dout, ids kernels.Buf, T, C int) {
	k.d.EmbeddingBackward(toDev(dtable), toDev(dout), toDev(ids), T, C)
}

func (k backend) SoftmaxXent(logprob, dlogits, logits, target, weight kernels.Buf, T, V int) float64 {
	r := k.d.SoftmaxXent(toDev(logprob), toDev(dlogits), toDev(logits), toDev(target), toDev(weight), T, V)
	k.failed("SoftmaxXent")
	return r
}

func (k backend) SumSquares(x kernels.Buf, n int) float64 {
	r := k.d.SumSquares(toDev(x), n)
	k.failed("SumSquares")
	return r
}

func (k backend) AdamW(param, grad, m, v kernels.Buf, n int, lr, beta1, beta2, eps, weightDecay, gradScale float32, step int) {
	k.d.AdamW(toDev(param), toDev(grad), toDev(m), toDev(v), n, lr, beta1, beta2, eps, weightDecay, gradScale, step)
}
