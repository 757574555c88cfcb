package model

import "gorstar/kernels"

// layerActs are the activations of one decoder layer that backward needs.
type layerActs struct {
	ln1, rstd1       kernels.Buf // input RMSNorm output [T,C] and 1/rms [T]
	qRaw, rstdQ      kernels.Buf // q projection before q_norm [T,Q] and its 1/rms [T*heads] (Qwen3)
	kRaw, rstdK      kernels.Buf // same for k [T,KV], [T*kvHeads]
	q, k, v          kernels.Buf // after norm and RoPE: [T,Q], [T,KV], [T,KV]
	att, lse         kernels.Buf // attention output [T,Q] and log-sum-exp [B,heads,L]
	mid              kernels.Buf // residual stream after attention [T,C]
	ln2, rstd2       kernels.Buf // post-attention RMSNorm [T,C], [T]
	gate, up, swiglu kernels.Buf // MLP [T,I] each
}

// gradScratch holds the gradients of one layer's activations during backward, reused by every layer.
type gradScratch struct {
	dResid            kernels.Buf // gradient of the residual stream [T,C]
	dLN               kernels.Buf // of a norm output [T,C]
	dAtt, dQ, dQRaw   kernels.Buf // [T,Q]
	dK, dV, dKRaw     kernels.Buf // [T,KV]
	dGate, dUp, dSwig kernels.Buf // [T,I]
}

// activations are the buffers of a batch of up to capT tokens, allocated once and reused for every
// batch that fits (kernels accept buffers longer than the sizes passed).
type activations struct {
	B, L, T   int // the current batch
	capT      int // tokens the buffers hold
	recompute int // m.Recompute when allocated
	chunk     int // tokens per lm_head/cross-entropy chunk

	ids, targets, pos kernels.Buf // int32 [T]
	docs              kernels.Buf // int32 [T]: document starts of a packed batch (kernels.DocStarts)
	packed            bool        // the current batch has Batch.Docs
	weights, logprob  kernels.Buf // [T], indexed by the predicting position
	resid             []kernels.Buf
	layers            []*layerActs // per layer; recomputed layers share one
	lnf, rstdf        kernels.Buf  // final norm [T,C], [T]
	logits            kernels.Buf  // [chunk,V]
	dLNF              kernels.Buf  // [T,C]
	grad              gradScratch
	all               []kernels.Buf // every Alloc, for Free

	// Rows of nonzero loss weight, gathered for the lm_head in backward.
	rowIdx, targetsC      kernels.Buf // int32 [capT]
	weightsC, logprobC    kernels.Buf // [capT]
	lnfC, dLNFC           kernels.Buf // [capT,C]
	hostW, hostLP         []float32
	hostTargets, hostRows []int32
	hostStarts            []int32 // document starts of a packed batch [T]
	haveBatch             bool
}

func (a *activations) alloc(n int) kernels.Buf {
	b := kernels.Alloc(n)
	a.all = append(a.all, b)
	return b
}

func (a *activations) allocI32(n int) kernels.Buf {
	b := kernels.AllocI32(n)
	a.all = append(a.all, b)
	return b
}

func (a *activations) free() {
	for _, b := range a.all {
		b.Free()
	}
	a.all = nil
}

func (m *Model) freeActivations() {
	if m.act != nil {
		m.act.free()
		m.act = nil
	}
}

// activationsFor returns the buffers for a B×L batch, reusing the current ones when the batch
// fits in them.
func (m *Model) activationsFor(B, L int) *activations {
	T := B * L
	if a := m.act; a != nil && T <= a.capT && a.recompute == m.Recompute && a.chunk == m.chunkTokens(a.capT) {
		a.B, a.L, a.T, a.haveBatch = B, L, T, false
		return a
	}
	m.freeActivations()
	c := m.Config
	C, I, Q, KV, V := c.HiddenSize, c.IntermediateSize, c.QDim(), c.KVDim(), c.VocabSize
	a := &activations{B: B, L: L, T: T, capT: T, recompute: m.Recompute, chunk: m.chunkTokens(T)}
	a.ids, a.targets, a.pos, a.docs = a.allocI32(T), a.allocI32(T), a.allocI32(T), a.allocI32(T)
	a.weights, a.logprob = a.alloc(T), a.alloc(T)
	for i := 0; i <= c.NumHiddenLayers; i++ {
		a.resid = append(a.resid, a.alloc(T*C))
	}
	newLayer := func() *layerActs {
		l := &layerActs{
			ln1: a.alloc(T * C), rstd1: a.alloc(T),
			q: a.alloc(T * Q), k: a.alloc(T * KV), v: a.alloc(T * KV),
			att: a.alloc(T * Q), lse: a.alloc(T * c.NumAttentionHeads),
			mid: a.alloc(T * C), ln2: a.alloc(T * C), rstd2: a.alloc(T),
			gate: a.alloc(T * I), up: a.alloc(T * I), swiglu: a.alloc(T * I),
		}
		if c.QKNorm() {
			l.qRaw, l.rstdQ = a.alloc(T*Q), a.alloc(T*c.NumAttentionHeads)
			l.kRaw, l.rstdK = a.alloc(T*KV), a.alloc(T*c.NumKeyValueHeads)
		}
		return l
	}
	var shared *layerActs
	for i := 0; i < c.NumHiddenLayers; i++ {
		if i < m.Recompute {
			if shared == nil {
				shared = newLayer()
			}
			a.layers = append(a.layers, shared)
		} else {
			a.layers = append(a.layers, newLayer())
		}
	}
	a.lnf, a.rstdf = a.alloc(T*C), a.alloc(T)
	a.logits = a.alloc(a.chunk * V)
	m.act = a
	return a
}

// chunkTokens is the lm_head chunk for buffers of capT tokens.
func (m *Model) chunkTokens(capT int) int {
	n := m.LossChunkTokens
	if n <= 0 {
		n = max(1, (32<<20)/m.Config.VocabSize)
	}
	return min(n, capT)
}

// gradScratch allocates the backward buffers on first use (inference never needs them).
func (m *Model) gradScratchFor(a *activations) *gradScratch {
	if !a.grad.dResid.IsNil() {
		return &a.grad
	}
	c := m.Config
	T, C, I, Q, KV := a.capT, c.HiddenSize, c.IntermediateSize, c.QDim(), c.KVDim()
	a.dLNF = a.alloc(T * C)
	g := &a.grad
	g.dResid, g.dLN = a.alloc(T*C), a.alloc(T*C)
	g.dAtt, g.dQ = a.alloc(T*Q), a.alloc(T*Q)
	g.dK, g.dV = a.alloc(T*KV), a.alloc(T*KV)
	if c.QKNorm() {
		g.dQRaw, g.dKRaw = a.alloc(T*Q), a.alloc(T*KV)
	}
	g.dGate, g.dUp, g.dSwig = a.alloc(T*I), a.alloc(T*I), a.alloc(T*I)
	return g
}
