package model

import (
	"math"
	"slices"
	"testing"

	"gorstar/kernels"
)

// microModel is microConfig("qwen3", false) as a model of seed, closed with the test.
func microModel(t testing.TB, seed uint64) (*Model, Config) {
	t.Helper()
	c := microConfig("qwen3", false)
	m, err := New(c, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m, c
}

// kvCaches allocates n caches of capacity tokens on m, freed with the test.
func kvCaches(t testing.TB, m *Model, n, capacity int) []*KVCache {
	t.Helper()
	caches := make([]*KVCache, n)
	for i := range caches {
		kv, err := m.NewKVCache(capacity)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(kv.Free)
		caches[i] = kv
	}
	return caches
}

// decodeLogProbs feeds each row of b through a KV cache — a prefill of the first `prefill` tokens,
// then one token per step, all rows in the same steps — and returns log p(token i | tokens < i)
// in Forward's layout.
func decodeLogProbs(t *testing.T, m *Model, b *Batch, prefill int) []float32 {
	t.Helper()
	d, err := m.NewDecoder(b.B*b.L, b.B)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	return decodeWith(t, m, d, b, prefill)
}

// decodeWith is decodeLogProbs on an existing decoder.
func decodeWith(t *testing.T, m *Model, d *Decoder, b *Batch, prefill int) []float32 {
	t.Helper()
	caches := kvCaches(t, m, b.B, b.L)
	out := make([]float32, b.B*b.L)
	lp := make([]float32, b.B)
	targets := make([]int32, b.B)
	for pos := 0; pos < b.L-1; {
		n := 1
		if pos == 0 {
			n = prefill
		}
		in := make([]DecodeInput, b.B)
		for r := range in {
			in[r] = DecodeInput{Cache: caches[r], Tokens: b.IDs[r*b.L+pos : r*b.L+pos+n]}
			targets[r] = b.IDs[r*b.L+pos+n]
		}
		if err := d.Step(in); err != nil {
			t.Fatal(err)
		}
		d.LogProbs(targets, lp)
		for r := range in {
			out[r*b.L+pos+n] = lp[r]
		}
		pos += n
	}
	return out
}

// KV-cache decoding gives the log-probabilities of the training forward on the whole sequence.
func TestDecodeMatchesForward(t *testing.T) {
	for _, v := range []struct {
		name       string
		modelType  string
		tied, bias bool
	}{{"qwen3", "qwen3", false, false}, {"qwen3-tied", "qwen3", true, false}, {"qwen2", "qwen2", false, true}} {
		t.Run(v.name, func(t *testing.T) {
			c := microConfig(v.modelType, v.tied)
			c.AttentionBias = v.bias
			m, err := New(c, 3)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			randomizeVectors(m, 5)
			b := randomBatch(c, 3, 12, 7)
			want, err := m.Forward(&Batch{B: b.B, L: b.L, IDs: b.IDs})
			if err != nil {
				t.Fatal(err)
			}
			for _, prefill := range []int{1, 5} {
				got := decodeLogProbs(t, m, b, prefill)
				var worst float64
				for i := range got {
					if i%b.L < prefill {
						continue // no logprob from a prefill's inner tokens
					}
					worst = max(worst, math.Abs(float64(got[i]-want.LogProbs[i])))
				}
				t.Logf("prefill %d: max |decode − forward| logprob = %.3g", prefill, worst)
				if worst > 1e-4 {
					t.Errorf("prefill %d: max abs logprob difference %g > 1e-4", prefill, worst)
				}
			}
		})
	}
}

// A decoder made before a training step decodes with the new weights after it: its packed copies
// of the matrices follow the optimizer's update (and WeightsChanged after a direct write).
func TestDecoderFollowsWeightChanges(t *testing.T) {
	m, c := microModel(t, 3)
	b := randomBatch(c, 3, 12, 7)
	d, err := m.NewDecoder(b.B*b.L, b.B)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.packed == nil {
		t.Fatal("a decoder for steps of 36 tokens keeps no packed weights")
	}
	check := func(when string) {
		want, err := m.Forward(&Batch{B: b.B, L: b.L, IDs: b.IDs})
		if err != nil {
			t.Fatal(err)
		}
		got := decodeWith(t, m, d, b, 10) // a 30-token prefill step uses the packed weights
		var worst float64
		for i := range got {
			if i%b.L >= 10 {
				worst = max(worst, math.Abs(float64(got[i]-want.LogProbs[i])))
			}
		}
		if worst > 1e-4 {
			t.Errorf("%s: max |decode − forward| logprob = %g", when, worst)
		}
	}
	check("before training")
	opt := m.NewOptimizer(AdamWConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1})
	defer opt.Close()
	m.ZeroGrads()
	if _, err := m.ForwardBackward(b); err != nil {
		t.Fatal(err)
	}
	if _, err := opt.Update(0.05); err != nil {
		t.Fatal(err)
	}
	check("after an optimizer step")
	randomizeVectors(m, 9) // norms only: packing does not involve them, but the version must move
	host := make([]float32, m.Params.Size)
	m.Params.All.CopyTo(host)
	for i := range host {
		host[i] *= 1.5
	}
	m.Params.All.CopyFrom(host)
	m.WeightsChanged()
	check("after a direct write")
}

// Sequences of different lengths in one step (a prefill beside decodes) give the logits each
// would get alone.
func TestDecodeMixedStepMatchesAlone(t *testing.T) {
	m, c := microModel(t, 4)
	b := randomBatch(c, 2, 9, 11)
	V := c.VocabSize
	alone := func(ids []int32) []float32 {
		d, _ := m.NewDecoder(16, 1)
		defer d.Close()
		kv, _ := m.NewKVCache(16)
		defer kv.Free()
		if err := d.Step([]DecodeInput{{Cache: kv, Tokens: ids}}); err != nil {
			t.Fatal(err)
		}
		out := make([]float32, V)
		d.Logits(out)
		return out
	}
	a, bb := b.IDs[:9], b.IDs[9:18]
	wantA, wantB := alone(a), alone(bb[:4])

	d, _ := m.NewDecoder(16, 2)
	defer d.Close()
	ka, _ := m.NewKVCache(16)
	defer ka.Free()
	kb, _ := m.NewKVCache(16)
	defer kb.Free()
	if err := d.Step([]DecodeInput{{Cache: ka, Tokens: a[:8]}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Step([]DecodeInput{{Cache: ka, Tokens: a[8:]}, {Cache: kb, Tokens: bb[:4]}}); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 2*V)
	d.Logits(got)
	var worst float64
	for i := 0; i < V; i++ {
		worst = max(worst, math.Abs(float64(got[i]-wantA[i])), math.Abs(float64(got[V+i]-wantB[i])))
	}
	if worst > 1e-5 {
		t.Errorf("mixed step logits differ from separate runs by %g", worst)
	}
	if ka.Len() != 9 || kb.Len() != 4 {
		t.Errorf("cache lengths %d, %d, want 9, 4", ka.Len(), kb.Len())
	}
}

func TestDecodeRejectsBadSteps(t *testing.T) {
	m, c := microModel(t, 4)
	d, _ := m.NewDecoder(4, 2)
	defer d.Close()
	kv, _ := m.NewKVCache(3)
	defer kv.Free()
	kv2, _ := m.NewKVCache(3)
	defer kv2.Free()
	for _, tc := range []struct {
		name string
		in   []DecodeInput
	}{
		{"empty", nil},
		{"no tokens", []DecodeInput{{Cache: kv}}},
		{"over capacity", []DecodeInput{{Cache: kv, Tokens: []int32{1, 2, 3, 4}}}},
		{"bad id", []DecodeInput{{Cache: kv, Tokens: []int32{int32(c.VocabSize)}}}},
		{"too many tokens", []DecodeInput{{Cache: kv, Tokens: []int32{1, 2, 3}}, {Cache: kv2, Tokens: []int32{1, 2}}}},
		{"shared cache", []DecodeInput{{Cache: kv, Tokens: []int32{1}}, {Cache: kv, Tokens: []int32{1}}}},
		{"too many sequences", []DecodeInput{{Cache: kv, Tokens: []int32{1}}, {Cache: kv2, Tokens: []int32{1}}, {Cache: kv2, Tokens: []int32{1}}}},
	} {
		if err := d.Step(tc.in); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
		if kv.Len() != 0 || kv2.Len() != 0 {
			t.Fatalf("%s: a failed step changed a cache", tc.name)
		}
	}
}

// Steps that mix decoding rows (one token) with chunks of several tokens, in every input order,
// give the training forward's log-probabilities: the decoding rows attend in one call, the chunks
// one by one, and the row reordering that makes this possible changes no result.
func TestDecodeMixedStepsMatchForward(t *testing.T) {
	m, c := microModel(t, 6)
	randomizeVectors(m, 8)
	b := randomBatch(c, 4, 14, 13)
	want, err := m.Forward(&Batch{B: b.B, L: b.L, IDs: b.IDs})
	if err != nil {
		t.Fatal(err)
	}
	// chunk[r][k] is row r's k-th step size (its remaining tokens one at a time after the list).
	chunks := [][]int{{1}, {3, 1, 4}, {5, 2}, {1, 1, 6}}
	d, err := m.NewDecoder(b.B*b.L, b.B)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	caches := kvCaches(t, m, b.B, b.L)
	got := make([]float32, b.B*b.L)
	checked := make([]bool, b.B*b.L)
	mixed := 0
	for step := 0; ; step++ {
		var in []DecodeInput
		var rows []int
		var targets []int32
		// Reverse the input order on odd steps, so decoding rows sit before and after chunks.
		for k := 0; k < b.B; k++ {
			r := k
			if step%2 == 1 {
				r = b.B - 1 - k
			}
			pos := caches[r].Len()
			if pos >= b.L-1 {
				continue
			}
			n := 1
			if step < len(chunks[r]) {
				n = chunks[r][step]
			}
			n = min(n, b.L-1-pos)
			in = append(in, DecodeInput{Cache: caches[r], Tokens: b.IDs[r*b.L+pos : r*b.L+pos+n]})
			rows = append(rows, r)
			targets = append(targets, b.IDs[r*b.L+pos+n])
		}
		if len(in) == 0 {
			break
		}
		ones := 0
		for _, x := range in {
			if len(x.Tokens) == 1 {
				ones++
			}
		}
		if ones > 0 && ones < len(in) {
			mixed++
		}
		if err := d.Step(in); err != nil {
			t.Fatal(err)
		}
		lp := make([]float32, len(in))
		d.LogProbs(targets, lp)
		for k, r := range rows {
			i := r*b.L + caches[r].Len()
			got[i], checked[i] = lp[k], true
		}
	}
	if mixed < 3 {
		t.Fatalf("only %d mixed steps: the schedule does not test what it should", mixed)
	}
	var worst float64
	for i := range got {
		if checked[i] {
			worst = max(worst, math.Abs(float64(got[i]-want.LogProbs[i])))
		}
	}
	t.Logf("%d mixed steps: max |decode − forward| logprob = %.3g", mixed, worst)
	if worst > 1e-4 {
		t.Errorf("max abs logprob difference %g > 1e-4", worst)
	}
}

// Caches that copied a prompt prefix from one another share it in a decode step (the kernel reads
// it once) only as far as their rows really are the same bits: a cache truncated and recomputed,
// a copy of a copy, and a cache that computed the same tokens itself (equal tokens, separate
// provenance) each get the logits they get decoding alone, and the counts the step shares are
// exactly the rows the caches have in common.
func TestDecodeSharedPrefixProvenance(t *testing.T) {
	m, c := microModel(t, 6)
	V := c.VocabSize
	ids := randomBatch(c, 1, 400, 3).IDs
	prompt, other, next := ids[:150], ids[150:300], ids[300:310]
	// build makes caches A–E on d: A computed 150 tokens, B copied them and computed 20 more, C
	// copied 140 of A's, then A forgot everything from 100 on and computed 60 other tokens, D
	// copied all 170 of B's rows (150 of them A's), E computed A's first 150 tokens itself.
	build := func(d *Decoder) []*KVCache {
		caches := kvCaches(t, m, 5, 256)
		A, B, C, D, E := caches[0], caches[1], caches[2], caches[3], caches[4]
		step := func(kv *KVCache, toks []int32) {
			t.Helper()
			if err := d.Step([]DecodeInput{{Cache: kv, Tokens: toks}}); err != nil {
				t.Fatal(err)
			}
		}
		step(A, prompt)
		B.CopyPrefix(A, 150)
		step(B, other[:20])
		C.CopyPrefix(A, 140)
		A.Truncate(100)
		step(A, other[20:80])
		D.CopyPrefix(B, 170)
		step(E, prompt)
		return caches
	}
	d, err := m.NewDecoder(256, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	alone := make([]float32, 5*V)
	for i, kv := range build(d) {
		if err := d.Step([]DecodeInput{{Cache: kv, Tokens: next[i : i+1]}}); err != nil {
			t.Fatal(err)
		}
		d.Logits(alone[i*V : (i+1)*V])
	}
	caches := build(d)
	in := make([]DecodeInput, 5)
	for i, kv := range caches {
		in[i] = DecodeInput{Cache: kv, Tokens: next[i : i+1]}
	}
	if err := d.Step(in); err != nil {
		t.Fatal(err)
	}
	together := make([]float32, 5*V)
	d.Logits(together)
	for i := range 5 {
		var worst float64
		for j := i * V; j < (i+1)*V; j++ {
			worst = max(worst, math.Abs(float64(together[j]-alone[j])))
		}
		if worst > 1e-5 {
			t.Errorf("cache %c: logits in one step with the others differ from alone by %g", 'A'+i, worst)
		}
	}
	// A, B, C, D are of one origin, in input order; E's is its own.
	shared := map[*KVCache]int32{}
	for r, i := range d.order[:5] {
		shared[caches[i]] = d.shared[r]
	}
	for i, want := range []int32{0, 100, 140, 140, 0} {
		if got := shared[caches[i]]; got != want {
			t.Errorf("cache %c shares %d rows with the row before it, want %d", 'A'+i, got, want)
		}
	}
}

// Short inputs (a decoding token, an appended tool response) attend through AttentionDecode, a row
// per token, and give the same bits as through AttentionForward per sequence: logits and caches,
// with appended chunks that cross key tiles, share a prefix copied from another cache, and sit
// next to decoding rows of the same origin.
func TestShortInputsAttendLikePrompts(t *testing.T) {
	m, c := microModel(t, 9)
	randomizeVectors(m, 10)
	ids := randomBatch(c, 1, 400, 17).IDs
	V := c.VocabSize
	run := func(short int) ([]float32, [][]float32) {
		d, err := m.NewDecoder(256, 4)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		d.shortInput = short
		caches := kvCaches(t, m, 4, 256)
		// A: a 150-token prompt; B and C: A's first 130 copied, then their own; D: its own.
		prefill := func(kv *KVCache, toks []int32) {
			if err := d.Step([]DecodeInput{{Cache: kv, Tokens: toks}}); err != nil {
				t.Fatal(err)
			}
		}
		prefill(caches[0], ids[:150])
		for i, own := range [][]int32{ids[200:212], ids[220:229]} {
			caches[1+i].CopyPrefix(caches[0], 130)
			prefill(caches[1+i], own)
		}
		prefill(caches[3], ids[300:340])
		in := []DecodeInput{
			{Cache: caches[0], Tokens: ids[150:180]}, // 30 appended tokens across the tile at 192
			{Cache: caches[1], Tokens: ids[240:241]}, // decoding, same origin as A
			{Cache: caches[2], Tokens: ids[250:257]}, // 7 appended
			{Cache: caches[3], Tokens: ids[340:341]}, // decoding, its own origin
		}
		if err := d.Step(in); err != nil {
			t.Fatal(err)
		}
		if short > 0 && d.shortRows != 30+1+7+1 {
			t.Fatalf("short rows %d, want 39", d.shortRows)
		}
		logits := make([]float32, len(in)*V)
		d.Logits(logits)
		var kv [][]float32 // every layer's valid key and value rows
		for _, cache := range caches {
			var rows []float32
			for l := range c.NumHiddenLayers {
				for _, b := range []kernels.Buf{cache.keys(l), cache.values(l)} {
					rows = append(rows, cacheFloats(b, cache.Len()*c.KVDim())...)
				}
			}
			kv = append(kv, rows)
		}
		return logits, kv
	}
	gotLogits, gotKV := run(shortInput)
	wantLogits, wantKV := run(0) // the appended chunks through AttentionForward
	for i := range wantLogits {
		if gotLogits[i] != wantLogits[i] {
			t.Fatalf("logit %d (input %d): %g through AttentionDecode, %g through AttentionForward", i, i/V, gotLogits[i], wantLogits[i])
		}
	}
	for s := range wantKV {
		if !slices.Equal(gotKV[s], wantKV[s]) {
			t.Fatalf("cache %d differs", s)
		}
	}
}
