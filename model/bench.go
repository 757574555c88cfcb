package model

import (
	"context"
	"math/rand/v2"
	"runtime"
	"time"

	"gorstar/kernels"
)

// TrainBench is the result of BenchmarkTrain.
type TrainBench struct {
	Batch, Seq, Steps int
	Seconds           float64   // timed steps only
	StepSeconds       []float64 // each timed step's
	TokensPerSecond   float64
	FirstLoss         float64 // mean token loss of the first step
	LastLoss          float64
}

// BenchmarkTrain times full training steps (ForwardBackward over a B×L batch of random tokens
// with mean-token loss weights, then an AdamW update) after one untimed warm-up step that
// allocates the buffers. It modifies the model's weights.
func BenchmarkTrain(ctx context.Context, m *Model, B, L, steps int, seed uint64) (TrainBench, error) {
	return BenchmarkTrainEach(ctx, m, B, L, steps, seed, nil)
}

// BenchmarkTrainEach is BenchmarkTrain calling between (when not nil; untimed) before each timed
// step and after the last, on the same OS thread: to measure a reference beside every step.
func BenchmarkTrainEach(ctx context.Context, m *Model, B, L, steps int, seed uint64, between func() error) (TrainBench, error) {
	runtime.LockOSThread() // one OpenMP team serves this goroutine (libgomp keeps a team per OS thread)
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(seed, 3))
	b := &Batch{B: B, L: L, IDs: make([]int32, B*L), Weights: make([]float32, B*L)}
	for i := range b.Weights {
		if i%L != 0 {
			b.Weights[i] = 1 / float32(B*(L-1))
		}
	}
	opt := m.NewOptimizer(DefaultAdamW())
	defer opt.Close()
	res := TrainBench{Batch: B, Seq: L, Steps: steps}
	step := func() (float64, error) {
		for i := range b.IDs {
			b.IDs[i] = int32(rng.IntN(m.Config.VocabSize))
		}
		m.ZeroGrads()
		r, err := m.ForwardBackward(b)
		if err != nil {
			return 0, err
		}
		if _, err := opt.Update(1e-4); err != nil {
			return 0, err
		}
		return r.Loss, nil
	}
	if _, err := step(); err != nil {
		return res, err
	}
	for s := 0; s < steps; s++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if between != nil {
			if err := between(); err != nil {
				return res, err
			}
		}
		start := time.Now()
		loss, err := step()
		if err != nil {
			return res, err
		}
		res.StepSeconds = append(res.StepSeconds, time.Since(start).Seconds())
		res.Seconds += res.StepSeconds[s]
		if s == 0 {
			res.FirstLoss = loss
		}
		res.LastLoss = loss
	}
	if between != nil {
		if err := between(); err != nil {
			return res, err
		}
	}
	res.TokensPerSecond = float64(B*L*steps) / res.Seconds
	return res, nil
}

// TrainFLOPsPerToken is the arithmetic of one training step per token of an L-token sequence
// (forward, backward, no recomputation): 6 per weight of every matrix product (the projections,
// the MLP and the lm_head) plus causal attention's scores and weighted sums, 12 × query dim per
// visible key per layer (forward 4, backward 8), at (L+1)/2 visible keys on average.
func (c Config) TrainFLOPsPerToken(L int) float64 {
	C, I, Q, KV := float64(c.HiddenSize), float64(c.IntermediateSize), float64(c.QDim()), float64(c.KVDim())
	perLayer := C*Q + 2*C*KV + Q*C + 3*C*I
	matmul := float64(c.NumHiddenLayers)*perLayer + C*float64(c.VocabSize)
	attention := float64(c.NumHiddenLayers) * 12 * Q * float64(L+1) / 2
	return 6*matmul + attention
}

// SGEMMRef is the machine's SGEMM rate on the model's training shapes for T tokens: the MLP's up
// projection forward ([T,C]·[I,C]ᵀ), its input gradient ([T,I]·[I,C]) and its weight gradient
// ([T,I]ᵀ·[T,C]), on the kernels' threads — the ceiling a training step's rate is read against.
type SGEMMRef struct {
	T, C, I int
	x, w, y kernels.Buf
}

// NewSGEMMRef allocates the reference's operands (random values). Close frees them.
func NewSGEMMRef(c Config, T int) *SGEMMRef {
	r := &SGEMMRef{T: T, C: c.HiddenSize, I: c.IntermediateSize}
	r.x, r.w, r.y = kernels.Alloc(T*r.C), kernels.Alloc(r.I*r.C), kernels.Alloc(T*r.I)
	rng := rand.New(rand.NewPCG(1, 5))
	for _, b := range []kernels.Buf{r.x, r.w, r.y} {
		v := make([]float32, b.Len())
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		b.CopyFrom(v)
	}
	return r
}

// Close frees the operands.
func (r *SGEMMRef) Close() {
	r.x.Free()
	r.w.Free()
	r.y.Free()
}

func (r *SGEMMRef) round() {
	T, C, I, x, w, y := r.T, r.C, r.I, r.x, r.w, r.y
	kernels.SGEMM(false, true, T, I, C, 1, x, C, w, C, 0, y, I)  // y = x wᵀ
	kernels.SGEMM(false, false, T, C, I, 1, y, I, w, C, 0, x, C) // dx = dy w
	kernels.SGEMM(true, false, I, C, T, 1, y, I, x, C, 0, w, C)  // dw = dyᵀ x
}

// Rate runs the three products in turn until at least minTime has passed (after one untimed
// round) and returns GFLOP/s. Call it from one OS thread (the kernels' OpenMP team is per thread).
func (r *SGEMMRef) Rate(ctx context.Context, minTime time.Duration) (float64, error) {
	r.round()
	rounds, start := 0, time.Now()
	for rounds == 0 || time.Since(start) < minTime {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		r.round()
		rounds++
	}
	return 3 * 2 * float64(r.T) * float64(r.C) * float64(r.I) * float64(rounds) / time.Since(start).Seconds() / 1e9, nil
}
