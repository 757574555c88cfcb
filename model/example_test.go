package model_test

import (
	"fmt"

	"gorstar/model"
)

// A training step on a fresh tiny model. kernels.Init (or kernels.Setup) must have run first; the
// test binary's TestMain does it. model.Load(dir) loads a Hugging Face directory instead of New.
func ExampleModel_ForwardBackward() {
	cfg, err := model.Preset("tiny", 0)
	if err != nil {
		panic(err)
	}
	m, err := model.New(cfg, 1)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	m.Recompute = 2 // optional: recompute layers 0–1 in backward, for memory
	opt := m.NewOptimizer(model.DefaultAdamW())

	const B, L = 2, 8
	ids := make([]int32, B*L)
	weights := make([]float32, B*L)
	for i := range ids {
		ids[i] = int32(i % 50)
		if i%L != 0 { // token 0 of a row has no prediction
			weights[i] = 1.0 / float32(B*(L-1)) // the mean loss over the predicted tokens
		}
	}
	// SFT: the weights are known up front, so one pass; the lm_head and cross-entropy run once.
	m.ZeroGrads()
	res, err := m.ForwardBackward(&model.Batch{B: B, L: L, IDs: ids, Weights: weights})
	if err != nil {
		panic(err)
	}
	stats, err := opt.Update(1e-3) // global-norm clipping, then AdamW
	if err != nil {
		panic(err)
	}
	fmt.Println(len(res.LogProbs), res.Loss > 0, stats.GradNorm > 0)
	// Output: 16 true true
}

// RL: log-probabilities first, loss weights computed from them, then the backward pass without a
// second forward of the layers. The loss is −Σ w·logprob, so w is −dL/dlogprob.
func ExampleModel_Backward() {
	cfg, _ := model.Preset("tiny", 0)
	m, err := model.New(cfg, 1)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	const B, L = 1, 6
	ids := []int32{1, 2, 3, 4, 5, 6}
	m.ZeroGrads()
	res, err := m.Forward(&model.Batch{B: B, L: L, IDs: ids})
	if err != nil {
		panic(err)
	}
	advantage := float32(0.5)
	weights := make([]float32, B*L)
	for i := 1; i < L; i++ {
		weights[i] = -advantage // a policy gradient: −A per sampled token
	}
	if err := m.Backward(weights); err != nil {
		panic(err)
	}
	fmt.Println(res.LogProbs[0], res.LogProbs[1] < 0)
	// Output: 0 true
}

// Packing sequences of varying length into rows of at most L tokens: each sequence is then a
// document of its own (attention, RoPE positions and the loss stay inside it), with no compute on
// padding.
func ExamplePack() {
	lengths := []int{300, 200, 100}
	rows, err := model.Pack(lengths, 512) // first fit, in the order given
	if err != nil {
		panic(err)
	}
	ids := make([][]int32, len(lengths))
	for i, n := range lengths {
		ids[i] = make([]int32, n)
	}
	b := model.PackedBatch(rows, ids, nil, 512, 0) // then m.ForwardBackward(b)
	fmt.Println(rows, b.B, b.Docs)
	// Output: [[0 1] [2]] 2 [[300 200] [100]]
}
