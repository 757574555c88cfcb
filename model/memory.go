package model

// TrainBytes estimates the memory of a training step on batch×seq tokens in float32: the weights
// with their gradients and AdamW moments, the activations kept for backward (generously, every
// layer's), and a chunk of lossChunk tokens' logits (0 or more than the tokens: all of them). It
// is the figure a command checks against the memory available before it allocates, since Go
// cannot recover from a failed allocation.
func TrainBytes(c Config, batch, seq, lossChunk int) int64 {
	params := c.NumParams()
	tokens := int64(batch) * int64(seq)
	qkv := int64(c.NumAttentionHeads+2*c.NumKeyValueHeads) * int64(c.HeadDim)
	perTokenLayer := 12*int64(c.HiddenSize) + 4*int64(c.IntermediateSize) + 2*qkv
	chunk := int64(lossChunk)
	if chunk <= 0 || chunk > tokens {
		chunk = tokens
	}
	floats := 4*params + tokens*perTokenLayer*int64(c.NumHiddenLayers) + 2*chunk*int64(c.VocabSize) + 4*tokens*int64(c.HiddenSize)
	return 4 * floats
}
