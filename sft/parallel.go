package sft

import (
	"encoding/binary"
	"fmt"
	"math"

	"gorstar/dist"
	"gorstar/kernels"
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

// gradBucket is the floats all-reduced per call: large enough that a call's latency is small
// next to its bytes, small enough that the host copy stays in cache-friendly pieces.
const gradBucket = 1 << 22

// weightCheckEvery is how often (in steps) the ranks compare a hash of their weights; also at the
// start and at the last step. A mismatch stops the run: the ranks' models have drifted apart.
const weightCheckEvery = 50

// shard is the part of a step's examples this rank trains on.
func shard(step []int, w *dist.World) []int {
	if !w.Distributed() {
		return step
	}
	var mine []int
	for i := w.Rank; i < len(step); i += w.Size {
		mine = append(mine, step[i])
	}
	return mine
}

// allReduceGrads sums the model's gradients over the ranks, in buckets of gradBucket floats.
func allReduceGrads(m *model.Model, w *dist.World) error {
	if !w.Distributed() {
		return nil
	}
	g := m.Grads
	host := make([]float32, min(gradBucket, g.Size))
	for off := 0; off < g.Size; off += gradBucket {
		n := min(gradBucket, g.Size-off)
		b := g.All.Slice(off, n)
		b.CopyTo(host[:n])
		if err := w.Comm.AllReduceF32(host[:n]); err != nil {
			return fmt.Errorf("sft: all-reduce gradients [%d, %d): %w", off, off+n, err)
		}
		b.CopyFrom(host[:n])
	}
	return nil
}

// allReduceSums sums float64 statistics (loss, tokens) over the ranks in place.
func allReduceSums(w *dist.World, v ...*float64) error {
	if !w.Distributed() {
		return nil
	}
	buf := make([]float64, len(v))
	for i, p := range v {
		buf[i] = *p
	}
	if err := w.Comm.AllReduceF64(buf); err != nil {
		return fmt.Errorf("sft: all-reduce step statistics: %w", err)
	}
	for i, p := range v {
		*p = buf[i]
	}
	return nil
}

// weightsHash is a hash of every parameter's bits, to compare across ranks.
func weightsHash(p *model.ParamSet) uint64 {
	host := make([]float32, p.Size)
	kernels.Synchronize()
	p.All.CopyTo(host)
	h := uint64(14695981039346656037)
	for _, f := range host {
		h = (h ^ uint64(math.Float32bits(f))) * 1099511628211
	}
	return h
}

// checkSameWeights stops the run when a rank's weights differ from rank 0's after `done` steps.
func checkSameWeights(m *model.Model, w *dist.World, done int) error {
	if !w.Distributed() {
		return nil
	}
	mine := binary.LittleEndian.AppendUint64(nil, weightsHash(m.Params))
	all, err := w.Comm.AllGather(mine)
	if err != nil {
		return fmt.Errorf("sft: gather weight hashes at step %d: %w", done, err)
	}
	root := binary.LittleEndian.Uint64(all)
	for r := 1; r < w.Size; r++ {
		if h := binary.LittleEndian.Uint64(all[8*r:]); h != root {
			return fmt.Errorf("sft: after step %d rank %d's weights differ from rank 0's (hash %016x, rank 0 %016x): the ranks have diverged", done, r, h, root)
		}
	}
	return nil
}

// reduceStep sums the step's gradients, loss and tokens over the ranks.
func (t *trainer) reduceStep(ss *stepStats) error {
	if !t.o.World.Distributed() {
		return nil
	}
	if err := allReduceGrads(t.m, t.o.World); err != nil {
		return err
	}
	tokens := float64(ss.tokens)
	if err := allReduceSums(t.o.World, &ss.loss, &tokens); err != nil {
		return err
	}
	ss.tokens = int(tokens)
	return nil
}
