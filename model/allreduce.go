package model

import (
	"fmt"
	"math"

	"gorstar/dist"
	"gorstar/kernels"
)

// gradBucket is the floats all-reduced per call: large enough that a call's latency is small next
// to its bytes, small enough that the host copy stays a modest buffer.
const gradBucket = 1 << 22

// AllReduceGrads sums the model's gradients over the ranks of c, in buckets of gradBucket floats.
// On the CPU backend MPI reads and writes the gradients where they are; a device's are staged
// through host memory. Every rank then holds the same sum.
func (m *Model) AllReduceGrads(c dist.Comm) error {
	g := m.Grads
	if host := g.All.Floats(); host != nil {
		kernels.Synchronize()
		for off := 0; off < g.Size; off += gradBucket {
			n := min(gradBucket, g.Size-off)
			if err := c.AllReduceF32(host[off : off+n]); err != nil {
				return fmt.Errorf("all-reduce gradients [%d, %d): %w", off, off+n, err)
			}
		}
		return nil
	}
	host := make([]float32, min(gradBucket, g.Size))
	for off := 0; off < g.Size; off += gradBucket {
		n := min(gradBucket, g.Size-off)
		b := g.All.Slice(off, n)
		b.CopyTo(host[:n])
		if err := c.AllReduceF32(host[:n]); err != nil {
			return fmt.Errorf("all-reduce gradients [%d, %d): %w", off, off+n, err)
		}
		b.CopyFrom(host[:n])
	}
	return nil
}

// Hash is an FNV-1a hash of every parameter's bits: equal on two ranks exactly when their weights
// are the same bits.
func (p *ParamSet) Hash() uint64 {
	host := make([]float32, p.Size)
	kernels.Synchronize()
	p.All.CopyTo(host)
	h := uint64(14695981039346656037)
	for _, f := range host {
		h = (h ^ uint64(math.Float32bits(f))) * 1099511628211
	}
	return h
}
