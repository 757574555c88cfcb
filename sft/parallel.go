package sft

import (
	"fmt"

	"gorstar/dist"
	"gorstar/model"
)

// Data parallelism. Every rank holds the whole data set and builds the same plan; an optimizer
// step's examples are split by their position in the step (position i goes to rank i mod size),
// each rank weighs its tokens by 1 / the whole step's assistant tokens, and the gradients are
// summed over the ranks before the update. So every rank takes the same AdamW step on the same
// sum, and the plan, the batch and the checkpoint do not depend on the world size: a run resumes
// at any size. Only the order of the floating-point sums does (a reduction over ranks, not one
// accumulation), so runs at different sizes agree to rounding, and a run at one size gives the
// same bits every time.

// weightCheckEvery is how often (in steps) the ranks compare a hash of their weights; also at the
// start and at the last step. A mismatch stops the run: the ranks' models have drifted apart.
const weightCheckEvery = 50

// checkSameWeights stops the run when a rank's weights differ from rank 0's after `done` steps.
func checkSameWeights(m *model.Model, w *dist.World, done int) error {
	if err := w.SameHash(m.Params.Hash()); err != nil {
		return fmt.Errorf("sft: weights after step %d: %w: the ranks have diverged", done, err)
	}
	return nil
}

// reduceStep sums the step's gradients, loss and tokens over the ranks.
func (t *trainer) reduceStep(ss *stepStats) error {
	if !t.o.World.Distributed() {
		return nil
	}
	if err := t.m.AllReduceGrads(t.o.World.Comm); err != nil {
		return fmt.Errorf("sft: %w", err)
	}
	tokens := float64(ss.tokens)
	if err := t.o.World.SumF64(&ss.loss, &tokens); err != nil {
		return fmt.Errorf("sft: all-reduce step statistics: %w", err)
	}
	ss.tokens = int(tokens)
	return nil
}
