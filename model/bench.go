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
	Seconds           float64 // timed steps only
	TokensPerSecond   float64
	FirstLoss         float64 // mean token loss of the first step
	LastLoss          float64
}

// BenchmarkTrain times full training steps (ForwardBackward over a B×L batch of random tokens
// with mean-token loss weights, then an AdamW update) after one untimed warm-up step that
// allocates the buffers. It modifies the model's weights.
func BenchmarkTrain(ctx context.Context, m *Model, B, L, steps int, seed uint64) (TrainBench, error) {
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
	start := time.Now()
	for s := 0; s < steps; s++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		loss, err := step()
		if err != nil {
			return res, err
		}
		if s == 0 {
			res.FirstLoss = loss
		}
		res.LastLoss = loss
	}
	res.Seconds = time.Since(start).Seconds()
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

// SGEMMRate measures the machine's SGEMM rate on the model's training shapes for T tokens before
// and after between runs (a machine's speed drifts; the training step measured between them is
// read against both): the MLP's up projection forward ([T,C]·[I,C]ᵀ), its input gradient
// ([T,I]·[I,C]) and its weight gradient ([T,I]ᵀ·[T,C]), in turn until at least minTime has passed
// (after one untimed round), on the kernels' threads. It returns GFLOP/s: the ceiling a training
// step's rate is read against.
func SGEMMRate(ctx context.Context, c Config, T int, minTime time.Duration, between func() error) (before, after float64, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	C, I := c.HiddenSize, c.IntermediateSize
	x, w, y := kernels.Alloc(T*C), kernels.Alloc(I*C), kernels.Alloc(T*I)
	defer x.Free()
	defer w.Free()
	defer y.Free()
	rng := rand.New(rand.NewPCG(1, 5))
	for _, b := range []kernels.Buf{x, w, y} {
		v := make([]float32, b.Len())
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		b.CopyFrom(v)
	}
	round := func() {
		kernels.SGEMM(false, true, T, I, C, 1, x, C, w, C, 0, y, I)  // y = x wᵀ
		kernels.SGEMM(false, false, T, C, I, 1, y, I, w, C, 0, x, C) // dx = dy w
		kernels.SGEMM(true, false, I, C, T, 1, y, I, x, C, 0, w, C)  // dw = dyᵀ x
	}
	rate := func() (float64, error) {
		round()
		rounds, start := 0, time.Now()
		for rounds == 0 || time.Since(start) < minTime {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			round()
			rounds++
		}
		return 3 * 2 * float64(T) * float64(C) * float64(I) * float64(rounds) / time.Since(start).Seconds() / 1e9, nil
	}
	if before, err = rate(); err != nil {
		return 0, 0, err
	}
	if err = between(); err != nil {
		return 0, 0, err
	}
	after, err = rate()
	return before, after, err
}
