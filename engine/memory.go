package engine

import "gorstar/model"

// MemoryBytes estimates the memory of an engine over a float32 model: the weights, the KV cache of
// kvTokens, the buffers of one step of stepTokens and the logits of maxSeqs rows. It is the figure a
// command checks against the memory available before it allocates, since Go cannot recover from a
// failed allocation.
func MemoryBytes(c model.Config, kvTokens, maxSeqs, stepTokens int) int64 {
	qkv := int64(c.NumAttentionHeads+2*c.NumKeyValueHeads) * int64(c.HeadDim)
	perStepToken := 8*int64(c.HiddenSize) + 3*int64(c.IntermediateSize) + 2*qkv
	floats := c.NumParams() + int64(c.KVFloatsPerToken())*int64(kvTokens) + int64(stepTokens)*perStepToken +
		2*int64(maxSeqs)*int64(c.VocabSize)
	return 4 * floats
}
