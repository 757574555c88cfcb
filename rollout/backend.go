package rollout

import (
	"context"
	"slices"
)

// Backend is the policy a Loop samples from: the in-process engine (EngineBackend) or
// OpenAI-compatible servers (RemoteBackend). It deals in token ids only, so a trajectory is never re-tokenized.
type Backend interface {
	// Start begins one sequence per request. The requests of a group come in one call, so a
	// backend can prefill their shared prompt once. The streams are in the requests' order.
	Start(ctx context.Context, reqs []Request) ([]Stream, error)
}

// Request is one sequence to generate.
type Request struct {
	Prompt []int32
	// MaxResponseTokens is the response budget: generated plus appended tokens after the prompt. A turn that
	// reaches it ends with EndLength.
	MaxResponseTokens int
	Sampling          Sampling
	// EndTokens end a turn that the model closed (the end-of-turn token, part of its output);
	// PauseStrings end a turn the model left open (</tool_call>). Either way the sequence can go on
	// after Append: the loop, not the backend, decides that a trajectory is over.
	EndTokens    []int32
	PauseStrings []string
	// PauseAfter ends every turn after this many generated tokens (0: off). Bench uses it to
	// decide where a random model's turns end.
	PauseAfter int
}

// Sampling is how tokens are drawn. The same seed gives the same tokens.
type Sampling struct {
	Temperature float64
	TopP        float64
	Seed        uint64
}

// Stream is one sequence, turn by turn.
type Stream interface {
	// Next generates the rest of the current turn.
	Next(ctx context.Context) (Turn, error)
	// Append adds ids the model did not write (the end of its turn, the tool turn and the next
	// generation prompt) after a turn that ended with EndPaused or EndClosed; the next Next continues after them.
	Append(ctx context.Context, ids []int32) error
	// Close ends the sequence and frees what it holds; safe to call more than once.
	Close()
}

// Turn is what one assistant turn generated.
type Turn struct {
	Tokens   []int32
	LogProbs []float32 // log p(token) under the policy at temperature 1
	End      TurnEnd
	// WeightVersion identifies the weights that generated the turn.
	WeightVersion int64
}

// TurnEnd says why a turn ended.
type TurnEnd uint8

const (
	EndPaused TurnEnd = iota // a pause string (a tool call) or PauseAfter: the turn is still open
	EndClosed                // an end token: the model closed its turn
	EndLength                // the response budget is spent: the sequence cannot go on
)

// closedBy says a turn's last token is one of the end tokens: the model closed the turn itself,
// even when that token was the last its budget allowed. Both backends read a turn's end this way.
func closedBy(tokens, end []int32) bool {
	n := len(tokens)
	return n > 0 && slices.Contains(end, tokens[n-1])
}
