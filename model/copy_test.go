package model

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"gorstar/internal/testenv"
)

// copyTask builds rows "#dddddd<gap filler bytes>=dddddd" over byte ids: the loss falls on the
// copied digits only (each weighted 1/count, so the loss is the mean nats per copied digit). A
// model that has not learned to copy pays ln 10 ≈ 2.30 per digit; one that copies pays ~0.
func copyTask(rng *rand.Rand, rows, digits, gap int, variable, packed bool) *Batch {
	n := 1 + digits + gap + 1 + digits
	L := n
	docsPerRow := 1
	if packed {
		docsPerRow, L = 2, 2*n+3 // two documents and 3 pads per row
	}
	b := &Batch{B: rows, L: L, IDs: make([]int32, rows*L), Weights: make([]float32, rows*L)}
	if packed {
		b.Docs = make([][]int, rows)
	}
	w := float32(1 / float64(rows*docsPerRow*digits))
	for r := 0; r < rows; r++ {
		for d := 0; d < docsPerRow; d++ {
			at := r*L + d*n
			ids := b.IDs[at : at+n]
			ids[0] = '#'
			for i := 1; i <= digits; i++ {
				ids[i] = int32('0' + rng.IntN(10))
			}
			before := gap // filler between source and copy; the rest of gap goes after the copy
			if variable {
				before = rng.IntN(gap + 1)
			}
			for i := digits + 1; i < n; i++ {
				ids[i] = int32('a' + rng.IntN(26))
			}
			ids[digits+before+1] = '='
			for i := 0; i < digits; i++ {
				ids[digits+before+2+i] = ids[1+i]
				b.Weights[at+digits+before+2+i] = w
			}
			if packed {
				b.Docs[r] = append(b.Docs[r], n)
			}
		}
	}
	return b
}

// trainCopy trains a tiny-preset model on the copy task and returns the loss of the last steps.
func trainCopy(t *testing.T, steps, rows, digits, gap int, variable, packed bool, lr float64) float64 {
	t.Helper()
	c, err := Preset("tiny", 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	opt := m.NewOptimizer(DefaultAdamW())
	defer opt.Close()
	rng := rand.New(rand.NewPCG(7, uint64(gap)))
	recent := 0.0
	for s := 0; s < steps; s++ {
		b := copyTask(rng, rows, digits, gap, variable, packed)
		m.ZeroGrads()
		r, err := m.ForwardBackward(b)
		if err != nil {
			t.Fatal(err)
		}
		warm := math.Min(1, float64(s+1)/20)
		if _, err := opt.Update(lr * warm); err != nil {
			t.Fatal(err)
		}
		if s%25 == 0 || s == steps-1 {
			t.Logf("step %d loss %.3f", s, r.Loss)
		}
		if s >= steps-10 {
			recent += r.Loss / 10
		}
	}
	return recent
}

// A learning test of the whole training step (ForwardBackward with per-token weights, AdamW, tied
// embeddings, RoPE and the tiled attention kernel over packed documents): the tiny preset learns
// to copy six random digits from 72 tokens back — past one 64-token attention tile, two documents
// per row — in 80 steps. Guessing costs ln 10 ≈ 2.30 nats per digit; the bar is 0.5.
func TestTinyLearnsToCopy(t *testing.T) {
	testenv.Short(t, "a 1,000-step copy warm-up")
	if loss := trainCopy(t, 80, 8, 6, 64, false, true, 3e-3); loss > 0.5 {
		t.Fatalf("copy loss after 80 steps: %.3f nats per digit (guessing: 2.30)", loss)
	}
}

// The copy at a varying distance (content-based: an induction head) is the one SFT needs to
// read a number back from a tool's output; the tiny preset learns it too, more slowly (about
// 500–900 steps of 8 rows). Minutes on a loaded machine, so only with GORSTAR_LONG_TESTS set.
func TestTinyLearnsToCopyAtAnyDistance(t *testing.T) {
	if os.Getenv("GORSTAR_LONG_TESTS") == "" {
		t.Skip("set GORSTAR_LONG_TESTS=1 (1000 steps)")
	}
	if loss := trainCopy(t, 1000, 8, 6, 40, true, false, 3e-3); loss > 0.5 {
		t.Fatalf("copy loss after 1000 steps: %.3f nats per digit (guessing: 2.30)", loss)
	}
}
