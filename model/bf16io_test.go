package model

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"gorstar/internal/testenv"
	"gorstar/safetensors"
)

// savedBF16 is a bf16 Hugging Face directory of a micro model with non-trivial norms and biases.
func savedBF16(t *testing.T, c Config) string {
	t.Helper()
	m, err := New(c, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	randomizeVectors(m, 6)
	dir := filepath.Join(t.TempDir(), "bf16")
	if err := m.SaveAs(dir, safetensors.BF16); err != nil {
		t.Fatal(err)
	}
	return dir
}

func biasedQwen2() Config {
	c := microConfig("qwen2", false)
	c.AttentionBias = true
	return c
}

// An inference-only load of a bf16 checkpoint holds no float32 matrices, computes the training
// load's log-probabilities bit for bit (forward and KV-cache decode), and refuses to train.
func TestInferenceLoadMatchesTraining(t *testing.T) {
	for _, c := range []Config{microConfig("qwen3", true), biasedQwen2()} {
		t.Run(c.ModelType, func(t *testing.T) {
			dir := savedBF16(t, c)
			train, err := LoadWith(dir, LoadOptions{Precision: BF16})
			if err != nil {
				t.Fatal(err)
			}
			defer train.Close()
			inf, err := LoadWith(dir, LoadOptions{Precision: BF16, Inference: true})
			if err != nil {
				t.Fatal(err)
			}
			defer inf.Close()
			if !inf.Inference() || train.Inference() || inf.Precision() != BF16 {
				t.Fatalf("inference %v/%v, precision %s", inf.Inference(), train.Inference(), inf.Precision())
			}
			if got, want := inf.Params.All.Len(), inf.Params.Size-inf.Params.Decayed; got != want {
				t.Fatalf("inference model holds %d fp32 floats, want %d (norms and biases only)", got, want)
			}
			if !slices.Equal(inf.low.all.BF16s(), train.low.all.BF16s()) {
				t.Fatal("bf16 weights differ from the training load's")
			}
			b := randomBatch(c, 3, 12, 9)
			b.Weights = nil
			rt, err := train.Forward(b)
			if err != nil {
				t.Fatal(err)
			}
			ri, err := inf.Forward(b)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rt.LogProbs, ri.LogProbs) {
				t.Fatal("inference forward differs from the training forward")
			}
			got := decodeLogProbs(t, inf, b, 4)
			for i := range got {
				if i%b.L >= 4 && got[i] != ri.LogProbs[i] {
					t.Fatalf("inference decode differs from its forward at %d: %g, %g", i, got[i], ri.LogProbs[i])
				}
			}
			if err := inf.SetPrecision(FP32); err == nil {
				t.Error("SetPrecision(fp32) on an inference model: no error")
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Error("ZeroGrads on an inference model did not panic")
					}
				}()
				inf.ZeroGrads()
			}()
		})
	}
}

// A bf16 directory gorstar writes reads back bit for bit: saved again as BF16 from a training
// load and from an inference load, the weights file is the same bytes; widened to F32 (fp32
// precision) the weights are the file's values exactly.
func TestBF16RoundTripBitExact(t *testing.T) {
	for _, c := range []Config{microConfig("qwen3", true), biasedQwen2()} {
		t.Run(c.ModelType, func(t *testing.T) {
			dir := savedBF16(t, c)
			want, err := os.ReadFile(filepath.Join(dir, safetensors.SingleFile))
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range []LoadOptions{{}, {Precision: BF16}, {Precision: BF16, Inference: true}} {
				m, err := LoadWith(dir, o)
				if err != nil {
					t.Fatal(err)
				}
				out := filepath.Join(t.TempDir(), "again")
				err = m.SaveAs(out, safetensors.BF16)
				m.Close()
				if err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(filepath.Join(out, safetensors.SingleFile))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%+v: model.safetensors differs after load and save", o)
				}
			}
		})
	}
}

// The independent PyTorch reader (bench/qwen3_torch.py) reads a gorstar bf16 directory: every
// tensor the same bits, and its float64 log-probabilities on those weights agree with gorstar's.
func TestBF16DirReadByTorch(t *testing.T) {
	testenv.Short(t, "compares with PyTorch")
	python := testenv.Torch(t)
	script, _ := filepath.Abs("../bench/qwen3_torch.py")
	c := biasedQwen2()
	dir := savedBF16(t, c)
	out, err := exec.Command(python, script, "tensors", "--file", filepath.Join(dir, safetensors.SingleFile)).Output()
	if err != nil {
		t.Fatalf("qwen3_torch.py tensors: %v", err)
	}
	var dump struct {
		Tensors map[string]struct {
			Shape   []int
			F32bits []uint32
		}
	}
	if err := json.Unmarshal(out, &dump); err != nil {
		t.Fatal(err)
	}
	m, err := LoadWith(dir, LoadOptions{Precision: BF16, Inference: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	low := m.low.all.BF16s()
	for _, tn := range m.Params.Tensors {
		theirs, ok := dump.Tensors[tn.Name]
		if !ok || !slices.Equal(theirs.Shape, tn.Shape) {
			t.Fatalf("%s: torch has shape %v (found %v), want %v", tn.Name, theirs.Shape, ok, tn.Shape)
		}
		for i, b := range low[tn.Offset : tn.Offset+tn.Size] {
			if theirs.F32bits[i] != uint32(b)<<16 {
				t.Fatalf("%s[%d]: torch %#x, gorstar %#x", tn.Name, i, theirs.F32bits[i], uint32(b)<<16)
			}
		}
	}
	full, err := Load(dir) // fp32 arithmetic on the bf16 weights, as the reference computes
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	ids := []int32{3, 17, 0, 39, 22, 5, 5, 11, 30}
	res, err := full.Forward(&Batch{B: 1, L: len(ids), IDs: ids})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(ids)
	out, err = exec.Command(python, script, "logprobs", "--model", dir, "--ids", string(js), "--dtype", "float64").Output()
	if err != nil {
		t.Fatalf("qwen3_torch.py logprobs: %v", err)
	}
	var ref struct{ Logprobs []float64 }
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Logprobs) != len(ids)-1 {
		t.Fatalf("torch gave %d log-probabilities for %d tokens", len(ref.Logprobs), len(ids))
	}
	for i := 1; i < len(ids); i++ { // torch's k-th is of token k+1
		if d := math.Abs(ref.Logprobs[i-1] - float64(res.LogProbs[i])); d > 1e-5 {
			t.Errorf("token %d: torch %g, gorstar %g", i, ref.Logprobs[i-1], res.LogProbs[i])
		}
	}
}

// Recomputing layers in backward gives a bf16 model the gradients (and log-probabilities) of the
// run that keeps every activation, bit for bit, for every number of recomputed layers.
func TestBF16RecomputeSameGradients(t *testing.T) {
	c := widerConfig()
	c.NumHiddenLayers = 3
	var want, wantLP []float32
	for r := 0; r <= c.NumHiddenLayers; r++ {
		t.Run("recompute="+strconv.Itoa(r), func(t *testing.T) {
			m, err := New(c, 11)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			randomizeVectors(m, 12)
			if err := m.SetPrecision(BF16); err != nil {
				t.Fatal(err)
			}
			m.Recompute = r
			m.ZeroGrads()
			res, err := m.ForwardBackward(randomBatch(c, 2, 16, 13))
			if err != nil {
				t.Fatal(err)
			}
			g := make([]float32, m.Grads.Size)
			m.Grads.All.CopyTo(g)
			if r == 0 {
				want, wantLP = g, res.LogProbs
				if slices.Max(g) == 0 && slices.Min(g) == 0 {
					t.Fatal("zero gradients")
				}
				return
			}
			if !slices.Equal(res.LogProbs, wantLP) {
				t.Error("log-probabilities differ from the run without recomputation")
			}
			for i := range g {
				if g[i] != want[i] {
					t.Fatalf("gradient %d: %g with %d layers recomputed, %g without", i, g[i], r, want[i])
				}
			}
		})
	}
}
