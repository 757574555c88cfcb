// Package engine generates text with gorstar's models: continuous batching over a per-sequence
// KV cache, sampling (temperature, top-k, top-p, per-sequence seeds), stop and pause conditions,
// and the log-probabilities of the sampled tokens as the training forward computes them.
//
// One goroutine owns the model. Each step it feeds every running sequence's next token (and
// chunks of new prompts or appended tool responses, up to Options.StepTokens) through the model
// as one batch, samples the sequences that are ready, and admits waiting ones while their KV
// capacity fits the budget — nothing is ever evicted, so a sequence that is admitted finishes.
//
// The rollout loop of agentic RL runs on top: a request pauses on `</tool_call>` (PauseStrings),
// the caller runs the tool, appends the response tokens (Sequence.Append) and resumes
// (Sequence.Resume); the prefix stays in the cache and is never recomputed.
package engine
