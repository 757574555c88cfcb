package engine

import (
	"slices"
	"testing"

	"gorstar/internal/testmodel"
)

// A request holding a sequence's prompt and its first k tokens, with the same seed and SkipDraws
// k, samples the rest of that sequence: what a server needs to continue a trajectory across
// requests. Without the skip it samples other tokens.
func TestSkipDrawsContinuesTheStream(t *testing.T) {
	m, _ := testmodel.Model(t)
	e := newEngine(t, m, Options{MaxSeqs: 4, StepTokens: 64})
	samp := Sampling{Temperature: 1.1, TopP: 0.9, Seed: seed(17)}
	whole := run(t, e, []Request{{Prompt: prompt(7, 2), MaxTokens: 30, Sampling: samp}})[0].Tokens
	k := 11
	cont := samp
	cont.SkipDraws = uint64(k)
	rest := run(t, e, []Request{{Prompt: append(prompt(7, 2), whole[:k]...), MaxTokens: 30 - k, Sampling: cont}})[0].Tokens
	if !slices.Equal(rest, whole[k:]) {
		t.Errorf("continued %v, want %v", rest, whole[k:])
	}
	fresh := run(t, e, []Request{{Prompt: append(prompt(7, 2), whole[:k]...), MaxTokens: 30 - k, Sampling: samp}})[0].Tokens
	if slices.Equal(fresh, whole[k:]) {
		t.Errorf("without SkipDraws the continuation drew the same tokens: the test shows nothing")
	}
}
