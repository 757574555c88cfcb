package kernels

/*
#include "gorstar_kernels.h"
*/
import "C"

import "fmt"

// RMSNormForward computes y = w * x / sqrt(mean(x^2) + eps) per row of x[T,C] and saves the
// reciprocal root mean square in rstd[T] (may be the zero Buf when no backward follows). A bfloat16
// y gets the float32 result rounded to nearest even (a GEMM operand stored at half the size).
func RMSNormForward(y, rstd, x, w Buf, T, C_ int, eps float32) {
	dims("RMSNormForward", "T", T, "C", C_)
	optional("RMSNormForward", "rstd", rstd, T, F32)
	need("RMSNormForward", "x", x, T*C_, F32)
	need("RMSNormForward", "w", w, C_, F32)
	if y.dt == BF16 {
		need("RMSNormForward", "y", y, T*C_, BF16)
		cpuOnly("RMSNormForward with bfloat16 activations")
		rmsNormForwardBF16(y, rstd, x, w, T, C_, eps)
		return
	}
	need("RMSNormForward", "y", y, T*C_, F32)
	if dev != nil {
		dev.RMSNormForward(y, rstd, x, w, T, C_, eps)
		return
	}
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
	if dev != nil {
		dev.RMSNormBackward(dx, dw, dy, x, w, rstd, T, C_)
		return
	}
	C.gk_rmsnorm_backward(fp(dx), fp(dw), fp(dy), fp(x), fp(w), fp(rstd), C.int(T), C.int(C_))
}

func ropeCheck(op string, x, pos Buf, T, heads, headDim int) {
	ropeShape(op, x, T, heads, headDim)
	need(op, "pos", pos, T, I32)
}

// ropeShape checks x[T, heads, headDim] with an even headDim.
func ropeShape(op string, x Buf, T, heads, headDim int) {
	dims(op, "T", T, "heads", heads, "headDim", headDim)
	if headDim%2 != 0 {
		panic(fmt.Sprintf("kernels: %s: headDim %d is odd", op, headDim))
	}
	need(op, "x", x, T*heads*headDim, F32)
}

// RoPEForward rotates x[T, heads, headDim] in place by pos[t] * theta^(-2i/headDim), Hugging Face
// "rotate half" pairing (i with i + headDim/2).
func RoPEForward(x, pos Buf, T, heads, headDim int, theta float32) {
	ropeCheck("RoPEForward", x, pos, T, heads, headDim)
	if dev != nil {
		dev.RoPEForward(x, pos, T, heads, headDim, theta)
		return
	}
	C.gk_rope_forward(fp(x), ip(pos), C.int(T), C.int(heads), C.int(headDim), C.float(theta))
}

// RoPETable writes the angles RoPEForward takes for rows at positions pos into cs[T, headDim]
// (cos, then sin), for RoPEApply: several tensors of the same rows (a decode step's queries and
// keys, in every layer) then take cos and sin once per row instead of once per row and call.
func RoPETable(cs, pos Buf, T, headDim int, theta float32) {
	ropeCheck("RoPETable", cs, pos, T, 1, headDim)
	if dev != nil {
		dev.RoPETable(cs, pos, T, headDim, theta)
		return
	}
	C.gk_rope_table(fp(cs), ip(pos), C.int(T), C.int(headDim), C.float(theta))
}

// RoPEApply is RoPEForward with the angles of RoPETable: the same bits.
func RoPEApply(x, cs Buf, T, heads, headDim int) {
	ropeShape("RoPEApply", x, T, heads, headDim)
	need("RoPEApply", "cs", cs, T*headDim, F32)
	if dev != nil {
		dev.RoPEApply(x, cs, T, heads, headDim)
		return
	}
	C.gk_rope_apply(fp(x), fp(cs), C.int(T), C.int(heads), C.int(headDim))
}

// RoPEBackward maps the gradient of RoPEForward's output to its input, in place.
func RoPEBackward(dx, pos Buf, T, heads, headDim int, theta float32) {
	ropeCheck("RoPEBackward", dx, pos, T, heads, headDim)
	if dev != nil {
		dev.RoPEBackward(dx, pos, T, heads, headDim, theta)
		return
	}
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
	AttentionForwardDocs(out, lse, q, k, v, Buf{}, B, Lq, Lk, nh, nkv, hd, scale)
}

// AttentionForwardDocs is AttentionForward with document masking, for several sequences packed
// into one row: docStart (int32 [B,Lk]) gives for key position p of row b the position where p's
// document begins, and the query at key position p sees keys docStart[b,p]..p only. Documents are
// contiguous (see CheckDocStarts); pairs across documents are skipped, not computed and masked.
// The zero Buf is one document per row (AttentionForward); so is a docStart of zeros, bit for bit.
func AttentionForwardDocs(out, lse, q, k, v, docStart Buf, B, Lq, Lk, nh, nkv, hd int, scale float32) {
	op := "AttentionForward"
	attentionCheck(op, B, Lq, Lk, nh, nkv, hd)
	need(op, "out", out, B*Lq*nh*hd, F32)
	optional(op, "lse", lse, B*nh*Lq, F32)
	need(op, "q", q, B*Lq*nh*hd, F32)
	need(op, "k", k, B*Lk*nkv*hd, F32)
	need(op, "v", v, B*Lk*nkv*hd, F32)
	docStartCheck(op, docStart, B, Lk)
	if dev != nil {
		dev.AttentionForward(out, lse, q, k, v, docStart, B, Lq, Lk, nh, nkv, hd, scale)
		return
	}
	C.gk_attention_forward(fp(out), fp(lse), fp(q), fp(k), fp(v), ip(docStart), C.int(B), C.int(Lq), C.int(Lk),
		C.int(nh), C.int(nkv), C.int(hd), C.float(scale))
}

// AttentionBackward adds the gradients into dq, dk, dv (any may be the zero Buf) from dout and the
// forward's inputs, out and lse (lse may be the zero Buf: it is then recomputed).
func AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse Buf, B, Lq, Lk, nh, nkv, hd int, scale float32) {
	AttentionBackwardDocs(dq, dk, dv, dout, q, k, v, out, lse, Buf{}, B, Lq, Lk, nh, nkv, hd, scale)
}

// AttentionBackwardDocs is AttentionBackward for AttentionForwardDocs: pass the forward's docStart.
func AttentionBackwardDocs(dq, dk, dv, dout, q, k, v, out, lse, docStart Buf, B, Lq, Lk, nh, nkv, hd int, scale float32) {
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
	docStartCheck(op, docStart, B, Lk)
	if dev != nil {
		dev.AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse, docStart, B, Lq, Lk, nh, nkv, hd, scale)
		return
	}
	C.gk_attention_backward(fp(dq), fp(dk), fp(dv), fp(dout), fp(q), fp(k), fp(v), fp(out), fp(lse), ip(docStart),
		C.int(B), C.int(Lq), C.int(Lk), C.int(nh), C.int(nkv), C.int(hd), C.float(scale))
}

// docStartCheck panics unless docStart is the zero Buf or int32 [B,Lk] holding contiguous
// documents. The values are checked where the buffer is host memory (the CPU backend); on a GPU
// the caller is trusted (the kernels clamp out-of-range values, so a bad one gives wrong results,
// never a bad memory access).
func docStartCheck(op string, docStart Buf, B, Lk int) {
	if docStart.IsNil() {
		return
	}
	need(op, "docStart", docStart, B*Lk, I32)
	if host := docStart.Int32s(); host != nil {
		if err := CheckDocStarts(host[:B*Lk], B, Lk); err != nil {
			panic(fmt.Sprintf("kernels: %s: %v", op, err))
		}
	}
}

// CheckDocStarts reports whether starts ([B,L], row by row) describe contiguous documents: in
// every row, starts[0] = 0 and starts[p] is p (a document begins) or starts[p-1] (it goes on).
func CheckDocStarts(starts []int32, B, L int) error {
	if len(starts) < B*L {
		return fmt.Errorf("document starts: %d values for %d×%d", len(starts), B, L)
	}
	for b := 0; b < B; b++ {
		row := starts[b*L : (b+1)*L]
		for p, s := range row {
			if int(s) != p && (p == 0 || s != row[p-1]) {
				return fmt.Errorf("document starts: row %d position %d starts at %d, want %d or the previous %d",
					b, p, s, p, row[max(p-1, 0)])
			}
		}
	}
	return nil
}

// DocStarts fills starts (L values) for one row holding documents of the given lengths one after
// another from position 0; positions past their sum are one-token documents (padding that sees
// only itself). It returns the number of positions the documents cover.
func DocStarts(starts []int32, lengths []int) int {
	p := 0
	for _, n := range lengths {
		for i := 0; i < n && p < len(starts); i++ {
			starts[p] = int32(p - i)
			p++
		}
	}
	covered := p
	for ; p < len(starts); p++ {
		starts[p] = int32(p)
	}
	return covered
}

// SwiGLUForward computes out = silu(gate) * up over n elements; a bfloat16 out gets the float32
// result rounded to nearest even.
func SwiGLUForward(out, gate, up Buf, n int) {
	dims("SwiGLUForward", "n", n)
	need("SwiGLUForward", "gate", gate, n, F32)
	need("SwiGLUForward", "up", up, n, F32)
	if out.dt == BF16 {
		need("SwiGLUForward", "out", out, n, BF16)
		cpuOnly("SwiGLUForward with bfloat16 activations")
		swiGLUForwardBF16(out, gate, up, n)
		return
	}
	need("SwiGLUForward", "out", out, n, F32)
	if dev != nil {
		dev.SwiGLUForward(out, gate, up, n)
		return
	}
	C.gk_swiglu_forward(fp(out), fp(gate), fp(up), C.size_t(n))
}

// SwiGLUBackward writes the gradients into dgate and dup (either may be the zero Buf): they need
// no clearing first.
func SwiGLUBackward(dgate, dup, dout, gate, up Buf, n int) {
	dims("SwiGLUBackward", "n", n)
	optional("SwiGLUBackward", "dgate", dgate, n, F32)
	optional("SwiGLUBackward", "dup", dup, n, F32)
	need("SwiGLUBackward", "dout", dout, n, F32)
	need("SwiGLUBackward", "gate", gate, n, F32)
	need("SwiGLUBackward", "up", up, n, F32)
	if dev != nil {
		dev.SwiGLUBackward(dgate, dup, dout, gate, up, n)
		return
	}
	C.gk_swiglu_backward(fp(dgate), fp(dup), fp(dout), fp(gate), fp(up), C.size_t(n))
}

// Add computes y += x over n elements.
func Add(y, x Buf, n int) {
	dims("Add", "n", n)
	need("Add", "y", y, n, F32)
	need("Add", "x", x, n, F32)
	if dev != nil {
		dev.Add(y, x, n)
		return
	}
	C.gk_add(fp(y), fp(x), C.size_t(n))
}

// Scale computes y *= a over n elements.
func Scale(y Buf, a float32, n int) {
	dims("Scale", "n", n)
	need("Scale", "y", y, n, F32)
	if dev != nil {
		dev.Scale(y, a, n)
		return
	}
	C.gk_scale(fp(y), C.float(a), C.size_t(n))
}

// EmbeddingForward copies row ids[t] of table[V,C] to out[t] for t < T. Ids are not range-checked
// here: the caller validates them against the vocabulary. A bfloat16 table (an inference-only bf16
// model's) is widened exactly, row by row.
func EmbeddingForward(out, ids, table Buf, T, C_ int) {
	dims("EmbeddingForward", "T", T, "C", C_)
	need("EmbeddingForward", "out", out, T*C_, F32)
	need("EmbeddingForward", "ids", ids, T, I32)
	if dev != nil {
		need("EmbeddingForward", "table", table, C_, table.dt)
		dev.EmbeddingForward(out, ids, table, T, C_)
		return
	}
	if table.dt == BF16 { // an inference-only bf16 model's table: rows widened exactly
		need("EmbeddingForward", "table", table, C_, BF16)
		embeddingForwardBF16(out, ids, table, T, C_)
		return
	}
	need("EmbeddingForward", "table", table, C_, F32)
	C.gk_embedding_forward(fp(out), ip(ids), fp(table), C.int(T), C.int(C_))
}

// EmbeddingBackward adds dout[t] into row ids[t] of dtable (ids of -1 are skipped).
func EmbeddingBackward(dtable, dout, ids Buf, T, C_ int) {
	dims("EmbeddingBackward", "T", T, "C", C_)
	need("EmbeddingBackward", "dtable", dtable, C_, F32)
	need("EmbeddingBackward", "dout", dout, T*C_, F32)
	need("EmbeddingBackward", "ids", ids, T, I32)
	if dev != nil {
		dev.EmbeddingBackward(dtable, dout, ids, T, C_)
		return
	}
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
	if dev != nil {
		return dev.SoftmaxXent(logprob, dlogits, logits, target, weight, T, V)
	}
	return float64(C.gk_softmax_xent(fp(logprob), fp(dlogits), fp(logits), ip(target), fp(weight), C.int(T), C.int(V)))
}

// SumSquares returns the sum of squares of x's first n elements, accumulated in float64.
func SumSquares(x Buf, n int) float64 {
	dims("SumSquares", "n", n)
	need("SumSquares", "x", x, n, F32)
	if dev != nil {
		return dev.SumSquares(x, n)
	}
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
	if dev != nil {
		dev.AdamW(param, grad, m, v, n, lr, beta1, beta2, eps, weightDecay, gradScale, step)
		return
	}
	C.gk_adamw(fp(param), fp(grad), fp(m), fp(v), C.size_t(n), C.float(lr), C.float(beta1), C.float(beta2),
		C.float(eps), C.float(weightDecay), C.float(gradScale), C.int(step))
}
