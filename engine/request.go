package engine

import "fmt"

// Request is one sequence to generate.
type Request struct {
	Prompt []int32 // token ids, at least one
	// MaxTokens bounds the tokens the model generates over the whole sequence, all turns together
	// (appended tokens do not count). 0 means: until the capacity is full.
	MaxTokens int
	// Capacity is the KV cache reserved for the sequence: prompt, generated and appended tokens
	// together. It is held from admission to the end, so appends never wait for memory. 0 means
	// len(Prompt) + MaxTokens.
	Capacity int
	Sampling Sampling

	// StopTokens and StopStrings end the sequence (reason "stop") once generated; the stopping token
	// is part of the output. Stop strings are matched on the decoded text of the generated tokens
	// and need the engine's tokenizer.
	StopTokens  []int32
	StopStrings []string
	// TopLogProbs asks for the log-probabilities of the most likely tokens at each generated
	// position (Event.Top, at most MaxTopLogProbs).
	TopLogProbs int
	// PauseTokens and PauseStrings pause the sequence instead (a tool call): it keeps its cache and
	// waits for Append and Resume, or for Cancel.
	PauseTokens  []int32
	PauseStrings []string
	// PauseAfter pauses the sequence once it has generated this many tokens since it started or was
	// last resumed (0: never): a cap on one turn. Benchmarks use it to end turns where they choose.
	PauseAfter int
}

// check validates a request and fills its default capacity. Errors wrap ErrRequest.
func (e *Engine) check(req *Request) error {
	c := e.m.Config
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrRequest, fmt.Sprintf(format, args...))
	}
	if len(req.Prompt) == 0 {
		return bad("the prompt is empty")
	}
	for i, id := range req.Prompt {
		if id < 0 || int(id) >= c.VocabSize {
			return bad("prompt token %d is id %d, outside the vocabulary [0, %d)", i, id, c.VocabSize)
		}
	}
	if req.TopLogProbs < 0 || req.TopLogProbs > MaxTopLogProbs {
		return bad("top logprobs: must be between 0 and %d, got %d", MaxTopLogProbs, req.TopLogProbs)
	}
	if req.MaxTokens < 0 {
		return bad("max_tokens: must be ≥ 0, got %d", req.MaxTokens)
	}
	if req.PauseAfter < 0 {
		return bad("pause after: must be ≥ 0, got %d", req.PauseAfter)
	}
	if err := req.Sampling.Validate(); err != nil {
		return bad("%v", err)
	}
	if req.Capacity == 0 {
		if req.MaxTokens == 0 {
			req.Capacity = min(e.opts.MaxContext, e.opts.KVTokens)
		} else {
			req.Capacity = len(req.Prompt) + req.MaxTokens
		}
	}
	switch {
	case len(req.Prompt) >= e.opts.MaxContext:
		return bad("the prompt has %d tokens; the context holds %d with at least one to generate",
			len(req.Prompt), e.opts.MaxContext)
	case req.Capacity <= len(req.Prompt):
		return bad("capacity %d leaves no room to generate after a %d-token prompt", req.Capacity, len(req.Prompt))
	case req.Capacity > e.opts.MaxContext:
		return bad("the prompt (%d tokens) plus max_tokens (%d) is %d tokens, over the context of %d",
			len(req.Prompt), req.Capacity-len(req.Prompt), req.Capacity, e.opts.MaxContext)
	case req.Capacity > e.opts.KVTokens:
		return bad("the sequence needs %d tokens of KV cache, more than the engine's %d", req.Capacity, e.opts.KVTokens)
	}
	if len(req.StopStrings)+len(req.PauseStrings) > 0 && e.opts.Tokenizer == nil {
		return bad("stop strings need a tokenizer and the engine has none")
	}
	for _, list := range [][]int32{req.StopTokens, req.PauseTokens} {
		for _, id := range list {
			if id < 0 || int(id) >= c.VocabSize {
				return bad("stop token id %d is outside the vocabulary [0, %d)", id, c.VocabSize)
			}
		}
	}
	for _, s := range append(append([]string(nil), req.StopStrings...), req.PauseStrings...) {
		if s == "" {
			return bad("a stop string is empty")
		}
	}
	return nil
}
