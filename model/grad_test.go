package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"gorstar/kernels"
)

func TestMain(m *testing.M) {
	threads := 2
	if n, err := strconv.Atoi(os.Getenv("GORSTAR_THREADS")); err == nil {
		threads = n // 1 on a loaded shared machine, where OpenMP barriers wait for descheduled threads
	}
	if err := kernels.Init(0, threads); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// microConfig is a model small enough for finite differences over many parameters.
func microConfig(modelType string, tied bool) Config {
	return Config{
		ModelType: modelType, VocabSize: 40, HiddenSize: 16, IntermediateSize: 24, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8, RopeTheta: 1e4, RMSNormEps: 1e-6,
		TieWordEmbeddings: tied, InitializerRange: 0.3,
	}
}

// randomizeVectors gives norms and biases non-trivial values so their gradients are exercised.
func randomizeVectors(m *Model, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	host := make([]float32, m.Params.Size)
	m.Params.All.CopyTo(host)
	for _, t := range m.Params.Tensors {
		if !t.Decay {
			for i := t.Offset; i < t.Offset+t.Size; i++ {
				host[i] += float32(rng.NormFloat64() * 0.3)
			}
		}
	}
	m.Params.All.CopyFrom(host)
}

func randomBatch(c Config, B, L int, seed uint64) *Batch {
	rng := rand.New(rand.NewPCG(seed, 2))
	b := &Batch{B: B, L: L, IDs: make([]int32, B*L), Weights: make([]float32, B*L)}
	for i := range b.IDs {
		b.IDs[i] = int32(rng.IntN(c.VocabSize))
		b.Weights[i] = float32(rng.Float64()*2 - 0.5) // negative weights too, as an RL loss has
		if rng.IntN(4) == 0 {
			b.Weights[i] = 0 // masked, as prompt tokens and padding are
		}
	}
	return b
}

func TestGradientFiniteDifferences(t *testing.T) {
	for _, tc := range []struct {
		typ    string
		tied   bool
		bias   bool
		packed bool // documents packed into the rows (Batch.Docs), with padding
	}{{"qwen3", true, false, false}, {"qwen3", false, false, false}, {"qwen3", false, true, false},
		{"qwen2", true, false, false}, {"qwen2", false, false, false}, {"qwen3", false, false, true},
		{"qwen2", false, true, true}} {
		t.Run(fmt.Sprintf("%s/tied=%v/bias=%v/packed=%v", tc.typ, tc.tied, tc.bias, tc.packed), func(t *testing.T) {
			c := microConfig(tc.typ, tc.tied)
			c.AttentionBias = tc.bias
			m, err := New(c, 7)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			randomizeVectors(m, 3)
			m.LossChunkTokens = 5 // several lm_head chunks, one partial
			b := randomBatch(c, 2, 7, 11)
			if tc.packed {
				b.Docs = [][]int{{3, 4}, {2, 1, 2}}
			}
			m.ZeroGrads()
			if _, err := m.ForwardBackward(b); err != nil {
				t.Fatal(err)
			}
			grads := make([]float32, m.Grads.Size)
			m.Grads.All.CopyTo(grads)
			params := make([]float32, m.Params.Size)
			m.Params.All.CopyTo(params)

			loss := func() float64 {
				r, err := m.Forward(b)
				if err != nil {
					t.Fatal(err)
				}
				return r.Loss
			}
			rng := rand.New(rand.NewPCG(5, 5))
			const h = 1e-2
			worst := 0.0
			for _, tn := range m.Params.Tensors {
				for s := 0; s < 4; s++ {
					i := tn.Offset + rng.IntN(tn.Size)
					orig := params[i]
					params[i] = orig + h
					m.Params.All.CopyFrom(params)
					lp := loss()
					params[i] = orig - h
					m.Params.All.CopyFrom(params)
					lm := loss()
					params[i] = orig
					m.Params.All.CopyFrom(params)
					fd := (lp - lm) / (2 * h)
					an := float64(grads[i])
					diff := math.Abs(fd - an)
					tol := 2e-3 + 2e-2*math.Max(math.Abs(fd), math.Abs(an))
					worst = math.Max(worst, diff/tol)
					if diff > tol {
						t.Errorf("%s[%d]: analytic %.6g, finite difference %.6g", tn.Name, i-tn.Offset, an, fd)
					}
				}
			}
			t.Logf("worst error / tolerance: %.3f", worst)
		})
	}
}
