package model

import "gorstar/kernels"

// layerActs are the activations of one decoder layer that backward needs. In a bf16 model the
// groups of Model.saved are bfloat16 buffers; everything else is float32.
type layerActs struct {
	ln1, rstd1       kernels.Buf // input RMSNorm output [T,C] (lowOperands) and 1/rms [T]
	qRaw, rstdQ      kernels.Buf // q projection before q_norm [T,Q] and its 1/rms [T*heads] (Qwen3)
	kRaw, rstdK      kernels.Buf // same for k [T,KV], [T*kvHeads]
	q, k, v          kernels.Buf // after norm and RoPE: [T,Q], [T,KV], [T,KV]
	att, lse         kernels.Buf // attention output [T,Q] (lowAttention) and log-sum-exp [B,heads,L]
	mid              kernels.Buf // residual stream after attention [T,C]
	ln2, rstd2       kernels.Buf // post-attention RMSNorm [T,C] (lowOperands), [T]
	gate, up, swiglu kernels.Buf // MLP [T,I] each (swiglu: lowOperands)
}

// Groups of saved activations a bf16 model may store in bfloat16 (Model.saved).
const (
	// lowOperands: the normed inputs of q/k/v and gate/up and the SwiGLU output, read only as
	// operands of bf16 GEMMs, which round them to bf16 anyway: the same bits in every result
	// (TestBF16SavedOperandsSameBits). On in every bf16 model.
	lowOperands uint8 = 1 << iota
	// lowAttention: the attention output. The o_proj product keeps its bits, but the attention
	// backward's D = rowsum(dout·out) reads the rounded out: q/k gradients move by 2.6 u at 16
	// tokens, 6.3 u at 64 (TestBF16SavedAttentionWithinBound), for 2 bytes of Q a token and layer,
	// less an fp32 [T,Q] it needs to compute in (a loss under full recomputation). Off.
	lowAttention
)

// savedLow is the set of saved-activation groups stored in bfloat16 at the model's precision.
func (m *Model) savedLow() uint8 {
	if m.Precision() != BF16 {
		return 0
	}
	return m.saved
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
	B, L, T   int   // the current batch
	capT      int   // tokens the buffers hold
	recompute int   // m.Recompute when allocated
	chunk     int   // tokens per lm_head/cross-entropy chunk
	low       uint8 // the groups stored in bfloat16 (savedLow)

	ids, targets, pos kernels.Buf // int32 [T]
	docs              kernels.Buf // int32 [T]: document starts of a packed batch (kernels.DocStarts)
	packed            bool        // the current batch has Batch.Docs
	weights, logprob  kernels.Buf // [T], indexed by the predicting position
	resid             []kernels.Buf
	layers            []*layerActs // per layer; recomputed layers share one
	lnf, rstdf        kernels.Buf  // final norm [T,C], [T]
	attF              kernels.Buf  // float32 attention output [T,Q] of one layer when att is bfloat16
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

// allocLow allocates a buffer of group g: bfloat16 when a stores g in bfloat16.
func (a *activations) allocLow(g uint8, n int) kernels.Buf {
	if a.low&g == 0 {
		return a.alloc(n)
	}
	b := kernels.AllocBF16(n)
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
	low := m.savedLow()
	if a := m.act; a != nil && T <= a.capT && a.recompute == m.Recompute && a.chunk == m.chunkTokens(a.capT) && a.low == low {
		a.B, a.L, a.T, a.haveBatch = B, L, T, false
		return a
	}
	m.freeActivations()
	c := m.Config
	C, I, Q, KV, V := c.HiddenSize, c.IntermediateSize, c.QDim(), c.KVDim(), c.VocabSize
	a := &activations{B: B, L: L, T: T, capT: T, recompute: m.Recompute, chunk: m.chunkTokens(T), low: low}
	a.ids, a.targets, a.pos, a.docs = a.allocI32(T), a.allocI32(T), a.allocI32(T), a.allocI32(T)
	a.weights, a.logprob = a.alloc(T), a.alloc(T)
	for i := 0; i <= c.NumHiddenLayers; i++ {
		a.resid = append(a.resid, a.alloc(T*C))
	}
	newLayer := func() *layerActs {
		l := &layerActs{
			ln1: a.allocLow(lowOperands, T*C), rstd1: a.alloc(T),
			q: a.alloc(T * Q), k: a.alloc(T * KV), v: a.alloc(T * KV),
			att: a.allocLow(lowAttention, T*Q), lse: a.alloc(T * c.NumAttentionHeads),
			mid: a.alloc(T * C), ln2: a.allocLow(lowOperands, T*C), rstd2: a.alloc(T),
			gate: a.alloc(T * I), up: a.alloc(T * I), swiglu: a.allocLow(lowOperands, T*I),
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
	if low&lowAttention != 0 {
		a.attF = a.alloc(T * Q)
	}
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

// activationBytes is what activationsFor, gradScratchFor and the loss head's compact rows allocate
// for T tokens with the first recompute layers recomputed, loss chunks of chunk tokens and the
// groups low stored in bfloat16 (TestStepMemoryTracksAllocation holds them equal).
func (c Config) activationBytes(low uint8, T, recompute, chunk int64) int64 {
	C, I, Q, KV := int64(c.HiddenSize), int64(c.IntermediateSize), int64(c.QDim()), int64(c.KVDim())
	nh, nkv, nL := int64(c.NumAttentionHeads), int64(c.NumKeyValueHeads), int64(c.NumHiddenLayers)
	size := func(g uint8) int64 { // bytes per element of group g
		if low&g != 0 {
			return 2
		}
		return 4
	}
	layer := 4*(2*T+T*Q+2*T*KV+T*nh+T*C+2*T*I) + size(lowOperands)*(2*T*C+T*I) + size(lowAttention)*T*Q
	scratch := 4 * (2*T*C + 2*T*Q + 2*T*KV + 3*T*I) // gradScratch
	if c.QKNorm() {
		layer += 4 * (T*Q + T*nh + T*KV + T*nkv)
		scratch += 4 * (T*Q + T*KV)
	}
	kept := nL - min(recompute, nL)
	if recompute > 0 {
		kept++ // the layer being recomputed
	}
	b := 4*6*T + 4*(nL+1)*T*C + kept*layer + 4*(T*C+T) + 4*chunk*int64(c.VocabSize) // ids…logprob, resid, layers, lnf, logits
	if low&lowAttention != 0 {
		b += 4 * T * Q // attF
	}
	b += 4*T*C + scratch // dLNF, gradScratch
	b += 4*4*T + 4*2*T*C // the loss head's compact rows: rowIdx, targetsC, weightsC, logprobC, lnfC, dLNFC
	return b
}
