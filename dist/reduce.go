package dist

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
)

// Shard is the part of idx this rank works on: positions Rank, Rank+Size, … — all of idx for a
// world of one. Position, not value, decides, so the split does not depend on what idx holds.
func (w *World) Shard(idx []int) []int {
	if !w.Distributed() {
		return idx
	}
	var mine []int
	for i := w.Rank; i < len(idx); i += w.Size {
		mine = append(mine, idx[i])
	}
	return mine
}

// ShardBalanced is the part of idx this rank works on when the ranks should finish together: in
// order of decreasing cost (ties in the order of idx), each index goes to the rank whose share
// costs least so far (ties to the lower rank), so the ranks' total costs differ by at most the
// cost of one index. The share keeps idx's order. Every rank computes the same split from the
// same idx and costs; all of idx for a world of one.
func (w *World) ShardBalanced(idx []int, cost func(i int) float64) []int {
	if !w.Distributed() {
		return idx
	}
	pos := make([]int, len(idx))
	costs := make([]float64, len(idx))
	for p, i := range idx {
		pos[p], costs[p] = p, cost(i)
	}
	slices.SortStableFunc(pos, func(a, b int) int { return cmp.Compare(costs[b], costs[a]) })
	load := make([]float64, w.Size)
	owner := make([]int, len(idx))
	for _, p := range pos {
		r := 0
		for k := 1; k < w.Size; k++ {
			if load[k] < load[r] {
				r = k
			}
		}
		owner[p] = r
		load[r] += costs[p]
	}
	var mine []int
	for p, i := range idx {
		if owner[p] == w.Rank {
			mine = append(mine, i)
		}
	}
	return mine
}

// SumF64 replaces each value by its sum over the ranks (nothing for a world of one).
func (w *World) SumF64(v ...*float64) error {
	if !w.Distributed() {
		return nil
	}
	buf := make([]float64, len(v))
	for i, p := range v {
		buf[i] = *p
	}
	if err := w.Comm.AllReduceF64(buf); err != nil {
		return err
	}
	for i, p := range v {
		*p = buf[i]
	}
	return nil
}

// SameHash checks that every rank holds the same hash h (of its weights, say) as rank 0; a
// difference names the first rank that differs.
func (w *World) SameHash(h uint64) error {
	if !w.Distributed() {
		return nil
	}
	all, err := w.Comm.AllGather(binary.LittleEndian.AppendUint64(nil, h))
	if err != nil {
		return fmt.Errorf("gather hashes: %w", err)
	}
	root := binary.LittleEndian.Uint64(all)
	for r := 1; r < w.Size; r++ {
		if got := binary.LittleEndian.Uint64(all[8*r:]); got != root {
			return fmt.Errorf("rank %d's hash %016x differs from rank 0's %016x", r, got, root)
		}
	}
	return nil
}
