package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Packed batches (Batch.Docs): documents in one row behave as rows of their own.

// randomDocs returns documents of the given lengths and a weight per token (some 0, some
// negative, as SFT masks and RL advantages give).
func randomDocs(c Config, lengths [][]int, seed uint64) (ids [][][]int32, weights [][][]float32) {
	rng := rand.New(rand.NewPCG(seed, 3))
	for _, row := range lengths {
		var ri [][]int32
		var rw [][]float32
		for _, n := range row {
			d, w := make([]int32, n), make([]float32, n)
			for i := range d {
				d[i] = int32(rng.IntN(c.VocabSize))
				w[i] = float32(rng.Float64()*2 - 0.5)
				if rng.IntN(4) == 0 {
					w[i] = 0
				}
			}
			ri, rw = append(ri, d), append(rw, w)
		}
		ids, weights = append(ids, ri), append(weights, rw)
	}
	return ids, weights
}

// packedBatch lays the documents out row by row, padding with id 1 and weight 1 (padding must
// not count whatever its weight says).
func packedBatch(ids [][][]int32, weights [][][]float32, L int) *Batch {
	B := len(ids)
	b := &Batch{B: B, L: L, IDs: make([]int32, B*L), Weights: make([]float32, B*L), Docs: make([][]int, B)}
	for row := range ids {
		p := row * L
		for d := range ids[row] {
			copy(b.IDs[p:], ids[row][d])
			copy(b.Weights[p:], weights[row][d])
			p += len(ids[row][d])
			b.Docs[row] = append(b.Docs[row], len(ids[row][d]))
		}
		for ; p < (row+1)*L; p++ {
			b.IDs[p], b.Weights[p] = 1, 1
		}
	}
	return b
}

// A packed batch gives each document the log-probabilities it has alone, and the gradient of the
// sum of the documents' losses, in every flow (one pass, two passes, recomputed layers).
func TestPackedMatchesSeparateRows(t *testing.T) {
	lengths := [][]int{{5, 9, 3}, {1, 7}, {12}}
	for _, typ := range []string{"qwen3", "qwen2"} {
		c := microConfig(typ, false)
		c.AttentionBias = typ == "qwen2"
		ids, weights := randomDocs(c, lengths, 8)
		packed := packedBatch(ids, weights, 20)
		for _, flow := range []struct {
			twoPass   bool
			recompute int
		}{{false, 0}, {true, 0}, {false, 2}} {
			t.Run(fmt.Sprintf("%s/two-pass=%v/recompute=%d", typ, flow.twoPass, flow.recompute), func(t *testing.T) {
				m, err := New(c, 4)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				randomizeVectors(m, 5)
				m.Recompute = flow.recompute
				step := func(b *Batch) *Result {
					if !flow.twoPass {
						r, err := m.ForwardBackward(b)
						if err != nil {
							t.Fatal(err)
						}
						return r
					}
					r, err := m.Forward(&Batch{B: b.B, L: b.L, IDs: b.IDs, Docs: b.Docs})
					if err != nil {
						t.Fatal(err)
					}
					if err := m.Backward(b.Weights); err != nil {
						t.Fatal(err)
					}
					return r
				}
				m.ZeroGrads()
				all := step(packed)
				want := gradsOf(t, m)

				m.ZeroGrads()
				for row := range ids {
					p := row * packed.L
					for d := range ids[row] {
						n := len(ids[row][d])
						alone := step(&Batch{B: 1, L: n, IDs: ids[row][d], Weights: weights[row][d]})
						for i := 0; i < n; i++ {
							got, w := all.LogProbs[p+i], alone.LogProbs[i]
							if math.Abs(float64(got-w)) > 1e-5 {
								t.Errorf("row %d document %d token %d: logprob %g packed, %g alone", row, d, i, got, w)
							}
						}
						p += n
					}
					for ; p < (row+1)*packed.L; p++ {
						if all.LogProbs[p] != 0 {
							t.Errorf("row %d padding %d: logprob %g, want 0", row, p-row*packed.L, all.LogProbs[p])
						}
					}
				}
				// float32 rounding differs between the packed and the separate runs. On this small
				// random model (no q/k norm on qwen2, so sharp softmaxes) right-padding each
				// document alone, without packing, moves one embedding gradient of 0.044 by 2.2e-5:
				// the tolerance sits above that floor and far below any masking error.
				got := gradsOf(t, m)
				worst := 0.0
				for _, tn := range m.Params.Tensors {
					for i := tn.Offset; i < tn.Offset+tn.Size; i++ {
						d := math.Abs(float64(got[i]-want[i])) / (1e-4 + 1e-3*math.Abs(float64(want[i])))
						worst = math.Max(worst, d)
						if d > 1 {
							t.Fatalf("%s[%d]: packed gradient %g, sum over the documents alone %g", tn.Name, i-tn.Offset, want[i], got[i])
						}
					}
				}
				t.Logf("worst gradient difference / tolerance: %.3f", worst)
			})
		}
	}
}

// One document per row (Docs[b] = [L]) is the unpacked batch, bit for bit.
func TestOneDocumentPerRowIsUnpacked(t *testing.T) {
	c := microConfig("qwen3", true)
	b := randomBatch(c, 3, 9, 6)
	run := func(docs [][]int) ([]float32, []float32) {
		m, err := New(c, 3)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		m.ZeroGrads()
		r, err := m.ForwardBackward(&Batch{B: b.B, L: b.L, IDs: b.IDs, Weights: b.Weights, Docs: docs})
		if err != nil {
			t.Fatal(err)
		}
		return r.LogProbs, gradsOf(t, m)
	}
	lp, g := run(nil)
	lpDocs, gDocs := run([][]int{{9}, {9}, {9}})
	if !slices.Equal(lp, lpDocs) || !slices.Equal(g, gDocs) {
		t.Error("one document per row differs from no documents")
	}
}

// RoPE is relative, so positions that do not restart would shift every angle of a document by the
// same offset and change its results by rounding only: the positions and targets are checked here.
func TestPackedPositionsAndTargets(t *testing.T) {
	c := microConfig("qwen3", true)
	m, err := New(c, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ids := []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	if _, err := m.Forward(&Batch{B: 2, L: 6, IDs: ids, Docs: [][]int{{2, 3}, {4}}}); err != nil {
		t.Fatal(err)
	}
	pos, targets := make([]int32, 12), make([]int32, 12)
	m.act.pos.CopyToI32(pos)
	m.act.targets.CopyToI32(targets)
	if want := []int32{0, 1, 0, 1, 2, 0, 0, 1, 2, 3, 0, 0}; !slices.Equal(pos, want) {
		t.Errorf("positions %v, want %v", pos, want)
	}
	// Position t predicts token t+1 inside its document only.
	if want := []int32{2, -1, 4, 5, -1, -1, 8, 9, 10, -1, -1, -1}; !slices.Equal(targets, want) {
		t.Errorf("targets %v, want %v", targets, want)
	}
}

func TestBadDocs(t *testing.T) {
	c := microConfig("qwen3", true)
	m, err := New(c, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ids := []int32{1, 2, 3, 4, 5, 6}
	for _, docs := range [][][]int{
		{{3}},          // one row of two
		{{3}, {}},      // a row without documents
		{{3}, {0, 3}},  // an empty document
		{{2, 2}, {4}},  // more tokens than the row
		{{3}, {-1, 4}}, // a negative length
	} {
		if _, err := m.Forward(&Batch{B: 2, L: 3, IDs: ids, Docs: docs}); err == nil {
			t.Errorf("documents %v: no error", docs)
		}
	}
}
