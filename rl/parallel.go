package rl

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"gorstar/dist"
	"gorstar/internal/usererr"
	"gorstar/model"
	"gorstar/rollout"
)

// Data parallelism. Under a launcher every rank draws the same prompts; each rolls out the
// prompts whose index in the step is its rank modulo the world size (a group stays on one rank, so
// RoC sees it whole), and the trajectories are gathered in the order one process returns them
// (problem by problem, sample by sample). From there every rank holds the same step: RoC and the
// mini-batch split draw from the same random stream, so they agree without talking. Each
// mini-batch's sequences are split over the ranks by position; the old log-probabilities, the
// loss and the gradients of a rank's share are computed there, normalized by the whole
// mini-batch's tokens, and the gradients summed before one identical AdamW step per rank. Every
// sample's seed depends on its problem and sample only, so the trajectories are one process's;
// the weights differ from one process's by the order of the floating-point sums.

// weightCheckEvery is how often (in steps) the ranks compare a hash of their weights; also at the
// start and the end.
const weightCheckEvery = 10

// checkWorld refuses what a data-parallel run does not support.
func checkWorld(o Options) error {
	if o.World.Distributed() && len(o.Rollout.Endpoints) > 0 {
		return usererr.New("rl: remote rollouts (rollout.endpoints) under a launcher (%d ranks) are not supported: run one trainer process, or roll out on the native engine in every rank", o.World.Size)
	}
	return nil
}

// shareLoop restricts a rollout to this rank's problems; gatherLoop then merges every rank's.
func shareLoop(w *dist.World, o *rollout.Options) {
	if !w.Distributed() {
		return
	}
	pending := o.Pending
	o.Pending = func(i, j int) bool {
		return i%w.Size == w.Rank && (pending == nil || pending(i, j))
	}
}

// gatherLoop returns every rank's trajectories, in order of problem and sample.
func gatherLoop(w *dist.World, mine []rollout.Trajectory) ([]rollout.Trajectory, error) {
	if !w.Distributed() {
		return mine, nil
	}
	js, err := json.Marshal(mine)
	if err != nil {
		return nil, err
	}
	parts, err := dist.GatherBytes(w.Comm, js)
	if err != nil {
		return nil, fmt.Errorf("rl: gather trajectories: %w", err)
	}
	var all []rollout.Trajectory
	for r, part := range parts {
		var trajs []rollout.Trajectory
		if err := json.Unmarshal(part, &trajs); err != nil {
			return nil, fmt.Errorf("rl: trajectories of rank %d: %w", r, err)
		}
		all = append(all, trajs...)
	}
	slices.SortStableFunc(all, func(a, b rollout.Trajectory) int {
		return cmp.Or(cmp.Compare(a.ProblemIndex, b.ProblemIndex), cmp.Compare(a.Sample, b.Sample))
	})
	return all, nil
}

// everyRank reports whether ok holds on every rank (a collective).
func everyRank(w *dist.World, ok bool) (bool, error) {
	if !w.Distributed() {
		return ok, nil
	}
	v := []float64{0}
	if !ok {
		v[0] = 1
	}
	if err := w.Comm.AllReduceF64(v); err != nil {
		return false, fmt.Errorf("rl: agree across ranks: %w", err)
	}
	return v[0] == 0, nil
}

// maxOver is the largest of every rank's v.
func maxOver(w *dist.World, v float64) (float64, error) {
	if !w.Distributed() {
		return v, nil
	}
	all, err := w.Comm.AllGather(binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)))
	if err != nil {
		return 0, fmt.Errorf("rl: gather maxima: %w", err)
	}
	for r := range w.Size {
		v = max(v, math.Float64frombits(binary.LittleEndian.Uint64(all[8*r:])))
	}
	return v, nil
}

// checkSameWeights stops the run when a rank's weights differ from rank 0's after `step` steps.
func (t *trainer) checkSameWeights(step int) error {
	w := t.o.World
	if !w.Distributed() {
		return nil
	}
	var h uint64
	if err := t.withModel(context.Background(), func(m *model.Model) error { h = m.Params.Hash(); return nil }); err != nil {
		return err
	}
	if err := w.SameHash(h); err != nil {
		return fmt.Errorf("rl: weights after step %d: %w: the ranks have diverged", step, err)
	}
	return nil
}
