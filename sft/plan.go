package sft

import "math/rand/v2"

// planStep is one optimizer step: its epoch and its examples (indices into the training set).
type planStep struct {
	Epoch    int
	Examples []int
}

// makePlan lists the examples of every optimizer step of the whole run: each epoch is a seeded
// permutation of the training examples (a pure function of seed and epoch, so a resumed run
// rebuilds the same order from its step count alone), cut into steps of batchSize examples, or
// of at least batchTokens tokens when batchTokens > 0. The last step of an epoch may be smaller.
func makePlan(ex []Example, epochs, batchSize, batchTokens int, seed uint64) []planStep {
	var steps []planStep
	for epoch := range epochs {
		order := rand.New(rand.NewPCG(seed, uint64(epoch))).Perm(len(ex))
		var cur []int
		tokens := 0
		for _, i := range order {
			cur = append(cur, i)
			tokens += len(ex[i].IDs)
			if (batchTokens > 0 && tokens >= batchTokens) || (batchTokens == 0 && len(cur) == batchSize) {
				steps = append(steps, planStep{epoch, cur})
				cur, tokens = nil, 0
			}
		}
		if len(cur) > 0 {
			steps = append(steps, planStep{epoch, cur})
		}
	}
	return steps
}

// splitHeldOut moves a seeded share of the examples into a held-out set, keeping at least one
// example for training. The rest keep their order.
func splitHeldOut(ex []Example, fraction float64, seed uint64) (train, held []Example) {
	k := min(int(fraction*float64(len(ex))+0.5), len(ex)-1)
	if k <= 0 {
		return ex, nil
	}
	out := make([]bool, len(ex))
	for _, i := range rand.New(rand.NewPCG(seed, 1<<62)).Perm(len(ex))[:k] {
		out[i] = true
	}
	for i, e := range ex {
		if out[i] {
			held = append(held, e)
		} else {
			train = append(train, e)
		}
	}
	return train, held
}
