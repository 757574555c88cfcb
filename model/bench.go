package model

import (
	"context"
	"math/rand/v2"
	"runtime"
	"time"
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
