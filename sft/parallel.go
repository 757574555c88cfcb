package sft

import (
	"fmt"

	"gorstar/dist"
	"gorstar/model"
)

// Data parallelism. Every rank holds the whole data set and builds the same plan; an optimizer
// step's examples are split over the ranks by their cost (see shard), each rank weighs its tokens
// by 1 / the whole step's assistant tokens, and the gradients are summed over the ranks before the
// update. So every rank takes the same AdamW step on the same
// sum, and the plan, the batch and the checkpoint do not depend on the world size: a run resumes
// at any size. Only the order of the floating-point sums does (a reduction over ranks, not one
// accumulation), so runs at different sizes agree to rounding, and a run at one size gives the
// same bits every time.

// shard is this rank's part of a step's examples: split so that every rank's forward and backward
// cost about the same (dist.World.ShardBalanced), since the gradient all-reduce waits for the
// slowest. An example of n tokens costs n·P multiply-adds in the linear layers (P parameters) and
// n²·q·layers in attention (every query meets the keys before it, q the query width, for scores
// and values).
func (t *trainer) shard(ex []Example, step []int) []int {
	c := t.m.Config
	p, attn := float64(c.NumParams()), float64(c.QDim()*c.NumHiddenLayers)
	return t.o.World.ShardBalanced(step, func(i int) float64 {
		n := float64(len(ex[i].IDs))
		return n*p + n*n*attn
	})
}

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

// reduceStep sums the step's gradients, loss and tokens over the ranks, and returns every rank's
// forward/backward seconds, tokens and padded tokens of the step (for the profile).
func (t *trainer) reduceStep(ss *stepStats) (compute, tokens, padded []float64, err error) {
	w, f := t.o.World, t.prof
	n, me := w.Ranks(), w.MyRank()
	// loss, tokens, then per rank its compute seconds, tokens and padded tokens in its own slots:
	// one sum gathers them all.
	buf := make([]float64, 2+3*n)
	buf[0], buf[1] = ss.loss, float64(ss.tokens)
	buf[2+me], buf[2+n+me], buf[2+2*n+me] = f.computeNow, float64(ss.tokens), float64(f.paddedNow)
	if w.Distributed() {
		f.to(&f.p.AllReduceS)
		if err := t.m.AllReduceGrads(w.Comm); err != nil {
			return nil, nil, nil, fmt.Errorf("sft: %w", err)
		}
		f.p.AllReduceBytes += 4 * int64(t.m.Grads.Size)
		f.to(&f.p.StatsS)
		if err := w.Comm.AllReduceF64(buf); err != nil {
			return nil, nil, nil, fmt.Errorf("sft: all-reduce step statistics: %w", err)
		}
	}
	ss.loss, ss.tokens = buf[0], int(buf[1])
	return buf[2 : 2+n], buf[2+n : 2+2*n], buf[2+2*n:], nil
}
