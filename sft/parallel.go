package sft

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

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

// Two bench-only settings (bench/dist_sft.sh), read from the environment, that test where a
// 2-rank step loses time; neither is for training:
//   - benchNoAllReduceEnv=1 skips the gradient all-reduce: every rank steps on its own gradients
//     (the ranks' weights drift apart, so the weight check is off), but the ranks still meet at
//     the step statistics' all-reduce as before.
//   - benchOffsetEnv=MS makes rank r wait r·MS milliseconds before its step's passes, so the
//     ranks run the same layer at different moments (outside the compute time of the profile).
//   - benchRotateEnv=1 makes rank r run its step's passes rotated by r (rank 1 of 2 starts with
//     its last, smaller pass): the ranks are offset by a pass's length at no idle cost. The sum
//     of a rank's passes then accumulates in another order, so the weights are not the bits of
//     the run without it.
const (
	benchNoAllReduceEnv = "GORSTAR_BENCH_NO_ALLREDUCE"
	benchOffsetEnv      = "GORSTAR_BENCH_RANK_OFFSET_MS"
	benchRotateEnv      = "GORSTAR_BENCH_ROTATE_PASSES"
)

var (
	benchNoAllReduce = os.Getenv(benchNoAllReduceEnv) == "1"
	benchRotate      = os.Getenv(benchRotateEnv) == "1"
	benchOffset      = func() time.Duration {
		ms, _ := strconv.Atoi(os.Getenv(benchOffsetEnv))
		return time.Duration(max(ms, 0)) * time.Millisecond
	}()
)

// offsetPhase is benchOffsetEnv's wait, at the start of a step's passes.
func (t *trainer) offsetPhase() {
	if w := t.o.World; w.Distributed() && benchOffset > 0 {
		time.Sleep(time.Duration(w.MyRank()) * benchOffset)
	}
}

// orderPasses is the order this rank runs its step's passes in: as planned, or (benchRotateEnv)
// rotated by the rank.
func (t *trainer) orderPasses(passes []row) []row {
	w := t.o.World
	if !benchRotate || !w.Distributed() || len(passes) < 2 {
		return passes
	}
	k := w.MyRank() % len(passes)
	return append(slices.Clone(passes[len(passes)-k:]), passes[:len(passes)-k]...)
}

// armOverlap starts the overlapped gradient all-reduce (dist.World.Overlap) before the last pass
// of a step: the buckets its backward completes are summed over the ranks while it runs on, and
// reduceStep sums the rest. The sums are the bits of the all-reduce after the pass.
func (t *trainer) armOverlap(last bool) {
	if w := t.o.World; last && w.Distributed() && w.Overlap && !benchNoAllReduce {
		t.m.OverlapAllReduceGrads(w.Comm)
	}
}

// checkSameWeights stops the run when a rank's weights differ from rank 0's after `done` steps.
func checkSameWeights(m *model.Model, w *dist.World, done int) error {
	if benchNoAllReduce {
		return nil
	}
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
		// The barrier splits waiting for the slowest rank from the all-reduce's own time in the
		// profile, at one small collective a step. Not beside the overlapped all-reduce: its
		// buckets are already in flight, and every rank must issue collectives in the same order.
		if !w.Overlap {
			f.to(&f.p.WaitS)
			if err := w.Comm.Barrier(); err != nil {
				return nil, nil, nil, fmt.Errorf("sft: wait for the ranks: %w", err)
			}
		}
		f.to(&f.p.AllReduceS)
		if !benchNoAllReduce {
			if _, err := t.m.FinishAllReduceGrads(w.Comm); err != nil {
				return nil, nil, nil, fmt.Errorf("sft: %w", err)
			}
			f.p.AllReduceBytes += 4 * int64(t.m.Grads.Size)
		}
		f.to(&f.p.StatsS)
		if err := w.Comm.AllReduceF64(buf); err != nil {
			return nil, nil, nil, fmt.Errorf("sft: all-reduce step statistics: %w", err)
		}
	}
	ss.loss, ss.tokens = buf[0], int(buf[1])
	return buf[2 : 2+n], buf[2+n : 2+2*n], buf[2+2*n:], nil
}
