package model

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// trainSteps runs steps SFT-style updates whose batches come from rng, as a training loop would.
func trainSteps(t *testing.T, m *Model, opt *Optimizer, rng *rand.PCG, cursor *int, steps int) {
	t.Helper()
	c := m.Config
	r := rand.New(rng)
	for s := 0; s < steps; s++ {
		b := &Batch{B: 2, L: 6, IDs: make([]int32, 12)}
		for i := range b.IDs {
			b.IDs[i] = int32((r.IntN(c.VocabSize) + *cursor) % c.VocabSize)
		}
		*cursor++
		m.ZeroGrads()
		if _, err := m.ForwardBackward(b); err != nil {
			t.Fatal(err)
		}
		if _, err := opt.Update(1e-2); err != nil {
			t.Fatal(err)
		}
	}
}

func paramsOf(m *Model) []float32 {
	p := make([]float32, m.Params.Size)
	m.Params.All.CopyTo(p)
	return p
}

// A run interrupted by a checkpoint and resumed from it ends with exactly the parameters of an
// uninterrupted run.
func TestResumeIsBitExact(t *testing.T) {
	c := microConfig("qwen3", false)
	cfg := DefaultAdamW()

	m, _ := New(c, 3)
	defer m.Close()
	opt := m.NewOptimizer(cfg)
	defer opt.Close()
	rng, cursor := rand.NewPCG(1, 2), 0
	trainSteps(t, m, opt, rng, &cursor, 6)
	want := paramsOf(m)

	dir := t.TempDir()
	m2, _ := New(c, 3)
	opt2 := m2.NewOptimizer(cfg)
	rng2, cursor2 := rand.NewPCG(1, 2), 0
	trainSteps(t, m2, opt2, rng2, &cursor2, 3)
	rngState, _ := rng2.MarshalBinary()
	cur, _ := json.Marshal(cursor2)
	if _, err := SaveCheckpoint(dir, m2, opt2, TrainState{Step: 3, RNG: rngState, Cursor: cur}); err != nil {
		t.Fatal(err)
	}
	trainSteps(t, m2, opt2, rng2, &cursor2, 1) // work after the checkpoint is lost in the "crash"
	opt2.Close()
	m2.Close()
	// A half-written later checkpoint (no DONE) must be ignored.
	if err := os.MkdirAll(filepath.Join(CheckpointPath(dir, 4)), 0o755); err != nil {
		t.Fatal(err)
	}

	latest, err := LatestCheckpoint(dir)
	if err != nil || latest != CheckpointPath(dir, 3) {
		t.Fatalf("LatestCheckpoint = %q, %v", latest, err)
	}
	m3, opt3, st, err := LoadCheckpoint(latest, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m3.Close()
	defer opt3.Close()
	rng3 := &rand.PCG{}
	if err := rng3.UnmarshalBinary(st.RNG); err != nil {
		t.Fatal(err)
	}
	var cursor3 int
	if err := json.Unmarshal(st.Cursor, &cursor3); err != nil {
		t.Fatal(err)
	}
	if st.Step != 3 || opt3.Step != 3 {
		t.Fatalf("resumed at step %d, optimizer step %d", st.Step, opt3.Step)
	}
	trainSteps(t, m3, opt3, rng3, &cursor3, 3)
	if got := paramsOf(m3); !slices.Equal(got, want) {
		t.Fatal("resumed run's parameters differ from the uninterrupted run's")
	}
	if err := PruneCheckpoints(dir, 0); err != nil {
		t.Fatal(err)
	}
	if latest, _ := LatestCheckpoint(dir); latest != "" {
		t.Fatalf("after pruning, LatestCheckpoint = %q", latest)
	}
}

func TestOptimizerClipsAndSkipsNonFinite(t *testing.T) {
	c := microConfig("qwen2", true)
	m, _ := New(c, 3)
	defer m.Close()
	opt := m.NewOptimizer(AdamWConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, MaxGradNorm: 1e-3})
	defer opt.Close()
	m.ZeroGrads()
	if _, err := m.ForwardBackward(randomBatch(c, 2, 4, 1)); err != nil {
		t.Fatal(err)
	}
	st, err := opt.Update(1e-3)
	if err != nil || !st.Clipped || st.GradNorm <= 1e-3 {
		t.Fatalf("Update = %+v, %v; want clipped", st, err)
	}
	before := paramsOf(m)
	g := make([]float32, m.Grads.Size)
	g[0] = float32(nanValue())
	m.Grads.All.CopyFrom(g)
	if _, err := opt.Update(1e-3); err == nil {
		t.Fatal("NaN gradient: no error")
	}
	if !slices.Equal(paramsOf(m), before) || opt.Step != 1 {
		t.Fatal("NaN gradient changed the parameters")
	}
}

func nanValue() float64 { var z float64; return z / z }
