package engine

import "gorstar/model"

// MemoryBytes estimates the memory of an engine over a model of precision p: the weights (counted
// as float32), the KV cache of kvTokens (Config.KVBytesPerToken: bfloat16 for a bf16 model on the
// CPU), the buffers of one step of stepTokens and the logits of maxSeqs rows. It is the figure a
// command checks against the memory available before it allocates, since Go cannot recover from a
// failed allocation.
func MemoryBytes(c model.Config, p model.Precision, kvTokens, maxSeqs, stepTokens int) int64 {
	qkv := int64(c.NumAttentionHeads+2*c.NumKeyValueHeads) * int64(c.HeadDim)
	perStepToken := 8*int64(c.HiddenSize) + 3*int64(c.IntermediateSize) + 2*qkv
	floats := c.NumParams() + int64(stepTokens)*perStepToken + 2*int64(maxSeqs)*int64(c.VocabSize)
	return 4*floats + int64(c.KVBytesPerToken(p))*int64(kvTokens)
}

// DefaultKVTokens is the KV cache an engine over a model of precision p gets by default: 65536
// tokens, or fewer when that would take over 4 GiB (large models), but at least one full context.
func DefaultKVTokens(c model.Config, p model.Precision) int {
	return max(min(65536, (4<<30)/max(c.KVBytesPerToken(p), 1)), c.MaxPositionEmbeddings, 1)
}
