package model

import (
	"math"
	"testing"

	"gorstar/kernels"
)

// bf16Pair is a model of config c and seed in bf16 and the same weights in fp32, both closed with
// the test.
func bf16Pair(t *testing.T, c Config, seed uint64) (low, full *Model) {
	t.Helper()
	for _, p := range []Precision{BF16, FP32} {
		m, err := New(c, seed)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		randomizeVectors(m, seed+1)
		if err := m.SetPrecision(p); err != nil {
			t.Fatal(err)
		}
		if p == BF16 {
			low = m
		} else {
			full = m
		}
	}
	return low, full
}

// widerConfig is a model with widths where bf16 rounding adds up over longer dot products.
func widerConfig() Config {
	c := microConfig("qwen3", false)
	c.HiddenSize, c.IntermediateSize, c.VocabSize, c.InitializerRange = 64, 192, 300, 0.05
	return c
}

// logProbDelta is the mean and max |a − b| over the weighted positions of b.
func logProbDelta(a, b []float32, w []float32) (mean, worst float64) {
	n := 0
	for i := range a {
		if w[i] == 0 {
			continue
		}
		d := math.Abs(float64(a[i] - b[i]))
		mean += d
		worst = max(worst, d)
		n++
	}
	return mean / float64(n), worst
}

// A bf16 model's log-probabilities and gradients are the fp32 model's within bf16's rounding: the
// bound is stated (mean and max |Δ logprob|, relative gradient error) and must not be zero, which
// would mean the bf16 path did not run. Measured (|Δ logprob| mean / max, nats), with the keys and
// values rounded to bf16 (the KV cache's values): micro 0.0042 / 0.017, micro-tied-qwen2 0.0105 /
// 0.036, wider 0.0026 / 0.0064; with them in fp32 they were 0.0062 / 0.023, 0.0073 / 0.024 and
// 0.0024 / 0.0064.
func TestBF16NearFP32(t *testing.T) {
	for _, v := range []struct {
		name          string
		c             Config
		mean, worst   float64 // bounds on |Δ logprob|, nats
		gradRelErrMax float64
	}{
		{"micro", microConfig("qwen3", false), 0.01, 0.05, 0.05},
		{"micro-tied-qwen2", func() Config { c := microConfig("qwen2", true); c.AttentionBias = true; return c }(), 0.02, 0.05, 0.05},
		{"wider", widerConfig(), 0.01, 0.05, 0.05},
	} {
		t.Run(v.name, func(t *testing.T) {
			low, full := bf16Pair(t, v.c, 3)
			b := randomBatch(v.c, 3, 16, 7)
			for _, m := range []*Model{low, full} {
				m.ZeroGrads()
			}
			rl, err := low.ForwardBackward(b)
			if err != nil {
				t.Fatal(err)
			}
			rf, err := full.ForwardBackward(b)
			if err != nil {
				t.Fatal(err)
			}
			mean, worst := logProbDelta(rl.LogProbs, rf.LogProbs, b.Weights)
			gl, gf := gradsOf(t, low), gradsOf(t, full)
			var num, den float64
			for i := range gl {
				d := float64(gl[i] - gf[i])
				num += d * d
				den += float64(gf[i]) * float64(gf[i])
			}
			rel := math.Sqrt(num / den)
			t.Logf("|Δ logprob| mean %.3g max %.3g; loss %.6g vs %.6g; gradient relative L2 error %.3g",
				mean, worst, rl.Loss, rf.Loss, rel)
			if mean > v.mean || worst > v.worst || rel > v.gradRelErrMax {
				t.Errorf("bf16 vs fp32: |Δ logprob| mean %g (≤ %g) max %g (≤ %g), gradient error %g (≤ %g)",
					mean, v.mean, worst, v.worst, rel, v.gradRelErrMax)
			}
			if worst == 0 || rel == 0 {
				t.Error("bf16 and fp32 agree exactly: the bf16 products did not run")
			}
		})
	}
}

// The bf16 weights are the fp32 master weights rounded to nearest even, refreshed after an
// optimizer step and after a direct write (WeightsChanged); the master weights and the moments
// stay float32.
func TestBF16WeightsFollowMaster(t *testing.T) {
	m, c := microModel(t, 3)
	if err := m.SetPrecision(BF16); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		m.round()
		master := make([]float32, m.Params.Size)
		m.Params.All.CopyTo(master)
		low := m.low.all.BF16s()
		for i, f := range master {
			u := math.Float32bits(f)
			want := uint16((u + 0x7fff + (u>>16)&1) >> 16) // no NaN here
			if low[i] != want {
				t.Fatalf("%s: bf16 weight %d = %#04x, want %#04x (master %g)", when, i, low[i], want, f)
			}
		}
	}
	check("after SetPrecision")
	opt := m.NewOptimizer(DefaultAdamW())
	defer opt.Close()
	if opt.M.All.DType() != kernels.F32 || m.Params.All.DType() != kernels.F32 {
		t.Fatal("master weights or moments are not float32")
	}
	b := randomBatch(c, 2, 8, 1)
	m.ZeroGrads()
	if _, err := m.ForwardBackward(b); err != nil {
		t.Fatal(err)
	}
	before := append([]uint16(nil), m.low.all.BF16s()...)
	if _, err := opt.Update(0.01); err != nil {
		t.Fatal(err)
	}
	check("after an optimizer step")
	if changed := func() bool {
		for i, v := range m.low.all.BF16s() {
			if v != before[i] {
				return true
			}
		}
		return false
	}(); !changed {
		t.Fatal("an optimizer step left every bf16 weight as it was")
	}
	host := make([]float32, m.Params.Size)
	m.Params.All.CopyTo(host)
	for i := range host {
		host[i] *= 1.5
	}
	m.Params.All.CopyFrom(host)
	m.WeightsChanged()
	check("after a direct write")
	if err := m.SetPrecision(FP32); err != nil {
		t.Fatal(err)
	}
	if m.low != nil || m.w.layers[0].q.DType() != kernels.F32 {
		t.Fatal("SetPrecision(fp32) kept bf16 weights")
	}
}

// Logprob parity: a bf16 decoder (the rollout engine's) and the bf16 training forward run the same
// products, and a bf16 product's row has the same bits whatever the step's rows (there is no
// few-rows path), so KV-cache decoding gives the forward's log-probabilities bit for bit; a
// decoder made before an optimizer step follows it.
func TestBF16DecodeMatchesForward(t *testing.T) {
	c := microConfig("qwen3", false)
	low, _ := bf16Pair(t, c, 3)
	b := randomBatch(c, 3, 12, 7)
	d, err := low.NewDecoder(b.B*b.L, b.B)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	check := func(when string) {
		t.Helper()
		want, err := low.Forward(&Batch{B: b.B, L: b.L, IDs: b.IDs})
		if err != nil {
			t.Fatal(err)
		}
		for _, prefill := range []int{1, 5} {
			got := decodeWith(t, low, d, b, prefill)
			var worst float64
			for i := range got {
				if i%b.L >= prefill {
					worst = max(worst, math.Abs(float64(got[i]-want.LogProbs[i])))
				}
			}
			t.Logf("%s, prefill %d: max |decode − forward| logprob = %.3g", when, prefill, worst)
			if worst != 0 { // every product row and attention row: the same bits in both
				t.Errorf("%s, prefill %d: max |decode − forward| logprob %g, want 0", when, prefill, worst)
			}
		}
	}
	check("before training")
	opt := low.NewOptimizer(DefaultAdamW())
	defer opt.Close()
	low.ZeroGrads()
	if _, err := low.ForwardBackward(b); err != nil {
		t.Fatal(err)
	}
	if _, err := opt.Update(0.05); err != nil {
		t.Fatal(err)
	}
	check("after an optimizer step")
}

// Training in bf16 lowers the loss of a repeated batch as fp32 training does.
func TestBF16TrainsLikeFP32(t *testing.T) {
	c := widerConfig()
	low, full := bf16Pair(t, c, 5)
	b := randomBatch(c, 4, 16, 9)
	for i := range b.Weights {
		b.Weights[i] = 1.0 / float32(len(b.Weights)) // a plain mean cross-entropy
	}
	train := func(m *Model) (first, last float64) {
		opt := m.NewOptimizer(DefaultAdamW())
		defer opt.Close()
		for step := 0; step < 40; step++ {
			m.ZeroGrads()
			r, err := m.ForwardBackward(b)
			if err != nil {
				t.Fatal(err)
			}
			if step == 0 {
				first = r.Loss
			}
			last = r.Loss
			if _, err := opt.Update(3e-3); err != nil {
				t.Fatal(err)
			}
		}
		return first, last
	}
	f0, f1 := train(full)
	l0, l1 := train(low)
	t.Logf("loss fp32 %.4f → %.4f, bf16 %.4f → %.4f", f0, f1, l0, l1)
	if drop, dropLow := f0-f1, l0-l1; drop <= 0 || math.Abs(dropLow-drop) > 0.1*drop {
		t.Errorf("loss drop bf16 %.4f vs fp32 %.4f: want within 10%%", dropLow, drop)
	}
}

func TestParsePrecision(t *testing.T) {
	for in, want := range map[string]Precision{"": FP32, "fp32": FP32, "bf16": BF16} {
		if got, err := ParsePrecision(in); err != nil || got != want {
			t.Errorf("ParsePrecision(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParsePrecision("fp16"); err == nil {
		t.Error("ParsePrecision(fp16) accepted")
	}
}

func TestStepMemory(t *testing.T) {
	c, err := Preset("small", 0)
	if err != nil {
		t.Fatal(err)
	}
	P := c.NumParams()
	f, b := c.StepMemory(FP32, 8, 512, 0, 0), c.StepMemory(BF16, 8, 512, 0, 0)
	if f.Weights != 4*P || f.Master != 0 || b.Weights != 2*P || b.Master != 4*P || f.Optimizer != 8*P || b.Gradients != 4*P {
		t.Fatalf("fp32 %+v, bf16 %+v for %d parameters", f, b, P)
	}
	// bf16 keeps ln1, ln2 ([T,C] each) and the SwiGLU output ([T,I]) at 2 bytes an element.
	T, L := int64(8*512), int64(c.NumHiddenLayers)
	saved := 2 * T * (2*int64(c.HiddenSize) + int64(c.IntermediateSize)) * L
	if f.Activations-b.Activations != saved || b.Total != f.Total+2*P-saved {
		t.Fatalf("bf16 step %+v, fp32 %+v: want %d bytes fewer activations and 2 bytes a parameter more", b, f, saved)
	}
	r := c.StepMemory(BF16, 8, 512, 4, 0)
	if r.Activations >= b.Activations || c.StepMemory(BF16, 16, 512, 0, 0).Activations <= b.Activations {
		t.Fatalf("activations: recompute 4 %d, none %d: want fewer with recomputation, more with a larger batch", r.Activations, b.Activations)
	}
}

// TestBF16KVCache: a bf16 model's caches hold bfloat16 keys and values on the CPU (a float32
// model's float32), as many bytes a token as Config.KVBytesPerToken says, and the values the
// trainer's forward attends over: its keys and values rounded to bfloat16, bit for bit.
func TestBF16KVCache(t *testing.T) {
	if kernels.OnDevice() {
		t.Skip("a device keeps float32 caches")
	}
	c := microConfig("qwen3", false)
	low, full := bf16Pair(t, c, 5)
	const capacity = 24
	for _, m := range []*Model{low, full} {
		kv := kvCaches(t, m, 1, capacity)[0]
		want := kernels.F32
		if m.Precision() == BF16 {
			want = kernels.BF16
		}
		if kv.buf.DType() != want || (!kv.tiles.IsNil() && kv.tiles.DType() != want) {
			t.Fatalf("%s: caches of %s, want %s", m.Precision(), kv.buf.DType(), want)
		}
		bytes := want.Size() * (kv.buf.Len() + kv.tiles.Len())
		if per := c.KVBytesPerToken(m.Precision()); bytes != capacity*per {
			t.Errorf("%s: a cache of %d tokens takes %d bytes, KVBytesPerToken says %d a token", m.Precision(), capacity, bytes, per)
		}
	}
	// The prompt through a decoder's prefill and through the trainer's forward.
	b := randomBatch(c, 1, 20, 3)
	d, err := low.NewDecoder(b.L, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	kv := kvCaches(t, low, 1, capacity)[0]
	if err := d.Step([]DecodeInput{{Cache: kv, Tokens: b.IDs}}); err != nil {
		t.Fatal(err)
	}
	if _, err := low.Forward(&Batch{B: 1, L: b.L, IDs: b.IDs}); err != nil {
		t.Fatal(err)
	}
	n := b.L * c.KVDim()
	for l := range c.NumHiddenLayers {
		for _, pair := range []struct {
			name    string
			cache   kernels.Buf
			forward kernels.Buf
		}{{"keys", kv.keys(l), low.act.layers[l].k}, {"values", kv.values(l), low.act.layers[l].v}} {
			got, fwd := cacheFloats(pair.cache, n), make([]float32, n)
			pair.forward.Slice(0, n).CopyTo(fwd)
			if i := firstDiff(got, fwd); i >= 0 {
				t.Fatalf("layer %d %s: element %d is %g in the cache, %g in the forward", l, pair.name, i, got[i], fwd[i])
			}
			for i, v := range fwd {
				if math.Float32bits(v)&0xffff != 0 {
					t.Fatalf("layer %d %s: the forward's element %d (%g) is not a bfloat16 value", l, pair.name, i, v)
				}
			}
		}
	}
}
