package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorstar/dist"
	"gorstar/internal/testenv"
	"gorstar/kernels"
	"gorstar/model"
)

// The model on the device backend, end to end: the emulated device (the embedded kernels run by
// gpu/emul on host memory, its buffers reachable only through copies) installed as package
// kernels' Device, a training step (forward, loss, backward, AdamW) and greedy decode steps of a
// tiny model in fp32 and bf16, against the same on the CPU backend.
func TestModelOnEmulatedDevice(t *testing.T) {
	testenv.Short(t, "compiles the kernels for the CPU emulator and runs a tiny model on them")
	d := emulatedDevice(t, VendorCUDA)
	modelOnDevice(t, d)
	t.Run("gradient all-reduce", func(t *testing.T) { gradsAllReducedOnDevice(t, d) })
}

// TestModelOnEmulatedDevice on the GPU of GORSTAR_GPU_DEVICE (bench/gpu-check.sh).
func TestModelOnDevice(t *testing.T) {
	modelOnDevice(t, openTestDevice(t))
}

// tinyConfig is the model these tests run: 2 layers, hidden 16, vocabulary 40.
func tinyConfig() model.Config {
	return model.Config{
		ModelType: "qwen3", VocabSize: 40, HiddenSize: 16, IntermediateSize: 24, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8, RopeTheta: 1e4, RMSNormEps: 1e-6,
		InitializerRange: 0.3,
	}
}

// testBatch is two rows of 9 tokens, the first two packed documents, with random weights.
func testBatch(cfg model.Config) *model.Batch {
	rng := rand.New(rand.NewPCG(5, 6))
	const B, L = 2, 9
	b := &model.Batch{B: B, L: L, IDs: make([]int32, B*L), Weights: make([]float32, B*L), Docs: [][]int{{5, 4}, {9}}}
	for i := range b.IDs {
		b.IDs[i] = int32(rng.IntN(cfg.VocabSize))
		b.Weights[i] = float32(rng.Float64()*2 - 0.5)
	}
	return b
}

// gradsAllReducedOnDevice runs data-parallel training's gradient all-reduce for a model on the
// device through a CollectiveComm whose NCCL is a fake standing for two ranks with the same
// gradients: it doubles a float32 buffer in place. The gradients must come back doubled, exactly,
// from AllReduceGrads and from the overlapped all-reduce's finish, handed to NCCL where they are
// (nothing staged through the host).
func gradsAllReducedOnDevice(t *testing.T, d *Device) {
	dir := t.TempDir()
	useSearch(t, dir)
	fakeLibrary(t, dir, "libnccl.so.2", tableNames(t, "GK_NCCL_SYMS"), map[string]string{
		"ncclCommInitRank": "typedef struct { char b[128]; } uid_fake; int ncclCommInitRank(void **c, int n, uid_fake id, int r) { *c = (void *)8; return 0; }",
		"ncclAllReduce":    "int ncclAllReduce(const void *s, void *r, unsigned long n, int dt, int op, void *c, void *st) { if (s != r || dt != 7 || op != 0) return 4; for (unsigned long i = 0; i < n; i++) ((float *)r)[i] *= 2; return 0; }",
	})
	c, err := NewCollectiveComm(d, (*dist.World)(nil).Collectives(), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	kernels.UseDevice(d.Kernels())
	defer kernels.UseDevice(nil)
	cfg := tinyConfig()
	m, err := model.New(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, overlap := range []bool{false, true} {
		m.ZeroGrads()
		if overlap {
			m.OverlapAllReduceGrads(c)
		}
		if _, err := m.ForwardBackward(testBatch(cfg)); err != nil {
			t.Fatal(err)
		}
		before := make([]float32, m.Grads.Size)
		m.Grads.All.CopyTo(before)
		if overlap {
			_, err = m.FinishAllReduceGrads(c)
		} else {
			err = m.AllReduceGrads(c)
		}
		if err != nil {
			t.Fatal(err)
		}
		after := make([]float32, m.Grads.Size)
		m.Grads.All.CopyTo(after)
		nonzero := 0
		for i := range before {
			if after[i] != 2*before[i] {
				t.Fatalf("overlap=%v: gradient %d is %g after the all-reduce, %g before", overlap, i, after[i], before[i])
			}
			if before[i] != 0 {
				nonzero++
			}
		}
		if nonzero < len(before)/2 {
			t.Fatalf("overlap=%v: only %d of %d gradients are nonzero", overlap, nonzero, len(before))
		}
	}
	if !c.stage.IsNil() {
		t.Error("the gradients were staged through the host")
	}
}

func modelOnDevice(t *testing.T, d *Device) {
	cfg := tinyConfig()
	for _, prec := range []model.Precision{model.FP32, model.BF16} {
		t.Run(string(prec), func(t *testing.T) {
			// The GPU bounds of TestDeviceMatchesCPU: fp32 1e-4 of the largest value, bf16 8e-3.
			bound := 1e-4
			if prec == model.BF16 {
				bound = 8e-3
			}
			onDevice := func(f func() stepResult) stepResult {
				kernels.UseDevice(d.Kernels())
				defer kernels.UseDevice(nil)
				if got := kernels.Backend(); got != d.Name() {
					t.Fatalf("backend %q on the device %s", got, d.Name())
				}
				return f()
			}
			cpu := trainStep(t, cfg, prec)
			dev := onDevice(func() stepResult { return trainStep(t, cfg, prec) })
			if err := d.Err(); err != nil {
				t.Fatal(err)
			}
			closeTo(t, "log-probabilities", cpu.logprobs, dev.logprobs, bound)
			closeTo(t, "gradients", cpu.grads, dev.grads, bound)
			if d := math.Abs(cpu.loss - dev.loss); d > bound*math.Abs(cpu.loss) {
				t.Errorf("loss %g on the CPU, %g on the device", cpu.loss, dev.loss)
			}
			if d := math.Abs(cpu.norm - dev.norm); d > bound*cpu.norm {
				t.Errorf("gradient norm %g on the CPU, %g on the device", cpu.norm, dev.norm)
			}
			checkUpdate(t, cpu, dev)

			cpuDec := decodeSteps(t, cfg, prec, nil)
			devDec := onDevice(func() stepResult { return decodeSteps(t, cfg, prec, cpuDec.tokens) })
			closeTo(t, "decode logits", cpuDec.logits, devDec.logits, bound)
			closeTo(t, "decode log-probabilities", cpuDec.logprobs, devDec.logprobs, bound)
			// Greedy tokens agree wherever the CPU's best two logits are further apart than the bound.
			scale := maxAbs(cpuDec.logits)
			for i, tok := range cpuDec.tokens {
				if devDec.argmax[i] != tok && cpuDec.gaps[i] > 2*bound*scale {
					t.Errorf("decode row %d: token %d on the device, %d on the CPU (gap %g)", i, devDec.argmax[i], tok, cpuDec.gaps[i])
				}
			}
			t.Logf("%s: %d greedy tokens compared", prec, len(cpuDec.tokens))
		})
	}
	// The model's buffers came back through the cache of freed buffers (uninitialized memory that
	// an earlier op wrote), and the results above still matched the CPU's. No allocation at all:
	// a -run filter left the subtests out.
	switch st := d.PoolStats(); {
	case st.Misses == 0:
	case st.Hits == 0:
		t.Errorf("no allocation was served from the cache of freed buffers: %+v", st)
	default:
		t.Logf("buffer cache: %d allocations reused, %d from the driver, %d bytes cached", st.Hits, st.Misses, st.CachedBytes)
	}
}

type stepResult struct {
	logprobs, grads, before, after []float32
	loss, norm                     float64
	// decode
	logits []float32
	tokens []int32 // the greedy tokens fed (the CPU's)
	argmax []int32 // this backend's greedy choice at each step
	gaps   []float64
}

const stepLR = 1e-2

// trainStep runs one training step of a new model: forward and backward of a batch with packed
// documents, then AdamW.
func trainStep(t *testing.T, cfg model.Config, prec model.Precision) stepResult {
	t.Helper()
	m, err := model.New(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.SetPrecision(prec); err != nil {
		t.Fatal(err)
	}
	b := testBatch(cfg)
	var r stepResult
	r.before = make([]float32, m.Params.Size)
	m.Params.All.CopyTo(r.before)
	m.ZeroGrads()
	res, err := m.ForwardBackward(b)
	if err != nil {
		t.Fatal(err)
	}
	r.logprobs, r.loss = res.LogProbs, res.Loss
	r.grads = make([]float32, m.Grads.Size)
	m.Grads.All.CopyTo(r.grads)
	opt := m.NewOptimizer(model.DefaultAdamW())
	defer opt.Close()
	st, err := opt.Update(stepLR)
	if err != nil {
		t.Fatal(err)
	}
	r.norm = st.GradNorm
	r.after = make([]float32, m.Params.Size)
	m.Params.All.CopyTo(r.after)
	return r
}

// checkUpdate compares AdamW's updates: where a gradient is 100 times the largest difference
// between the backends' gradients, its first update is −lr·sign(g) less a little weight decay on
// both, so they must agree to 1e-3·lr.
func checkUpdate(t *testing.T, cpu, dev stepResult) {
	t.Helper()
	worst := 0.0
	for i := range cpu.grads {
		worst = max(worst, math.Abs(float64(cpu.grads[i]-dev.grads[i])))
	}
	compared := 0
	for i := range cpu.after {
		if cpu.before[i] != dev.before[i] {
			t.Fatalf("parameter %d starts at %g on the CPU, %g on the device", i, cpu.before[i], dev.before[i])
		}
		if math.Abs(float64(cpu.grads[i])) < 100*worst+1e-6 {
			continue
		}
		compared++
		dc, dd := float64(cpu.after[i]-cpu.before[i]), float64(dev.after[i]-dev.before[i])
		if math.Abs(dc) < 0.5*stepLR || math.Abs(dc-dd) > 1e-3*stepLR {
			t.Fatalf("parameter %d: update %g on the CPU, %g on the device (gradient %g)", i, dc, dd, cpu.grads[i])
		}
	}
	if compared < len(cpu.after)/4 {
		t.Fatalf("only %d of %d updates compared", compared, len(cpu.after))
	}
}

// decodeSteps prefills two prompts and decodes 4 tokens for both, batched: greedy on the CPU
// (feed nil), the CPU's tokens fed on the device.
func decodeSteps(t *testing.T, cfg model.Config, prec model.Precision, feed []int32) stepResult {
	t.Helper()
	m, err := model.New(cfg, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.SetPrecision(prec); err != nil {
		t.Fatal(err)
	}
	const steps = 4
	d, err := m.NewDecoder(16, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var caches [2]*model.KVCache
	for i := range caches {
		if caches[i], err = m.NewKVCache(16); err != nil {
			t.Fatal(err)
		}
		defer caches[i].Free()
	}
	in := []model.DecodeInput{{Cache: caches[0], Tokens: []int32{1, 7, 3, 9, 2}}, {Cache: caches[1], Tokens: []int32{4, 4, 8}}}
	V := cfg.VocabSize
	var r stepResult
	logits := make([]float32, 2*V)
	lp := make([]float32, 2)
	for step := 0; step <= steps; step++ {
		if err := d.Step(in); err != nil {
			t.Fatal(err)
		}
		d.Logits(logits)
		r.logits = append(r.logits, logits...)
		next := make([]int32, 2)
		for s := range 2 {
			row := logits[s*V : (s+1)*V]
			best, second := int32(0), -1
			for v := range row {
				if row[v] > row[best] {
					best = int32(v)
				}
			}
			for v := range row {
				if int32(v) != best && (second < 0 || row[v] > row[second]) {
					second = v
				}
			}
			r.argmax = append(r.argmax, best)
			r.gaps = append(r.gaps, float64(row[best]-row[second]))
			next[s] = best
			if feed != nil {
				next[s] = feed[len(r.tokens)]
			}
			r.tokens = append(r.tokens, next[s])
		}
		d.LogProbs(next, lp)
		r.logprobs = append(r.logprobs, lp...)
		for s := range in {
			in[s].Tokens = next[s : s+1]
		}
	}
	return r
}

func maxAbs(x []float32) float64 {
	m := 0.0
	for _, v := range x {
		m = max(m, math.Abs(float64(v)))
	}
	return m
}

// closeTo fails unless got is within bound·max|want| of want everywhere.
func closeTo(t *testing.T, what string, want, got []float32, bound float64) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale, worst, at := maxAbs(want), 0.0, 0
	for i := range want {
		if d := math.Abs(float64(want[i]) - float64(got[i])); d > worst || math.IsNaN(d) {
			worst, at = d, i
		}
	}
	msg := fmt.Sprintf("%s: largest difference %.3g at %d (%g vs %g) of largest |value| %.3g: relative %.2g", what, worst, at,
		want[at], got[at], scale, worst/scale)
	if !(worst <= bound*scale) {
		t.Error(msg)
		return
	}
	t.Log(msg)
}
