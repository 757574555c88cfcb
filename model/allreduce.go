package model

import (
	"fmt"
	"math"

	"gorstar/dist"
	"gorstar/kernels"
)

// gradBucket is the floats all-reduced per call: large enough that a call's latency is small next
// to its bytes, small enough that the host copy stays a modest buffer.
var gradBucket = 1 << 22 // a variable for the tests only

// gradBuckets is the number of all-reduce calls for size floats.
func gradBuckets(size int) int { return (size + gradBucket - 1) / gradBucket }

// DeviceComm is a dist.Comm that also sums float32 buffers in device memory over the ranks, in
// place (gpu.CollectiveComm: NCCL or RCCL between the ranks' GPUs). AllReduceGrads hands it the
// gradients of a model on a GPU instead of staging them through host memory.
type DeviceComm interface {
	dist.Comm
	AllReduceDeviceF32(b kernels.Buf) error
}

// AllReduceGrads sums the model's gradients over the ranks of c, in buckets of gradBucket floats.
// On the CPU backend MPI reads and writes the gradients where they are; a device's go to c in
// place when c is a DeviceComm, else through host memory. Every rank then holds the same sum.
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
	return m.deviceAllReduce(c)
}

// deviceAllReduce is AllReduceGrads for gradients that are not in host memory: in place through a
// DeviceComm, else each bucket copied to the host, reduced there and copied back.
func (m *Model) deviceAllReduce(c dist.Comm) error {
	g := m.Grads
	dc, direct := c.(DeviceComm)
	var host []float32
	if !direct {
		host = make([]float32, min(gradBucket, g.Size))
	}
	for off := 0; off < g.Size; off += gradBucket {
		n := min(gradBucket, g.Size-off)
		b := g.All.Slice(off, n)
		var err error
		if direct {
			err = dc.AllReduceDeviceF32(b)
		} else {
			b.CopyTo(host[:n])
			if err = c.AllReduceF32(host[:n]); err == nil {
				b.CopyFrom(host[:n])
			}
		}
		if err != nil {
			return fmt.Errorf("all-reduce gradients [%d, %d): %w", off, off+n, err)
		}
	}
	return nil
}

// Overlapped all-reduce. The gradients are one buffer: the embedding, the layers' matrices in
// layer order, lm_head, then the vectors (norms, biases) of every layer and the final norm (see
// paramLayout). The backward pass finishes layers last to first, so once layer i is done the
// matrices from layer i's first to lm_head's end hold their final sums; a bucket inside that span
// is all-reduced from then on, by a goroutine that hands the buckets one at a time to c (MPI's
// one thread, dist.mpiComm), while the backward of the layers below runs. The rest (the vectors'
// tail and the embedding, final only at the end) goes when the pass is over. The buckets are
// AllReduceGrads' buckets, each reduced by one call with the same count, so the sums are its bits;
// every rank issues them in the same order (the layout's), as MPI requires of collectives.

// gradOverlap is an armed overlapped all-reduce.
type gradOverlap struct {
	c      dist.Comm
	host   []float32
	final  int    // end of the span [starts[i], final) that holds final sums after layer i
	starts []int  // starts[i]: the offset of layer i's first matrix
	sent   []bool // bucket k handed to the goroutine
	queue  chan int
	done   chan error
	acked  chan struct{} // with overlapWaits, one receive per bucket sent: it has been reduced
	// Early counts the buckets handed over before the backward pass ended.
	early int
}

// overlapWaits makes gradsReady wait until the buckets it sent are reduced (tests only: a bucket
// sent before its gradients are final then changes the sums on every run, not only when the
// backward pass outruns MPI).
var overlapWaits = false

// OverlapAllReduceGrads arms the next ForwardBackward to all-reduce gradient buckets over c as its
// backward pass completes them; FinishAllReduceGrads then reduces the rest and waits. Arm it for
// the last pass of a step only: the buckets are summed once, so gradients that a later pass would
// add to must not be sent yet. Gradients off the host are all-reduced at the finish, as
// AllReduceGrads does.
func (m *Model) OverlapAllReduceGrads(c dist.Comm) {
	if m.Grads == nil {
		m.ZeroGrads()
	}
	g := m.Grads
	o := &gradOverlap{c: c, host: g.All.Floats()}
	m.overlap = o
	if o.host == nil {
		return
	}
	kernels.Synchronize()
	nL := m.Config.NumHiddenLayers
	o.starts = make([]int, nL)
	o.final = g.Decayed
	for i := range nL {
		o.starts[i] = g.Tensor(layerName(i, nameQ)).Offset
	}
	o.sent = make([]bool, gradBuckets(g.Size))
	o.queue, o.done = make(chan int, len(o.sent)), make(chan error, 1)
	if overlapWaits {
		o.acked = make(chan struct{}, len(o.sent))
	}
	go func() {
		var err error
		for k := range o.queue {
			if err != nil {
				continue
			}
			off := k * gradBucket
			n := min(gradBucket, len(o.host)-off)
			if e := c.AllReduceF32(o.host[off : off+n]); e != nil {
				err = fmt.Errorf("all-reduce gradients [%d, %d): %w", off, off+n, e)
			}
			if o.acked != nil {
				o.acked <- struct{}{}
			}
		}
		o.done <- err
	}()
}

// gradsReady tells an armed overlapped all-reduce that layer i's backward is done (backwardLayers
// calls it).
func (m *Model) gradsReady(i int) {
	o := m.overlap
	if o == nil || o.host == nil {
		return
	}
	kernels.Synchronize()
	for k := len(o.sent) - 1; k >= 0; k-- {
		off := k * gradBucket
		if o.sent[k] || off < o.starts[i] || min(off+gradBucket, len(o.host)) > o.final {
			continue
		}
		o.sent[k] = true
		o.early++
		o.queue <- k
		if o.acked != nil {
			<-o.acked
		}
	}
}

// FinishAllReduceGrads all-reduces what the armed overlapped all-reduce has not sent yet, waits
// for every bucket and disarms it; it returns the number of buckets sent during the backward
// pass. Without OverlapAllReduceGrads it is AllReduceGrads.
func (m *Model) FinishAllReduceGrads(c dist.Comm) (early int, err error) {
	o := m.overlap
	m.overlap = nil
	if o == nil {
		return 0, m.AllReduceGrads(c)
	}
	if o.host == nil {
		return 0, m.deviceAllReduce(o.c)
	}
	kernels.Synchronize()
	for k := len(o.sent) - 1; k >= 0; k-- {
		if !o.sent[k] {
			o.queue <- k
		}
	}
	close(o.queue)
	return o.early, <-o.done
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
