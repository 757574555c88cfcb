package dist

import (
	"encoding/binary"
	"fmt"
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
