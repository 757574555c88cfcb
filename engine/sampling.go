package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Sampling chooses how the next token is drawn from the model's logits.
type Sampling struct {
	// Temperature divides the logits; 0 picks the most likely token (greedy, no randomness).
	Temperature float64
	// TopP keeps the smallest set of most likely tokens whose probability reaches TopP (0 or 1: off).
	TopP float64
	// TopK keeps the K most likely tokens (0: off). Applied before TopP, as transformers and vLLM do.
	TopK int
	// Seed seeds the sequence's own random stream: the same seed and logits give the same tokens
	// whatever else shares the batch. Nil draws a seed from the engine's.
	Seed *uint64
	// SkipDraws starts the random stream after this many draws: a request that continues a
	// sequence another request began (prompt + the response so far) draws what that sequence
	// would have drawn next, since each sampled token takes exactly one draw.
	SkipDraws uint64
}

// Validate checks the ranges; errors name the field as the OpenAI API does.
func (s Sampling) Validate() error {
	switch {
	case math.IsNaN(s.Temperature) || s.Temperature < 0:
		return fmt.Errorf("temperature: must be ≥ 0, got %g", s.Temperature)
	case math.IsNaN(s.TopP) || s.TopP < 0 || s.TopP > 1:
		return fmt.Errorf("top_p: must be in (0, 1], got %g", s.TopP)
	case s.TopK < 0:
		return fmt.Errorf("top_k: must be ≥ 0, got %d", s.TopK)
	}
	return nil
}

// newStream is a sequence's random stream: PCG seeded by the sequence's seed alone.
func newStream(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed_9e37_79b9_7f4a)) }

// sampler holds the scratch space of one sampling call; the engine keeps one and reuses it.
type sampler struct {
	heap  []int32
	probs []float32
}

// sample draws a token from logits (one row, read only: it may be the decoder's own memory, which
// the step's log-probabilities are computed from afterwards). It consumes exactly one uniform draw
// from rng unless the sampling is greedy.
func (sm *sampler) sample(logits []float32, p Sampling, rng *rand.Rand) int32 {
	best := argmax(logits)
	if p.Temperature <= 0 {
		return best
	}
	u := rng.Float64()
	inv := 1 / p.Temperature
	mx := float64(logits[best])
	var total float64
	if cap(sm.probs) < len(logits) {
		sm.probs = make([]float32, len(logits))
	}
	probs := sm.probs[:len(logits)]
	for i, l := range logits {
		e := float32(math.Exp((float64(l) - mx) * inv))
		probs[i] = e
		total += float64(e)
	}
	topP := p.TopP
	if topP <= 0 || topP >= 1 {
		topP = 1
	}
	if (p.TopK <= 0 || p.TopK >= len(probs)) && topP == 1 {
		return pickLinear(probs, u*total)
	}
	// Pop tokens from a max-heap of probabilities until the kept set is complete: O(V + k log V)
	// for k kept tokens, instead of sorting the whole vocabulary.
	h := sm.heapOf(probs)
	limit := len(probs)
	if p.TopK > 0 {
		limit = min(limit, p.TopK)
	}
	kept := make([]int32, 0, min(limit, 64))
	var mass float64
	for len(kept) < limit {
		id := h.pop()
		kept = append(kept, id)
		mass += float64(probs[id])
		if p.TopK <= 0 && mass >= topP*total {
			break
		}
	}
	if p.TopK > 0 && topP < 1 { // nucleus within the top-k set
		var acc float64
		for i, id := range kept {
			acc += float64(probs[id])
			if acc >= topP*mass {
				kept, mass = kept[:i+1], acc
				break
			}
		}
	}
	target := u * mass
	var acc float64
	for _, id := range kept {
		acc += float64(probs[id])
		if target < acc {
			return id
		}
	}
	return kept[len(kept)-1]
}

// argmax returns the index of the first largest element of x (NaNs never win, except a NaN at 0,
// which nothing beats: index 0), as the plain loop does (argmaxPlain, in the tests). Four running
// maxima, each with the index where it was reached, then the first of the lanes that hold the
// largest: at a 32,000-token vocabulary the plain loop, every compare waiting on the one before,
// was 3% of a `small` decode step of 64 sequences.
func argmax(x []float32) int32 {
	n := len(x)
	if n == 0 {
		return 0
	}
	var m [4]float32
	var at [4]int
	for k := range m {
		m[k] = x[0]
	}
	i := 0
	for ; i+4 <= n; i += 4 {
		v := x[i : i+4 : i+4]
		if v[0] > m[0] {
			m[0], at[0] = v[0], i
		}
		if v[1] > m[1] {
			m[1], at[1] = v[1], i+1
		}
		if v[2] > m[2] {
			m[2], at[2] = v[2], i+2
		}
		if v[3] > m[3] {
			m[3], at[3] = v[3], i+3
		}
	}
	for ; i < n; i++ {
		if x[i] > m[0] {
			m[0], at[0] = x[i], i
		}
	}
	top := m[0]
	for _, v := range m[1:] {
		if v > top {
			top = v
		}
	}
	best := n
	for k, v := range m {
		if v == top && at[k] < best { // == also joins -0 and +0, as the plain loop's > keeps the first
			best = at[k]
		}
	}
	if best == n {
		return 0 // top is NaN: x[0] is, and nothing compared greater
	}
	return int32(best)
}

// pickLinear returns the first index at which the running sum of probs exceeds target.
func pickLinear(probs []float32, target float64) int32 {
	var acc float64
	last := 0
	for i, p := range probs {
		if p == 0 {
			continue
		}
		acc += float64(p)
		last = i
		if target < acc {
			return int32(i)
		}
	}
	return int32(last)
}

// probHeap is a max-heap of token ids ordered by probability, ties by lower id (deterministic).
type probHeap struct {
	ids   []int32
	probs []float32
}

func (sm *sampler) heapOf(probs []float32) *probHeap {
	if cap(sm.heap) < len(probs) {
		sm.heap = make([]int32, len(probs))
	}
	ids := sm.heap[:len(probs)]
	for i := range ids {
		ids[i] = int32(i)
	}
	h := &probHeap{ids: ids, probs: probs}
	for i := len(ids)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	return h
}

func (h *probHeap) before(a, b int32) bool {
	pa, pb := h.probs[a], h.probs[b]
	return pa > pb || (pa == pb && a < b)
}

func (h *probHeap) down(i int) {
	n := len(h.ids)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && h.before(h.ids[r], h.ids[l]) {
			j = r
		}
		if !h.before(h.ids[j], h.ids[i]) {
			return
		}
		h.ids[i], h.ids[j] = h.ids[j], h.ids[i]
		i = j
	}
}

func (h *probHeap) pop() int32 {
	top := h.ids[0]
	n := len(h.ids) - 1
	h.ids[0] = h.ids[n]
	h.ids = h.ids[:n]
	if n > 0 {
		h.down(0)
	}
	return top
}

// MaxTopLogProbs bounds Request.TopLogProbs (OpenAI allows 20).
const MaxTopLogProbs = 20

// topLogProbs returns the k most likely tokens of a logits row (ties by lower id) with their
// log-probabilities at temperature 1. The sampled token's own log-probability comes from the
// training kernel; these alternatives are computed here, in float64.
func topLogProbs(logits []float32, k int) []TokenLogProb {
	k = min(k, len(logits), MaxTopLogProbs)
	best := make([]TokenLogProb, 0, k+1)
	mx := logits[argmax(logits)]
	var sum float64
	for i, l := range logits {
		sum += math.Exp(float64(l - mx))
		if len(best) == k && l <= best[k-1].LogProb {
			continue
		}
		j := len(best)
		best = append(best, TokenLogProb{})
		for j > 0 && l > best[j-1].LogProb {
			best[j] = best[j-1]
			j--
		}
		best[j] = TokenLogProb{Token: int32(i), LogProb: l}
		best = best[:min(len(best), k)]
	}
	lse := float64(mx) + math.Log(sum)
	for i := range best {
		best[i].LogProb = float32(float64(best[i].LogProb) - lse)
	}
	return best
}
