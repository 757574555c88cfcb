package model

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"

	"gorstar/kernels"
)

// KVCache holds the keys and values of one sequence for every layer, preallocated for a fixed
// number of tokens. Layer i's keys are one contiguous [capacity, kvHeads, headDim] block, its
// values the next, so the first Len() rows are exactly the [1, Lk, kvHeads, headDim] tensor the
// attention kernel takes. A cache belongs to one sequence; Decoder.Step appends to it.
//
// A bf16 model's caches hold bfloat16 keys and values on the CPU (kvBF16), rounded to nearest even
// after RoPE (and k_norm): half the bytes, and the values the trainer's forward rounds its keys and
// values to as well, so that decoding still matches it bit for bit. Elsewhere they are float32.
type KVCache struct {
	buf      kernels.Buf
	tiles    kernels.Buf // the keys again, as AttentionDecode's key tiles (where kernels.DecodeKeyTiles)
	capacity int
	length   int
	kvDim    int
	// Provenance, so that a decode step reads a prefix several caches hold once (AttentionDecode's
	// shared counts): every cache of one origin holds the origin's rows, bit for bit, in its first
	// sharedLen() rows. A cache that computed its rows itself is its origin's root (all its rows
	// are the origin's); one that copied a prefix (CopyPrefix) shares what it copied, up to what its
	// source shared.
	origin uint64
	root   bool
	shared int // without root
}

// kvOrigins numbers the origins of caches (0 is none).
var kvOrigins atomic.Uint64

// newOrigin makes c the root of an origin of its own.
func (c *KVCache) newOrigin() {
	c.origin, c.root, c.shared = kvOrigins.Add(1), true, 0
}

// sharedLen is the number of leading rows c holds of its origin's.
func (c *KVCache) sharedLen() int {
	if c.root {
		return c.length
	}
	return min(c.shared, c.length)
}

// NewKVCache allocates a cache for capacity tokens.
func (m *Model) NewKVCache(capacity int) (*KVCache, error) {
	if capacity <= 0 {
		return nil, fmt.Errorf("new kv cache: capacity %d tokens, want > 0", capacity)
	}
	kv, layers := m.Config.KVDim(), m.Config.NumHiddenLayers
	alloc := kernels.Alloc
	if m.kvBF16() {
		alloc = kernels.AllocBF16
	}
	c := &KVCache{buf: alloc(2 * layers * capacity * kv), capacity: capacity, kvDim: kv}
	if kernels.DecodeKeyTiles() {
		c.tiles = alloc(layers * kernels.KeyTileFloats(capacity, kv))
	}
	// Touch the memory now, on the caller's thread: a page first written inside a step's kernels
	// faults there and stalls the whole thread team at the next barrier.
	c.buf.Zero()
	c.tiles.Zero()
	c.newOrigin()
	return c, nil
}

// KVFloatsPerToken is the elements a cache takes per token of capacity: keys and values, and the
// keys' tiles where the kernels use them (less their rounding to 8 tokens per cache).
func (c Config) KVFloatsPerToken() int {
	n := 2
	if kernels.DecodeKeyTiles() {
		n = 3
	}
	return n * c.NumHiddenLayers * c.KVDim()
}

// KVBytesPerToken is the bytes a cache of a model of precision p takes per token of capacity:
// KVFloatsPerToken elements of 2 bytes (bfloat16) for a bf16 model on the CPU, 4 otherwise.
func (c Config) KVBytesPerToken(p Precision) int {
	if kvBF16(p) {
		return 2 * c.KVFloatsPerToken()
	}
	return 4 * c.KVFloatsPerToken()
}

// kvBF16 reports whether a model of precision p keeps bfloat16 KV caches: bf16 on the CPU (the
// device kernels take float32 caches).
func kvBF16(p Precision) bool { return p == BF16 && !kernels.OnDevice() }

// roundKV reports whether the model's keys and values are rounded to bfloat16 before attention:
// in every bf16 model, so that training and decoding see the same values whether the cache holds
// bfloat16 (the CPU) or float32 holding those values (a device).
func (m *Model) roundKV() bool { return m.Precision() == BF16 }

// kvBF16 reports whether the model's caches are bfloat16 (a bf16 model on the CPU).
func (m *Model) kvBF16() bool { return kvBF16(m.Precision()) }

// Len is the number of tokens whose keys and values the cache holds.
func (c *KVCache) Len() int { return c.length }

// Cap is the number of tokens the cache can hold.
func (c *KVCache) Cap() int { return c.capacity }

// Truncate forgets every token from position n on (n ≤ Len), so they can be recomputed differently.
func (c *KVCache) Truncate(n int) {
	if n < 0 || n > c.length {
		panic(fmt.Sprintf("model: KVCache.Truncate(%d) of a cache holding %d tokens", n, c.length))
	}
	switch {
	case n == 0:
		c.newOrigin()
	case c.root && n < c.length: // the rows from n on will differ from what copies of them hold
		c.root, c.shared = false, n
	}
	c.length = n
}

// CopyPrefix makes the cache hold the first n tokens of src (same model), replacing what it held:
// the keys and values of a shared prompt, copied on the device instead of recomputed.
func (c *KVCache) CopyPrefix(src *KVCache, n int) {
	if n < 0 || n > src.length || n > c.capacity || src.kvDim != c.kvDim {
		panic(fmt.Sprintf("model: KVCache.CopyPrefix of %d tokens from a cache holding %d into one of capacity %d",
			n, src.length, c.capacity))
	}
	for l := range c.layers() {
		kernels.Copy(c.keys(l), src.keys(l).Slice(0, n*c.kvDim))
		kernels.Copy(c.values(l), src.values(l).Slice(0, n*c.kvDim))
		if !c.tiles.IsNil() && n > 0 { // whole blocks: the lanes past n are never read
			kernels.Copy(c.keyTiles(l), src.keyTiles(l).Slice(0, kernels.KeyTileFloats(n, c.kvDim)))
		}
	}
	c.origin, c.root, c.shared = src.origin, false, min(n, src.sharedLen())
	c.length = n
}

// Free releases the cache's buffer.
func (c *KVCache) Free() {
	c.buf.Free()
	c.tiles.Free()
	c.buf, c.tiles = kernels.Buf{}, kernels.Buf{}
}

func (c *KVCache) layers() int { return c.buf.Len() / (2 * c.capacity * c.kvDim) }

func (c *KVCache) keys(layer int) kernels.Buf {
	return c.buf.Slice(2*layer*c.capacity*c.kvDim, c.capacity*c.kvDim)
}

func (c *KVCache) values(layer int) kernels.Buf {
	return c.buf.Slice((2*layer+1)*c.capacity*c.kvDim, c.capacity*c.kvDim)
}

// keyTiles is layer's key tiles (the zero Buf when the cache keeps none).
func (c *KVCache) keyTiles(layer int) kernels.Buf {
	if c.tiles.IsNil() {
		return kernels.Buf{}
	}
	n := kernels.KeyTileFloats(c.capacity, c.kvDim)
	return c.tiles.Slice(layer*n, n)
}

// DecodeInput is one sequence's share of a decode step: the tokens that follow what its cache
// holds (one for a decode step, many for a prefill or an appended tool response).
type DecodeInput struct {
	Cache  *KVCache
	Tokens []int32
}

// Decoder runs the incremental forward pass over a KV cache: every step takes, for several
// sequences at once, the tokens that follow their caches, runs them through the linear layers as
// one [T, C] batch (T = all new tokens of the step), appends the new keys and values, attends
// over each sequence's cache, and returns the logits of each sequence's last new token. The
// sequences that bring a few tokens (decoding: one; an appended tool response: a few dozen) attend
// in one kernel call per layer, a row per token, whatever else the step holds; those that bring
// more (a prompt) attend one by one. The kernels are the training forward's, so log-probabilities
// agree with Model.Forward.
//
// Its buffers are sized once for at most MaxTokens new tokens and MaxSeqs sequences per step. A
// Decoder uses the model's weights but none of its training state; the model must not train while
// a step runs.
type Decoder struct {
	m                *Model
	MaxTokens        int
	MaxSeqs          int
	ids, pos         kernels.Buf // int32 [T]
	rope             kernels.Buf // [T,hd]: the rows' RoPE angles, taken once a step for every layer
	x, ln            kernels.Buf // [T,C]
	q, k, v          kernels.Buf // [T,Q], [T,KV], [T,KV]
	qRaw, kRaw       kernels.Buf // before q_norm/k_norm (Qwen3)
	att, mid         kernels.Buf // [T,Q], [T,C]
	gate, up, swiglu kernels.Buf // [T,I]
	last, lastNorm   kernels.Buf // [S,C]
	logits           kernels.Buf // [S,V]
	targets, logprob kernels.Buf // [S]
	all              []kernels.Buf
	hostIDs, hostPos []int32
	rows             int // sequences in the last step
	// The step's row layout: the short inputs first (up to shortInput tokens: decoding sequences,
	// appended tool responses; their rows 0..shortRows-1, ordered by cache origin), then the
	// others; start[i] is input i's first row. Rows are independent in every kernel but attention,
	// so the order changes no result, and it lets the short inputs of a step share one attention
	// call.
	order       []int
	start       []int
	shortInput  int // the most tokens of a short input
	shortInputs int // in order
	shortRows   int
	// AttentionDecode's arguments for the short inputs' rows: one layer's caches, and the lengths
	// and shared rows of the step.
	kCaches, vCaches, kTiles []kernels.Buf
	kvLens, shared           []int32        // shared: rows in common with the row before (AttentionDecode)
	packed                   *packedWeights // nil when steps are too small to use them
	// perOp runs a bf16 step's layers an operation at a time even where kernels.DecodeLayerBF16
	// could take a whole layer in one parallel region (tests compare the two).
	perOp bool
	// wholeLayers counts the layers run through kernels.DecodeLayerBF16 (tests).
	wholeLayers int
	// wide holds a prefill's keys and values widened from a bfloat16 cache for AttentionForward
	// (grown as needed; the zero Buf for float32 caches).
	wide kernels.Buf
}

// packedWeights are the decoder's copies of the model's matrices in the SGEMM kernel's own layout
// (kernels.PackLinear): a step over a few dozen rows would otherwise repack every matrix, which
// costs about as much as the product. They are repacked when the model's weights change.
type packedWeights struct {
	layers  []packedLayer
	lmHead  kernels.Buf
	version uint64
}

type packedLayer struct{ q, k, v, o, gate, up, down kernels.Buf }

// newPackedWeights allocates the packed copies (in d.all) and fills them.
func (d *Decoder) newPackedWeights() {
	d.packed = &packedWeights{layers: make([]packedLayer, d.m.Config.NumHiddenLayers)}
	d.eachPacked(func(wp *kernels.Buf, w kernels.Buf, in, out int) {
		n := kernels.PackedLinearFloats(in, out)
		if w.DType() == kernels.BF16 {
			n = kernels.PackedLinearBF16Words(in, out)
		}
		*wp = kernels.Alloc(n)
		d.all = append(d.all, *wp)
	})
	d.repack()
}

// repack lays the model's current weights out again.
func (d *Decoder) repack() {
	d.eachPacked(func(wp *kernels.Buf, w kernels.Buf, in, out int) {
		if w.DType() == kernels.BF16 {
			kernels.PackLinearBF16(*wp, w, in, out)
			return
		}
		kernels.PackLinear(*wp, w, in, out)
	})
	d.packed.version = d.m.version
}

// eachPacked calls f with every packed copy, its weight and the weight's [out, in] shape.
func (d *Decoder) eachPacked(f func(wp *kernels.Buf, w kernels.Buf, in, out int)) {
	c, p := d.m.Config, d.packed
	C, I, Q, KV, V := c.HiddenSize, c.IntermediateSize, c.QDim(), c.KVDim(), c.VocabSize
	f(&p.lmHead, d.m.w.lmHead, C, V)
	for l, w := range d.m.w.layers {
		pl := &p.layers[l]
		f(&pl.q, w.q, C, Q)
		f(&pl.k, w.k, C, KV)
		f(&pl.v, w.v, C, KV)
		f(&pl.o, w.o, Q, C)
		f(&pl.gate, w.gate, C, I)
		f(&pl.up, w.up, C, I)
		f(&pl.down, w.down, I, C)
	}
}

// linear is kernels.LinearForward, from the packed copy wp when the decoder keeps one.
func linear(y, x, w, wp, b kernels.Buf, T, in, out int) {
	if wp.IsNil() {
		kernels.LinearForward(y, x, w, b, T, in, out)
		return
	}
	if w.DType() == kernels.BF16 {
		kernels.LinearForwardBF16Packed(y, x, w, wp, b, T, in, out)
		return
	}
	kernels.LinearForwardPacked(y, x, w, wp, b, T, in, out)
}

// linears is linear for several weights of one input x[T,in] (q, k and v; gate and up): in one
// kernel call when the decoder keeps their packed copies.
func linears(x kernels.Buf, T, in int, ls ...kernels.Linear) {
	if !slices.ContainsFunc(ls, func(l kernels.Linear) bool { return l.WP.IsNil() || l.W.DType() == kernels.BF16 }) {
		kernels.LinearForwardPackedMulti(x, T, in, ls...)
		return
	}
	if !slices.ContainsFunc(ls, func(l kernels.Linear) bool { return l.WP.IsNil() || l.W.DType() != kernels.BF16 }) {
		kernels.LinearForwardBF16PackedMulti(x, T, in, ls...)
		return
	}
	for _, l := range ls {
		linear(l.Y, x, l.W, l.WP, l.B, T, in, l.Out)
	}
}

// NewDecoder allocates a decoder for steps of at most maxTokens new tokens over at most maxSeqs
// sequences.
func (m *Model) NewDecoder(maxTokens, maxSeqs int) (*Decoder, error) {
	if maxTokens <= 0 || maxSeqs <= 0 || maxSeqs > maxTokens {
		return nil, fmt.Errorf("new decoder: %d tokens and %d sequences per step, want 0 < sequences ≤ tokens",
			maxTokens, maxSeqs)
	}
	c := m.Config
	T, S, C, I, Q, KV, V := maxTokens, maxSeqs, c.HiddenSize, c.IntermediateSize, c.QDim(), c.KVDim(), c.VocabSize
	d := &Decoder{m: m, MaxTokens: T, MaxSeqs: S, shortInput: shortInput}
	f := func(n int) kernels.Buf { b := kernels.Alloc(n); d.all = append(d.all, b); return b }
	d.ids, d.pos = kernels.AllocI32(T), kernels.AllocI32(T)
	d.targets = kernels.AllocI32(S)
	d.all = append(d.all, d.ids, d.pos, d.targets)
	d.x, d.ln, d.mid = f(T*C), f(T*C), f(T*C)
	d.rope = f(T * c.HeadDim)
	d.q, d.k, d.v, d.att = f(T*Q), f(T*KV), f(T*KV), f(T*Q)
	if c.QKNorm() {
		d.qRaw, d.kRaw = f(T*Q), f(T*KV)
	}
	d.gate, d.up, d.swiglu = f(T*I), f(T*I), f(T*I)
	d.last, d.lastNorm, d.logits, d.logprob = f(S*C), f(S*C), f(S*V), f(S)
	d.hostIDs, d.hostPos = make([]int32, T), make([]int32, T)
	d.kCaches, d.vCaches, d.kvLens, d.shared = make([]kernels.Buf, T), make([]kernels.Buf, T), make([]int32, T), make([]int32, T)
	if kernels.DecodeKeyTiles() {
		d.kTiles = make([]kernels.Buf, T)
	}
	d.order, d.start = make([]int, 0, S), make([]int, S)
	if kernels.PackedWeights() && (T > kernels.FewRows || m.Precision() == BF16) { // bf16 products pack W at every row count
		d.newPackedWeights()
	}
	return d, nil
}

// Close frees the decoder's buffers (not the caches).
func (d *Decoder) Close() {
	for _, b := range d.all {
		b.Free()
	}
	d.all = nil
	d.wide.Free()
	d.wide = kernels.Buf{}
}

// Step runs one incremental forward pass. Each input's tokens are appended to its cache; the
// logits of each input's last token are left in the decoder (see Logits and LogProbs), row i for
// in[i]. An error (too many tokens, a full cache, a bad id) leaves every cache unchanged.
func (d *Decoder) Step(in []DecodeInput) error {
	c := d.m.Config
	if len(in) == 0 || len(in) > d.MaxSeqs {
		return fmt.Errorf("decode step: %d sequences, want 1 to %d", len(in), d.MaxSeqs)
	}
	T := 0
	for i, s := range in {
		if len(s.Tokens) == 0 {
			return fmt.Errorf("decode step: sequence %d has no new tokens", i)
		}
		if s.Cache.length+len(s.Tokens) > s.Cache.capacity {
			return fmt.Errorf("decode step: sequence %d needs %d tokens of cache, it holds %d",
				i, s.Cache.length+len(s.Tokens), s.Cache.capacity)
		}
		for j := i + 1; j < len(in); j++ {
			if in[j].Cache == s.Cache {
				return fmt.Errorf("decode step: sequences %d and %d share a cache", i, j)
			}
		}
		for _, id := range s.Tokens {
			if id < 0 || int(id) >= c.VocabSize {
				return fmt.Errorf("decode step: sequence %d: token id %d outside the vocabulary [0, %d)", i, id, c.VocabSize)
			}
		}
		if T += len(s.Tokens); T > d.MaxTokens {
			return fmt.Errorf("decode step: more than %d new tokens", d.MaxTokens)
		}
	}
	d.layOut(in)
	d.m.round()
	d.ids.CopyFromI32(d.hostIDs[:T])
	d.pos.CopyFromI32(d.hostPos[:T])
	kernels.RoPETable(d.rope, d.pos, T, c.HeadDim, float32(c.RopeTheta))
	var lmHeadPacked kernels.Buf
	if d.packed != nil {
		if d.packed.version != d.m.version {
			d.repack()
		}
		lmHeadPacked = d.packed.lmHead
	}

	C := c.HiddenSize
	kernels.EmbeddingForward(d.x, d.ids, d.m.w.embed, T, C)
	for l := 0; l < c.NumHiddenLayers; l++ {
		d.layer(l, in, T)
	}
	// Gather each sequence's last row, then norm and lm_head on those rows only.
	for i, s := range in {
		kernels.Copy(d.last.Slice(i*C, C), d.x.Slice((d.start[i]+len(s.Tokens)-1)*C, C))
	}
	S := len(in)
	kernels.RMSNormForward(d.lastNorm, kernels.Buf{}, d.last, d.m.w.finalNorm, S, C, float32(c.RMSNormEps))
	linear(d.logits, d.lastNorm, d.m.w.lmHead, lmHeadPacked, kernels.Buf{}, S, C, c.VocabSize)
	for _, s := range in {
		s.Cache.length += len(s.Tokens)
	}
	d.rows = S
	return nil
}

// shortInput is the most tokens an input may bring and still attend through AttentionDecode,
// as one row per token (see Decoder), when its cache already holds at least as many: an appended
// tool response attends mostly to a long prefix, which the decode kernel reads once for the rows of
// one origin. Others (prompts) attend through AttentionForward, whose tiled products win when the
// queries attend mostly to each other. Decoder.shortInput is this, or what a test sets.
const shortInput = 64

// short reports whether in goes through the one-call attention of the step's short inputs.
func (d *Decoder) short(in DecodeInput) bool {
	n := len(in.Tokens)
	return n == 1 || (n <= d.shortInput && in.Cache.length >= n)
}

// layOut orders the step's rows (see Decoder.order) and writes their ids and positions.
func (d *Decoder) layOut(in []DecodeInput) {
	d.order = d.order[:0]
	for i, s := range in {
		if d.short(s) {
			d.order = append(d.order, i)
		}
	}
	d.shortInputs = len(d.order)
	// Short inputs of one origin side by side, so that attention reads their shared prefix once.
	slices.SortStableFunc(d.order, func(a, b int) int { return cmp.Compare(in[a].Cache.origin, in[b].Cache.origin) })
	// Their rows' lengths after this step and the rows each shares with the row before: the same
	// for every layer. The tokens of one input share everything before them.
	r := 0
	for k, i := range d.order {
		c := in[i].Cache
		for j := range in[i].Tokens {
			d.kvLens[r], d.shared[r] = int32(c.length+j+1), 0
			// An append's rows share everything before them, and only with each other: next to
			// other rows the kernel's chunk would take the least any of them shares.
			if j > 0 {
				d.shared[r] = int32(c.length + j - 1)
			} else if k > 0 && len(in[i].Tokens) == 1 && len(in[d.order[k-1]].Tokens) == 1 {
				if p := in[d.order[k-1]].Cache; p.origin == c.origin {
					d.shared[r] = int32(min(p.sharedLen(), c.sharedLen()))
				}
			}
			r++
		}
	}
	d.shortRows = r
	for i, s := range in {
		if !d.short(s) {
			d.order = append(d.order, i)
		}
	}
	T := 0
	for _, i := range d.order {
		s := in[i]
		d.start[i] = T
		for j, id := range s.Tokens {
			d.hostIDs[T] = id
			d.hostPos[T] = int32(s.Cache.length + j)
			T++
		}
	}
}

// layer runs decoder layer l over the step's T tokens in d.x (in place: d.x becomes the layer's
// output), writing the new keys and values into each sequence's cache.
func (d *Decoder) layer(l int, in []DecodeInput, T int) {
	c := d.m.Config
	w := d.m.w.layers[l]
	C, I, Q, KV := c.HiddenSize, c.IntermediateSize, c.QDim(), c.KVDim()
	nh, nkv, hd := c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim
	eps := float32(c.RMSNormEps)
	var p packedLayer
	if d.packed != nil {
		p = d.packed.layers[l]
		if !d.perOp && w.q.DType() == kernels.BF16 && d.shortRows == T && d.wholeLayer(l, in, T, w, p) {
			return
		}
	}

	kernels.RMSNormForward(d.ln, kernels.Buf{}, d.x, w.inNorm, T, C, eps)
	q, k := d.q, d.k
	if c.QKNorm() {
		q, k = d.qRaw, d.kRaw
	}
	linears(d.ln, T, C, kernels.Linear{Y: q, W: w.q, WP: p.q, B: w.qb, Out: Q},
		kernels.Linear{Y: k, W: w.k, WP: p.k, B: w.kb, Out: KV}, kernels.Linear{Y: d.v, W: w.v, WP: p.v, B: w.vb, Out: KV})
	if c.QKNorm() {
		kernels.RMSNormForward(d.q, kernels.Buf{}, d.qRaw, w.qNorm, T*nh, hd, eps)
		kernels.RMSNormForward(d.k, kernels.Buf{}, d.kRaw, w.kNorm, T*nkv, hd, eps)
	}
	kernels.RoPEApply(d.q, d.rope, T, nh, hd)
	kernels.RoPEApply(d.k, d.rope, T, nkv, hd)
	if d.m.roundKV() && !d.m.kvBF16() { // a float32 cache holds the bf16 values (a bf16 cache rounds as it stores)
		kernels.RoundBF16(d.k, T*nkv*hd)
		kernels.RoundBF16(d.v, T*nkv*hd)
	}
	d.shortAttention(l, in)
	d.prefillAttention(l, in)
	linear(d.mid, d.att, w.o, p.o, w.ob, T, Q, C)
	kernels.Add(d.mid, d.x, T*C)

	kernels.RMSNormForward(d.ln, kernels.Buf{}, d.mid, w.postNorm, T, C, eps)
	linears(d.ln, T, C, kernels.Linear{Y: d.gate, W: w.gate, WP: p.gate, Out: I},
		kernels.Linear{Y: d.up, W: w.up, WP: p.up, Out: I})
	kernels.SwiGLUForward(d.swiglu, d.gate, d.up, T*I)
	linear(d.x, d.swiglu, w.down, p.down, kernels.Buf{}, T, I, C)
	kernels.Add(d.x, d.mid, T*C)
}

// shortAttention appends the keys and values of layer l of the step's short inputs (its first
// rows, a row per token) to their caches and attends their queries, all in one kernel call.
func (d *Decoder) shortAttention(l int, in []DecodeInput) {
	S := d.shortRows
	if S == 0 {
		return
	}
	c := d.m.Config
	Q, KV := c.QDim(), c.KVDim()
	kTiles := d.shortCaches(l, in)
	kernels.AttentionDecode(d.att.Slice(0, S*Q), d.q.Slice(0, S*Q), d.k.Slice(0, S*KV), d.v.Slice(0, S*KV),
		d.kCaches[:S], d.vCaches[:S], kTiles, d.kvLens[:S], d.shared[:S], c.NumAttentionHeads, c.NumKeyValueHeads,
		c.HeadDim, d.m.attentionScale())
}

// shortCaches fills d.kCaches, d.vCaches and d.kTiles with layer l's caches of the step's short
// rows and returns the rows' key tiles (nil without them).
func (d *Decoder) shortCaches(l int, in []DecodeInput) []kernels.Buf {
	r := 0
	for _, i := range d.order[:d.shortInputs] {
		keys, values, tiles := in[i].Cache.keys(l), in[i].Cache.values(l), in[i].Cache.keyTiles(l)
		for range in[i].Tokens {
			d.kCaches[r], d.vCaches[r] = keys, values
			if d.kTiles != nil {
				d.kTiles[r] = tiles
			}
			r++
		}
	}
	if d.kTiles != nil {
		return d.kTiles[:r]
	}
	return nil
}

// wholeLayer runs layer l of a bf16 step whose rows are all short inputs' through
// kernels.DecodeLayerBF16, one parallel region for the layer, with the bits of the operations one
// by one (layer's path below). It reports false, having done nothing, where that kernel does not
// take the step.
func (d *Decoder) wholeLayer(l int, in []DecodeInput, T int, w layerWeights, p packedLayer) bool {
	c := d.m.Config
	kTiles := d.shortCaches(l, in)
	a := kernels.DecodeLayer{
		T: T, C: c.HiddenSize, I: c.IntermediateSize, NH: c.NumAttentionHeads, NKV: c.NumKeyValueHeads, HD: c.HeadDim,
		Eps: float32(c.RMSNormEps), Scale: d.m.attentionScale(),
		X: d.x, Mid: d.mid, Q: d.q, K: d.k, V: d.v, Att: d.att, Gate: d.gate, Up: d.up, Rope: d.rope,
		InNorm: w.inNorm, PostNorm: w.postNorm, BQ: w.qb, BK: w.kb, BV: w.vb, BO: w.ob,
		WQ: p.q, WK: p.k, WV: p.v, WO: p.o, WGate: p.gate, WUp: p.up, WDown: p.down,
		KCaches: d.kCaches[:T], VCaches: d.vCaches[:T], KTiles: kTiles, KVLens: d.kvLens[:T], Shared: d.shared[:T],
	}
	if c.QKNorm() {
		a.QRaw, a.KRaw, a.QNorm, a.KNorm = d.qRaw, d.kRaw, w.qNorm, w.kNorm
	}
	if !kernels.DecodeLayerBF16(&a) {
		return false
	}
	d.wholeLayers++
	return true
}

// prefillAttention appends the keys and values of layer l of each long input (a prompt) to its
// cache and attends its new queries over the cache, one sequence at a time.
func (d *Decoder) prefillAttention(l int, in []DecodeInput) {
	c := d.m.Config
	Q, KV, nh, nkv, hd := c.QDim(), c.KVDim(), c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim
	for _, i := range d.order[d.shortInputs:] {
		s := in[i]
		n, past, off := len(s.Tokens), s.Cache.length, d.start[i]
		keys, values := s.Cache.keys(l), s.Cache.values(l)
		Lk := past + n
		if keys.DType() == kernels.BF16 { // rounded into the cache, then widened for the kernel
			kernels.ToBF16(keys.Slice(past*KV, n*KV), d.k.Slice(off*KV, n*KV), n*KV)
			kernels.ToBF16(values.Slice(past*KV, n*KV), d.v.Slice(off*KV, n*KV), n*KV)
			if d.wide.Len() < 2*Lk*KV {
				d.wide.Free()
				d.wide = kernels.Alloc(2 * s.Cache.capacity * KV)
			}
			wk, wv := d.wide.Slice(0, Lk*KV), d.wide.Slice(Lk*KV, Lk*KV)
			kernels.FromBF16(wk, keys, Lk*KV)
			kernels.FromBF16(wv, values, Lk*KV)
			keys, values = wk, wv
		} else {
			kernels.Copy(keys.Slice(past*KV, n*KV), d.k.Slice(off*KV, n*KV))
			kernels.Copy(values.Slice(past*KV, n*KV), d.v.Slice(off*KV, n*KV))
		}
		if tiles := s.Cache.keyTiles(l); !tiles.IsNil() {
			kernels.PackKeyTiles(tiles, s.Cache.keys(l), past, past+n, KV)
		}
		kernels.AttentionForward(d.att.Slice(off*Q, n*Q), kernels.Buf{}, d.q.Slice(off*Q, n*Q),
			keys.Slice(0, Lk*KV), values.Slice(0, Lk*KV), 1, n, Lk, nh, nkv, hd, d.m.attentionScale())
	}
}

// Logits copies the last step's logits to dst ([sequences, vocab], row i for input i).
func (d *Decoder) Logits(dst []float32) {
	n := d.rows * d.m.Config.VocabSize
	if len(dst) < n {
		panic(fmt.Sprintf("model: Decoder.Logits into %d floats, want %d", len(dst), n))
	}
	d.logits.CopyTo(dst[:n])
}

// LogitsView returns the last step's logits where they are ([sequences, vocab], row i for input i)
// when the device's memory is the host's (the CPU backend), nil otherwise (Logits copies them).
// The caller must not write to them (LogProbs reads them) and must be done before the next Step.
func (d *Decoder) LogitsView() []float32 {
	f := d.logits.Floats()
	if f == nil {
		return nil
	}
	return f[:d.rows*d.m.Config.VocabSize]
}

// LogProbs writes log softmax(logits[i])[targets[i]] of the last step into dst, computed on the
// device by the training cross-entropy kernel from the same logits. A target of -1 gives 0.
func (d *Decoder) LogProbs(targets []int32, dst []float32) {
	S := d.rows
	if len(targets) != S || len(dst) < S {
		panic(fmt.Sprintf("model: Decoder.LogProbs of %d targets into %d floats for %d rows", len(targets), len(dst), S))
	}
	d.targets.CopyFromI32(targets)
	kernels.SoftmaxXent(d.logprob, kernels.Buf{}, d.logits, d.targets, kernels.Buf{}, S, d.m.Config.VocabSize)
	d.logprob.CopyTo(dst[:S])
}
