package model

import (
	"math"
	"slices"
	"testing"
)

func equalWhereWeighted(a, b, w []float32) bool {
	for i := range a {
		if w[i] != 0 && a[i] != b[i] {
			return false
		}
	}
	return true
}

func gradsOf(t *testing.T, m *Model) []float32 {
	t.Helper()
	g := make([]float32, m.Grads.Size)
	m.Grads.All.CopyTo(g)
	return g
}

// The two-pass flow (Forward, then Backward with weights computed from the log-probabilities)
// gives exactly the gradient of the one-pass flow, and recomputing activations changes nothing.
func TestTwoPassAndRecomputeMatchOnePass(t *testing.T) {
	c := microConfig("qwen3", false)
	b := randomBatch(c, 3, 6, 4)
	run := func(twoPass bool, recompute int) ([]float32, *Result) {
		m, err := New(c, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		m.Recompute = recompute
		m.ZeroGrads()
		var r *Result
		if twoPass {
			if r, err = m.Forward(&Batch{B: b.B, L: b.L, IDs: b.IDs}); err != nil {
				t.Fatal(err)
			}
			if err := m.Backward(b.Weights); err != nil {
				t.Fatal(err)
			}
		} else if r, err = m.ForwardBackward(b); err != nil {
			t.Fatal(err)
		}
		return gradsOf(t, m), r
	}
	want, r1 := run(false, 0)
	for _, v := range []struct {
		twoPass   bool
		recompute int
	}{{true, 0}, {false, 1}, {false, 2}, {true, 2}} {
		got, r := run(v.twoPass, v.recompute)
		if !slices.Equal(got, want) {
			t.Errorf("two-pass %v, recompute %d: gradients differ from the one-pass run", v.twoPass, v.recompute)
		}
		if !equalWhereWeighted(r.LogProbs, r1.LogProbs, b.Weights) {
			t.Errorf("two-pass %v, recompute %d: log-probabilities differ", v.twoPass, v.recompute)
		}
	}
	// The two-pass run's Forward gives every log-probability; it must agree with the one-pass run
	// where that computed them.
	_, full := run(true, 0)
	for i := range b.Weights {
		if i%b.L != 0 && b.Weights[i] == 0 && (r1.LogProbs[i] != 0 || full.LogProbs[i] == 0) {
			t.Fatalf("token %d of weight 0: one-pass logprob %g, forward %g", i, r1.LogProbs[i], full.LogProbs[i])
		}
	}
	// Log-probabilities are normalized: position 0 has none, the rest are ≤ 0.
	for i, lp := range r1.LogProbs {
		if (i%b.L == 0 && lp != 0) || lp > 0 || math.IsNaN(float64(lp)) {
			t.Fatalf("logprob[%d] = %g", i, lp)
		}
	}
}

// Each row of a batch is independent of the others: its log-probabilities equal those of the row
// run alone (padding and batch composition cannot leak between sequences).
func TestRowsIndependent(t *testing.T) {
	c := microConfig("qwen2", true)
	m, err := New(c, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b := randomBatch(c, 3, 5, 9)
	all, err := m.Forward(b)
	if err != nil {
		t.Fatal(err)
	}
	for row := 0; row < b.B; row++ {
		one, err := m.Forward(&Batch{B: 1, L: b.L, IDs: b.IDs[row*b.L : (row+1)*b.L]})
		if err != nil {
			t.Fatal(err)
		}
		for i, lp := range one.LogProbs {
			if d := math.Abs(float64(lp - all.LogProbs[row*b.L+i])); d > 1e-5 {
				t.Fatalf("row %d token %d: %g alone, %g in the batch", row, i, lp, all.LogProbs[row*b.L+i])
			}
		}
	}
}

func TestBadBatch(t *testing.T) {
	c := microConfig("qwen3", true)
	m, err := New(c, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, b := range []*Batch{
		{B: 0, L: 3},
		{B: 1, L: 3, IDs: []int32{1, 2}},
		{B: 1, L: 2, IDs: []int32{1, 40}},
		{B: 1, L: 2, IDs: []int32{-1, 3}},
		{B: 1, L: 2, IDs: []int32{1, 3}, Weights: []float32{1}},
	} {
		if _, err := m.Forward(b); err == nil {
			t.Errorf("batch %+v: no error", b)
		}
	}
	fresh, _ := New(c, 2)
	defer fresh.Close()
	if err := fresh.Backward(nil); err == nil {
		t.Error("Backward without Forward: no error")
	}
}

// With a fixed thread count the CPU path is deterministic: the same step twice, on the same model
// and on a fresh one, gives the same bits.
func TestDeterministic(t *testing.T) {
	c := microConfig("qwen3", true)
	b := randomBatch(c, 2, 9, 3)
	var first []float32
	var firstLP []float32
	for run := 0; run < 2; run++ {
		m, err := New(c, 4)
		if err != nil {
			t.Fatal(err)
		}
		for rep := 0; rep < 2; rep++ {
			m.ZeroGrads()
			r, err := m.ForwardBackward(b)
			if err != nil {
				t.Fatal(err)
			}
			g := gradsOf(t, m)
			if first == nil {
				first, firstLP = g, r.LogProbs
			} else if !slices.Equal(g, first) || !slices.Equal(r.LogProbs, firstLP) {
				t.Fatalf("run %d repetition %d: results differ", run, rep)
			}
		}
		m.Close()
	}
}

// Buffers sized for a larger batch are reused for smaller ones without changing any result.
func TestShapeChangesReuseBuffers(t *testing.T) {
	c := microConfig("qwen2", false)
	reused, _ := New(c, 6)
	defer reused.Close()
	reused.LossChunkTokens = 4
	for i, shape := range [][2]int{{3, 7}, {2, 5}, {1, 9}, {4, 6}, {3, 2}} {
		b := randomBatch(c, shape[0], shape[1], uint64(i))
		fresh, _ := New(c, 6)
		fresh.LossChunkTokens = 4
		fresh.ZeroGrads()
		want, err := fresh.ForwardBackward(b)
		if err != nil {
			t.Fatal(err)
		}
		reused.ZeroGrads()
		got, err := reused.ForwardBackward(b)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.LogProbs, want.LogProbs) || !slices.Equal(gradsOf(t, reused), gradsOf(t, fresh)) {
			t.Errorf("batch %d×%d: reused buffers give different results", shape[0], shape[1])
		}
		fresh.Close()
	}
}
