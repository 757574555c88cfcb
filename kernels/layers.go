package kernels

/*
#include "gorstar_kernels.h"
*/
import "C"

import "fmt"

// RMSNormForward computes y = w * x / sqrt(mean(x^2) + eps) per row of x[T,C] and saves the
// reciprocal root mean square in rstd[T] (may be the zero Buf when no backward follows).
func RMSNormForward(y, rstd, x, w Buf, T, C_ int, eps float32) {
	dims("RMSNormForward", "T", T, "C", C_)
	need("RMSNormForward", "y", y, T*C_, F32)
	optional("RMSNormForward", "rstd", rstd, T, F32)
	need("RMSNormForward", "x", x, T*C_, F32)
	need("RMSNormForward", "w", w, C_, F32)
	C.gk_rmsnorm_forward(fp(y), fp(rstd), fp(x), fp(w), C.int(T), C.int(C_), C.float(eps))
}

// RMSNormBackward adds the gradients into dx[T,C] and dw[C] (either may be the zero Buf); rstd
// is the forward's.
func RMSNormBackward(dx, dw, dy, x, w, rstd Buf, T, C_ int) {
	dims("RMSNormBackward", "T", T, "C", C_)
	optional("RMSNormBackward", "dx", dx, T*C_, F32)
	optional("RMSNormBackward", "dw", dw, C_, F32)
	need("RMSNormBackward", "dy", dy, T*C_, F32)
	need("RMSNormBackward", "x", x, T*C_, F32)
	need("RMSNormBackward", "w", w, C_, F32)
	need("RMSNormBackward", "rstd", rstd, T, F32)
	C.gk_rmsnorm_backward(fp(dx), fp(dw), fp(dy), fp(x), fp(w), fp(rstd), C.int(T), C.int(C_))
}

func ropeCheck(op string, x, pos Buf, T, heads, headDim int) {
	dims(op, "T", T, "heads", heads, "headDim", headDim)
	if headDim%2 != 0 {
		panic(fmt.Sprintf("kernels: %s: headDim %d is odd", op, headDim))
	}
	need(op, "x", x, T*heads*headDim, F32)
	need(op, "pos", pos, T, I32)
}

// RoPEForward rotates x[T, heads, headDim] in place by pos[t] * theta^(-2i/headDim), Hugging Face
// "rotate half" pairing (i with i + headDim/2).
func RoPEForward(x, pos Buf, T, heads, headDim int, theta float32) {
	ropeCheck("RoPEForward", x, pos, T, heads, headDim)
	C.gk_rope_forward(fp(x), ip(pos), C.int(T), C.int(heads), C.int(headDim), C.float(theta))
}

// RoPEBackward maps the gradient of RoPEForward's output to its input, in place.
func RoPEBackward(dx, pos Buf, T, heads, headDim int, theta float32) {
	ropeCheck("RoPEBackward", dx, pos, T, heads, headDim)
	C.gk_rope_backward(fp(dx), ip(pos), C.int(T), C.int(heads), C.int(headDim), C.float(theta))
}

func attentionCheck(op string, B, Lq, Lk, nh, nkv, hd int) {
	dims(op, "B", B, "Lq", Lq, "Lk", Lk, "nh", nh, "nkv", nkv, "hd", hd)
	if Lq > Lk {
		panic(fmt.Sprintf("kernels: %s: Lq %d > Lk %d", op, Lq, Lk))
	}
	if nkv == 0 || nh%nkv != 0 {
		panic(fmt.Sprintf("kernels: %s: nh %d is not a multiple of nkv %d", op, nh, nkv))
	}
}

// AttentionForward is causal grouped-query attention: q[B,Lq,nh,hd], k and v [B,Lk,nkv,hd], Lq ≤ Lk,
// query i at key position Lk-Lq+i. It writes out[B,Lq,nh,hd] and lse[B,nh,Lq] (may be the zero Buf).
func AttentionForward(out, lse, q, k, v Buf, B, Lq, Lk, nh, nkv, hd int, scale float32) {
	op := "AttentionForward"
	attentionCheck(op, B, Lq, Lk, nh, nkv, hd)
	need(op, "out", out, B*Lq*nh*hd, F32)
	optional(op, "lse", lse, B*nh*Lq, F32)
	need(op, "q", q, B*Lq*nh*hd, F32)
	need(op, "k", k, B*Lk*nkv*hd, F32)
	need(op, "v", v, B*Lk*nkv*hd, F32)
	C.gk_attention_forward(fp(out), fp(lse), fp(q), fp(k), fp(v), C.int(B), C.int(Lq), C.int(Lk), C.int(nh),
		C.int(nkv), C.int(hd), C.float(scale))
}

// AttentionBackward adds the gradients into dq, dk, dv (any may be the zero Buf) from dout and the
// forward's inputs, out and lse (lse may be the zero Buf: it is then recomputed).
func AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse Buf, B, Lq, Lk, nh, nkv, hd int, scale float32) {
	op := "AttentionBackward"
	attentionCheck(op, B, Lq, Lk, nh, nkv, hd)
	optional(op, "dq", dq, B*Lq*nh*hd, F32)
	optional(op, "dk", dk, B*Lk*nkv*hd, F32)
	optional(op, "dv", dv, B*Lk*nkv*hd, F32)
	need(op, "dout", dout, B*Lq*nh*hd, F32)
	need(op, "q", q, B*Lq*nh*hd, F32)
	need(op, "k", k, B*Lk*nkv*hd, F32)
	need(op, "v", v, B*Lk*nkv*hd, F32)
	need(op, "out", out, B*Lq*nh*hd, F32)
	optional(op, "lse", lse, B*nh*Lq, F32)
	C.gk_attention_backward(fp(dq), fp(dk), fp(dv), fp(dout), fp(q), fp(k), fp(v), fp(out), fp(lse),
		C.int(B), C.int(Lq), C.int(Lk), C.int(nh), C.int(nkv), C.int(hd), C.float(scale))
}

// SwiGLUForward computes out = silu(gate) * up over n elements.
func SwiGLUForward(out, gate, up Buf, n int) {
	dims("SwiGLUForward", "n", n)
	need("SwiGLUForward", "out", out, n, F32)
	need("SwiGLUForward", "gate", gate, n, F32)
	need("SwiGLUForward", "up", up, n, F32)
	C.gk_swiglu_forward(fp(out), fp(gate), fp(up), C.size_t(n))
}

// SwiGLUBackward adds the gradients into dgate and dup (either may be the zero Buf).
func SwiGLUBackward(dgate, dup, dout, gate, up Buf, n int) {
	dims("SwiGLUBackward", "n", n)
	optional("SwiGLUBackward", "dgate", dgate, n, F32)
	optional("SwiGLUBackward", "dup", dup, n, F32)
	need("SwiGLUBackward", "dout", dout, n, F32)
	need("SwiGLUBackward", "gate", gate, n, F32)
	need("SwiGLUBackward", "up", up, n, F32)
	C.gk_swiglu_backward(fp(dgate), fp(dup), fp(dout), fp(gate), fp(up), C.size_t(n))
}

// Add computes y += x over n elements.
func Add(y, x Buf, n int) {
	dims("Add", "n", n)
	need("Add", "y", y, n, F32)
	need("Add", "x", x, n, F32)
	C.gk_add(fp(y), fp(x), C.size_t(n))
}

// Scale computes y *= a over n elements.
func Scale(y Buf, a float32, n int) {
	dims("Scale", "n", n)
	need("Scale", "y", y, n, F32)
	C.gk_scale(fp(y), C.float(a), C.size_t(n))
}

// EmbeddingForward copies row ids[t] of table[V,C] to out[t] for t < T. Ids are not range-checked
// here: the caller validates them against the vocabulary.
func EmbeddingForward(out, ids, table Buf, T, C_ int) {
	dims("EmbeddingForward", "T", T, "C", C_)
	need("EmbeddingForward", "out", out, T*C_, F32)
	need("EmbeddingForward", "ids", ids, T, I32)
	need("EmbeddingForward", "table", table, C_, F32)
	C.gk_embedding_forward(fp(out), ip(ids), fp(table), C.int(T), C.int(C_))
}

// EmbeddingBackward adds dout[t] into row ids[t] of dtable (ids of -1 are skipped).
func EmbeddingBackward(dtable, dout, ids Buf, T, C_ int) {
	dims("EmbeddingBackward", "T", T, "C", C_)
	need("EmbeddingBackward", "dtable", dtable, C_, F32)
	need("EmbeddingBackward", "dout", dout, T*C_, F32)
	need("EmbeddingBackward", "ids", ids, T, I32)
	C.gk_embedding_backward(fp(dtable), fp(dout), ip(ids), C.int(T), C.int(C_))
}

// SoftmaxXent is the fused log-softmax and weighted cross-entropy over logits[T,V]: it writes
// logprob[t] of target[t] (0 for a target of -1; logprob may be the zero Buf), WRITES dlogits =
// weight[t] * (softmax - onehot) when dlogits is not the zero Buf (it may be logits itself), and
// returns -sum_t weight[t] * logprob[t]. weight may be the zero Buf (all 1).
func SoftmaxXent(logprob, dlogits, logits, target, weight Buf, T, V int) float64 {
	dims("SoftmaxXent", "T", T, "V", V)
	optional("SoftmaxXent", "logprob", logprob, T, F32)
	optional("SoftmaxXent", "dlogits", dlogits, T*V, F32)
	need("SoftmaxXent", "logits", logits, T*V, F32)
	need("SoftmaxXent", "target", target, T, I32)
	optional("SoftmaxXent", "weight", weight, T, F32)
	return float64(C.gk_softmax_xent(fp(logprob), fp(dlogits), fp(logits), ip(target), fp(weight), C.int(T), C.int(V)))
}

// SumSquares returns the sum of squares of x's first n elements, accumulated in float64.
func SumSquares(x Buf, n int) float64 {
	dims("SumSquares", "n", n)
	need("SumSquares", "x", x, n, F32)
	return float64(C.gk_sum_squares(fp(x), C.size_t(n)))
}

// AdamW applies one AdamW step (decoupled weight decay, PyTorch's formula) to n parameters; the
// gradient is multiplied by gradScale first (global-norm clipping); step counts from 1.
func AdamW(param, grad, m, v Buf, n int, lr, beta1, beta2, eps, weightDecay, gradScale float32, step int) {
	dims("AdamW", "n", n)
	if step < 1 {
		panic(fmt.Sprintf("kernels: AdamW: step %d, want ≥ 1", step))
	}
	need("AdamW", "param", param, n, F32)
	need("AdamW", "grad", grad, n, F32)
	need("AdamW", "m", m, n, F32)
	need("AdamW", "v", v, n, F32)
	C.gk_adamw(fp(param), fp(grad), fp(m), fp(v), C.size_t(n), C.float(lr), C.float(beta1), C.float(beta2),
		C.float(eps), C.float(weightDecay), C.float(gradScale), C.int(step))
}
