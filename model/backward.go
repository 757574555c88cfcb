package model

import "gorstar/kernels"

// backwardLayers propagates dLNF (set by lossHead) through the final norm, the layers in reverse
// and the embedding, adding every parameter gradient into m.g.
func (m *Model) backwardLayers(a *activations) {
	c := m.Config
	g := m.gradScratchFor(a)
	nL, T, C := c.NumHiddenLayers, a.T, c.HiddenSize
	g.dResid.Zero()
	kernels.RMSNormBackward(g.dResid, m.g.finalNorm, a.dLNF, a.resid[nL], m.w.finalNorm, a.rstdf, T, C)
	for i := nL - 1; i >= 0; i-- {
		if i < m.Recompute {
			m.layerForward(i, a)
		}
		m.layerBackward(i, a, g)
		m.gradsReady(i) // an overlapped all-reduce may send the finished buckets (allreduce.go)
	}
	kernels.EmbeddingBackward(m.g.embed, g.dResid, a.ids, T, C)
}

// layerBackward takes g.dResid = dLoss/d resid[i+1] to dLoss/d resid[i], adding layer i's
// parameter gradients. Input gradients of linear layers are written with beta 0 where they are
// the first contribution, so only the buffers the kernels add into are zeroed.
func (m *Model) layerBackward(i int, a *activations, g *gradScratch) {
	c := m.Config
	w, gw, l := m.w.layers[i], m.g.layers[i], a.layers[i]
	T, C, I, Q, KV := a.T, c.HiddenSize, c.IntermediateSize, c.QDim(), c.KVDim()
	nh, nkv, hd := c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim
	theta := float32(c.RopeTheta)
	none := kernels.Buf{}

	// MLP: resid[i+1] = mid + down(silu(gate(ln2)) * up(ln2)).
	matmulInto(g.dSwig, g.dResid, w.down, T, I, C, 0)
	kernels.LinearBackward(none, gw.down, none, g.dResid, l.swiglu, w.down, T, I, C)
	kernels.SwiGLUBackward(g.dGate, g.dUp, g.dSwig, l.gate, l.up, T*I)
	matmulInto(g.dLN, g.dGate, w.gate, T, C, I, 0)
	matmulInto(g.dLN, g.dUp, w.up, T, C, I, 1)
	kernels.LinearBackward(none, gw.gate, none, g.dGate, l.ln2, w.gate, T, C, I)
	kernels.LinearBackward(none, gw.up, none, g.dUp, l.ln2, w.up, T, C, I)
	kernels.RMSNormBackward(g.dResid, gw.postNorm, g.dLN, l.mid, w.postNorm, l.rstd2, T, C) // now d mid

	// Attention: mid = resid[i] + o(attention(rope(norm(q(ln1))), rope(norm(k(ln1))), v(ln1))).
	matmulInto(g.dAtt, g.dResid, w.o, T, Q, C, 0)
	kernels.LinearBackward(none, gw.o, gw.ob, g.dResid, l.att, w.o, T, Q, C)
	g.dQ.Zero()
	g.dK.Zero()
	g.dV.Zero()
	att := l.att
	if a.low&lowAttention != 0 { // widened (exactly) for the attention backward
		att = a.attF
		kernels.FromBF16(att, l.att, T*Q)
	}
	kernels.AttentionBackwardDocs(g.dQ, g.dK, g.dV, g.dAtt, l.q, l.k, l.v, att, l.lse, a.docStarts(), a.B, a.L,
		a.L, nh, nkv, hd, m.attentionScale())
	kernels.RoPEBackward(g.dQ, a.pos, T, nh, hd, theta)
	kernels.RoPEBackward(g.dK, a.pos, T, nkv, hd, theta)
	dq, dk := g.dQ, g.dK
	if c.QKNorm() {
		g.dQRaw.Zero()
		g.dKRaw.Zero()
		kernels.RMSNormBackward(g.dQRaw, gw.qNorm, g.dQ, l.qRaw, w.qNorm, l.rstdQ, T*nh, hd)
		kernels.RMSNormBackward(g.dKRaw, gw.kNorm, g.dK, l.kRaw, w.kNorm, l.rstdK, T*nkv, hd)
		dq, dk = g.dQRaw, g.dKRaw
	}
	matmulInto(g.dLN, dq, w.q, T, C, Q, 0)
	matmulInto(g.dLN, dk, w.k, T, C, KV, 1)
	matmulInto(g.dLN, g.dV, w.v, T, C, KV, 1)
	kernels.LinearBackward(none, gw.q, gw.qb, dq, l.ln1, w.q, T, C, Q)
	kernels.LinearBackward(none, gw.k, gw.kb, dk, l.ln1, w.k, T, C, KV)
	kernels.LinearBackward(none, gw.v, gw.vb, g.dV, l.ln1, w.v, T, C, KV)
	kernels.RMSNormBackward(g.dResid, gw.inNorm, g.dLN, a.resid[i], w.inNorm, l.rstd1, T, C)
}
