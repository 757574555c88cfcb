package model

import (
	"fmt"
	"math"

	"gorstar/internal/usererr"
	"gorstar/kernels"
)

// Batch is B token sequences of L tokens each, flattened row by row and right-padded. Every id
// must be a valid token id (pad with any id, e.g. the EOS id, and give pads weight 0).
type Batch struct {
	B, L int
	IDs  []int32 // [B*L]
	// Weights[b*L+i] weighs the loss on token i of row b given the tokens before it (i ≥ 1; the
	// weight at i = 0 is ignored). Nil means 1 for every token with i ≥ 1. The loss is
	// −Σ Weights·logprob, not normalized: pass 1/n to average over n tokens, 0 for pads and
	// prompt tokens, and for a policy gradient the negated dL/dlogprob.
	Weights []float32
	// Docs, when not nil, packs several documents (sequences) into each row: Docs[b] lists the
	// lengths of row b's documents in order from position 0 (each ≥ 1, sum ≤ L). Each document is
	// then a sequence of its own: attention stays inside it, RoPE positions restart at 0 at its
	// first token, whose weight is ignored (nothing before it predicts it) and whose log-probability
	// is 0, as at i = 0. The positions after a row's documents are padding: each sees only itself
	// and predicts nothing (its weight is ignored). No compute is spent on pairs across documents.
	// Nil: every row is one sequence of L tokens.
	Docs [][]int
}

// Result is what a forward pass returns.
type Result struct {
	// LogProbs[b*L+i] = log p(token i | tokens < i) of row b for i ≥ 1, and 0 for i = 0.
	// ForwardBackward computes them only for tokens of nonzero weight (0 elsewhere).
	LogProbs []float32
	Loss     float64 // −Σ Weights·LogProbs
}

func (m *Model) checkBatch(b *Batch) error {
	if b.B <= 0 || b.L <= 0 {
		return usererr.New("batch shape %d×%d: want at least one sequence of at least one token", b.B, b.L)
	}
	if len(b.IDs) != b.B*b.L {
		return usererr.New("batch: %d ids for a %d×%d batch", len(b.IDs), b.B, b.L)
	}
	if b.Weights != nil && len(b.Weights) != b.B*b.L {
		return usererr.New("batch: %d weights for a %d×%d batch", len(b.Weights), b.B, b.L)
	}
	if err := checkDocs(b); err != nil {
		return err
	}
	for i, id := range b.IDs {
		if id < 0 || int(id) >= m.Config.VocabSize {
			return usererr.New("batch: token id %d at row %d position %d is outside the vocabulary [0, %d)",
				id, i/b.L, i%b.L, m.Config.VocabSize)
		}
	}
	return nil
}

func checkDocs(b *Batch) error {
	if b.Docs == nil {
		return nil
	}
	if len(b.Docs) != b.B {
		return usererr.New("batch: documents for %d rows in a batch of %d", len(b.Docs), b.B)
	}
	for row, lengths := range b.Docs {
		if len(lengths) == 0 {
			return usererr.New("batch: row %d has no documents", row)
		}
		sum := 0
		for i, n := range lengths {
			if n < 1 {
				return usererr.New("batch: document %d of row %d has length %d, want ≥ 1", i, row, n)
			}
			sum += n
		}
		if sum > b.L {
			return usererr.New("batch: the documents of row %d hold %d tokens, more than the row's %d", row, sum, b.L)
		}
	}
	return nil
}

// load copies a batch's ids, next-token targets, positions, document starts and loss weights into
// the activations. Internally position t predicts token t+1, so weights and log-probabilities
// shift by one.
func (a *activations) load(b *Batch) {
	T := a.T
	if len(a.hostTargets) < a.capT {
		a.hostTargets, a.hostW, a.hostLP = make([]int32, a.capT), make([]float32, a.capT), make([]float32, a.capT)
	}
	a.ids.CopyFromI32(b.IDs)
	a.loadDocs(b)
	for t := 0; t < T; t++ {
		if !a.predicts(t) {
			a.hostTargets[t], a.hostW[t] = -1, 0
			continue
		}
		a.hostTargets[t] = b.IDs[t+1]
		if b.Weights == nil {
			a.hostW[t] = 1
		} else {
			a.hostW[t] = b.Weights[t+1]
		}
	}
	a.targets.CopyFromI32(a.hostTargets[:T])
	a.weights.CopyFrom(a.hostW[:T])
	a.haveBatch = true
}

// loadDocs sets the RoPE positions and, for a packed batch, the document starts (a.docs).
func (a *activations) loadDocs(b *Batch) {
	T, L := a.T, a.L
	a.packed = b.Docs != nil
	if !a.packed {
		for t := 0; t < T; t++ {
			a.hostTargets[t] = int32(t % L)
		}
		a.pos.CopyFromI32(a.hostTargets[:T])
		return
	}
	if len(a.hostStarts) < a.capT {
		a.hostStarts = make([]int32, a.capT)
	}
	starts := a.hostStarts[:T]
	for row, lengths := range b.Docs {
		kernels.DocStarts(starts[row*L:(row+1)*L], lengths)
	}
	for t := range starts {
		a.hostTargets[t] = int32(t%L) - starts[t] // position inside the document
	}
	a.pos.CopyFromI32(a.hostTargets[:T])
	a.docs.CopyFromI32(starts)
}

// predicts reports whether position t predicts the next token: not at the end of a row, nor at the
// end of a document of a packed batch (the next token begins another).
func (a *activations) predicts(t int) bool {
	if t%a.L == a.L-1 {
		return false
	}
	return !a.packed || a.hostStarts[t+1] == a.hostStarts[t]
}

// docStarts is the document starts for the attention kernels: the zero Buf unless packed.
func (a *activations) docStarts() kernels.Buf {
	if !a.packed {
		return kernels.Buf{}
	}
	return a.docs
}

func (a *activations) setWeights(w []float32) {
	T := a.T
	for t := 0; t < T; t++ {
		if !a.predicts(t) {
			a.hostW[t] = 0
		} else {
			a.hostW[t] = w[t+1]
		}
	}
	a.weights.CopyFrom(a.hostW[:T])
}

func (a *activations) result(loss float64) *Result {
	lp := make([]float32, a.T)
	for t := 0; t < a.T; t++ {
		if a.predicts(t) {
			lp[t+1] = a.hostLP[t]
		}
	}
	return &Result{LogProbs: lp, Loss: loss}
}

// Forward runs the model over a batch and returns per-token log-probabilities and the weighted
// loss. The activations stay for a following Backward.
func (m *Model) Forward(b *Batch) (*Result, error) {
	if err := m.checkBatch(b); err != nil {
		return nil, err
	}
	a := m.activationsFor(b.B, b.L)
	a.load(b)
	m.round()
	m.forwardLayers(a)
	loss := m.lossHead(a, false)
	return a.result(loss), nil
}

// Backward adds the gradient of −Σ weights·logprob for the batch of the last Forward to Grads
// (call ZeroGrads first to start a new accumulation). weights has the batch's layout (see
// Batch.Weights); nil keeps the batch's own. The lm_head is recomputed in chunks; the layers are
// not, except the first Recompute of them.
func (m *Model) Backward(weights []float32) error {
	a := m.act
	if a == nil || !a.haveBatch {
		return fmt.Errorf("model backward: no forward pass to differentiate")
	}
	if weights != nil {
		if len(weights) != a.T {
			return usererr.New("backward: %d weights for a %d×%d batch", len(weights), a.B, a.L)
		}
		a.setWeights(weights)
	}
	if m.Grads == nil {
		m.ZeroGrads()
	}
	m.lossHead(a, true)
	m.backwardLayers(a)
	return nil
}

// ForwardBackward is Forward and Backward in one pass, for losses whose weights are known before
// the forward (SFT): the lm_head and cross-entropy run once, their gradient computed chunk by
// chunk as the logits are made.
func (m *Model) ForwardBackward(b *Batch) (*Result, error) {
	if err := m.checkBatch(b); err != nil {
		return nil, err
	}
	if m.Grads == nil {
		m.ZeroGrads()
	}
	a := m.activationsFor(b.B, b.L)
	a.load(b)
	m.round()
	m.forwardLayers(a)
	loss := m.lossHead(a, true)
	m.backwardLayers(a)
	return a.result(loss), nil
}

func (m *Model) forwardLayers(a *activations) {
	c := m.Config
	kernels.EmbeddingForward(a.resid[0], a.ids, m.w.embed, a.T, c.HiddenSize)
	for i := 0; i < c.NumHiddenLayers; i++ {
		m.layerForward(i, a)
	}
	kernels.RMSNormForward(a.lnf, a.rstdf, a.resid[c.NumHiddenLayers], m.w.finalNorm, a.T, c.HiddenSize,
		float32(c.RMSNormEps))
}

func (m *Model) attentionScale() float32 { return float32(1 / math.Sqrt(float64(m.Config.HeadDim))) }

// layerForward computes layer i from a.resid[i] into a.resid[i+1], keeping what backward needs.
func (m *Model) layerForward(i int, a *activations) {
	c := m.Config
	w, l, x, out := m.w.layers[i], a.layers[i], a.resid[i], a.resid[i+1]
	T, C, I, Q, KV := a.T, c.HiddenSize, c.IntermediateSize, c.QDim(), c.KVDim()
	nh, nkv, hd := c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim
	eps, theta := float32(c.RMSNormEps), float32(c.RopeTheta)

	kernels.RMSNormForward(l.ln1, l.rstd1, x, w.inNorm, T, C, eps)
	q, k := l.q, l.k
	if c.QKNorm() {
		q, k = l.qRaw, l.kRaw
	}
	kernels.LinearForward(q, l.ln1, w.q, w.qb, T, C, Q)
	kernels.LinearForward(k, l.ln1, w.k, w.kb, T, C, KV)
	kernels.LinearForward(l.v, l.ln1, w.v, w.vb, T, C, KV)
	if c.QKNorm() {
		kernels.RMSNormForward(l.q, l.rstdQ, l.qRaw, w.qNorm, T*nh, hd, eps)
		kernels.RMSNormForward(l.k, l.rstdK, l.kRaw, w.kNorm, T*nkv, hd, eps)
	}
	kernels.RoPEForward(l.q, a.pos, T, nh, hd, theta)
	kernels.RoPEForward(l.k, a.pos, T, nkv, hd, theta)
	if m.roundKV() { // the values a decoder's bf16 cache holds (KVCache); gradients pass straight through
		kernels.RoundBF16(l.k, T*KV)
		kernels.RoundBF16(l.v, T*KV)
	}
	att := l.att
	if a.low&lowAttention != 0 { // kept in bf16: computed in fp32, rounded once
		att = a.attF
	}
	kernels.AttentionForwardDocs(att, l.lse, l.q, l.k, l.v, a.docStarts(), a.B, a.L, a.L, nh, nkv, hd,
		m.attentionScale())
	if a.low&lowAttention != 0 {
		kernels.ToBF16(l.att, att, T*Q)
	}
	kernels.LinearForward(l.mid, l.att, w.o, w.ob, T, Q, C)
	kernels.Add(l.mid, x, T*C)

	kernels.RMSNormForward(l.ln2, l.rstd2, l.mid, w.postNorm, T, C, eps)
	kernels.LinearForward(l.gate, l.ln2, w.gate, kernels.Buf{}, T, C, I)
	kernels.LinearForward(l.up, l.ln2, w.up, kernels.Buf{}, T, C, I)
	kernels.SwiGLUForward(l.swiglu, l.gate, l.up, T*I)
	kernels.LinearForward(out, l.swiglu, w.down, kernels.Buf{}, T, I, C)
	kernels.Add(out, l.mid, T*C)
}

// matmulInto sets dx[T,in] = dy[T,out]·W[out,in] + beta·dx: the input gradient of a linear layer,
// written rather than added when beta is 0 so the buffer needs no zeroing first.
func matmulInto(dx, dy, W kernels.Buf, T, in, out int, beta float32) {
	if W.DType() == kernels.BF16 { // a bf16 model's weights: the product in bf16 arithmetic
		kernels.GEMMBF16(false, false, T, in, out, 1, dy, out, W, in, beta, dx, in)
		return
	}
	kernels.SGEMM(false, false, T, in, out, 1, dy, out, W, in, beta, dx, in)
}
