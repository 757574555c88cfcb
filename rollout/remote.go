package rollout

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"gorstar/chat"
	"gorstar/openai"
	"gorstar/tokenizer"
)

// RemoteBackend runs the policy on OpenAI-compatible servers (vLLM, SGLang, gorstar serve) through
// an openai.Client: each turn is one completion of the prompt and the response so far, sent and
// read back as token ids, on the endpoint the client's KV-aware dispatch picks (a trajectory keeps
// its endpoint, for its prefix cache).
//
// Seeds: every turn asks to continue the trajectory's random stream where the last turn left it
// (openai.Continuation: the request's seed after one draw per token generated so far), which
// gorstar serve honours, so a trajectory there is the in-process engine's token for token. Other
// servers cannot continue a stream across requests: they get, for each later turn, a seed mixed
// from the request's and the turn's number — reproducible, not the engine's tokens after a call.
//
// Stops: the client asks the server to keep a matched stop string and puts back one the server
// cut (openai.Completion.StopString); where token ids come back, they are the turn. A server that
// returns text only, cuts the stop and does not say which stop it was leaves a turn that stopped
// without its end: it is closed with the pause string when a tool call is open in it, else with
// the end-of-turn token — the only two stops a rollout asks for.
type RemoteBackend struct {
	Client *openai.Client
	// Tokenizer encodes what a text-only server's answer lacks (the stop it cut); nil: none is
	// put back beyond what the client restores.
	Tokenizer *tokenizer.Tokenizer
	// Concurrency bounds the completions in flight at once over all endpoints (0: no bound).
	Concurrency int

	sessions atomic.Uint64
	slots    chan struct{}
	once     sync.Once
}

// Start opens one stream per request; nothing is sent until its first Next.
func (b *RemoteBackend) Start(ctx context.Context, reqs []Request) ([]Stream, error) {
	b.once.Do(func() {
		if b.Concurrency > 0 {
			b.slots = make(chan struct{}, b.Concurrency)
		}
	})
	out := make([]Stream, len(reqs))
	for i, r := range reqs {
		out[i] = &remoteStream{b: b, req: r, ids: slices.Clone(r.Prompt),
			session: fmt.Sprintf("rollout-%p-%d", b, b.sessions.Add(1))}
	}
	return out, nil
}

type remoteStream struct {
	b       *RemoteBackend
	req     Request
	ids     []int32 // prompt, then every generated and appended id
	used    int     // response tokens: generated plus appended
	turn    int
	drawn   int // random draws the sequence has taken: one per generated token when sampling
	session string
}

func (s *remoteStream) Next(ctx context.Context) (Turn, error) {
	left := s.req.MaxResponseTokens - s.used
	if left < 1 {
		return Turn{End: EndLength}, nil
	}
	max := left
	if s.req.PauseAfter > 0 {
		max = min(max, s.req.PauseAfter)
	}
	seed := s.req.Sampling.Seed
	if s.turn > 0 {
		seed = mix(seed ^ mix(uint64(s.turn)))
	}
	s.turn++
	creq := openai.Request{Session: s.session, Prompt: s.ids, MaxTokens: max,
		Temperature: s.req.Sampling.Temperature, TopP: s.req.Sampling.TopP, Seed: &seed,
		Continue: &openai.Continuation{Seed: s.req.Sampling.Seed, Skip: s.drawn},
		Stop:     s.req.PauseStrings, StopTokenIDs: s.req.EndTokens,
		// The loop's end tokens decide where a turn ends, as on the engine; the server's own
		// end-of-sequence tokens would end turns the engine goes on with.
		IgnoreEOS: true}
	if err := s.acquire(ctx); err != nil {
		return Turn{}, err
	}
	c, err := s.b.Client.Complete(ctx, creq)
	s.release()
	if err != nil {
		return Turn{}, err
	}
	s.b.closeCutStop(&c, s.req)
	if s.req.Sampling.Temperature > 0 {
		s.drawn += len(c.Tokens)
	}
	t := Turn{Tokens: c.Tokens, LogProbs: c.LogProbs}
	if v, perr := strconv.ParseInt(c.WeightVersion, 10, 64); perr == nil {
		t.WeightVersion = v
	}
	s.ids = append(s.ids, c.Tokens...)
	s.used += len(c.Tokens)
	t.End = remoteEnd(c, s.req, s.used, max == len(c.Tokens) && max < left)
	return t, nil
}

// closeCutStop ends a text-only turn that stopped for a cause the server neither kept in the text
// nor named: with the pause string when a tool call is open in it, else with the end token.
func (b *RemoteBackend) closeCutStop(c *openai.Completion, r Request) {
	if c.Source != openai.FromText || c.FinishReason != "stop" || c.StopString != "" || c.HasStopToken ||
		closedBy(c.Tokens, r.EndTokens) || b.Tokenizer == nil {
		return
	}
	open := strings.LastIndex(c.Text, chat.ToolCallOpen) > strings.LastIndex(c.Text, chat.ToolCallClose)
	switch {
	case open && slices.Contains(r.PauseStrings, chat.ToolCallClose):
		c.Text += chat.ToolCallClose
		c.Tokens = b.Tokenizer.EncodeWithSpecials(c.Text, true)
	case len(r.EndTokens) > 0:
		c.Tokens = append(c.Tokens, r.EndTokens[0])
		c.Text += b.Tokenizer.Decode(r.EndTokens[:1])
	default:
		return
	}
	c.StopRestored = true
}

// remoteEnd maps a completion's finish to the turn's end: an end token the model wrote closes
// the turn; another stop is a pause string; a length stop is the budget (or PauseAfter).
func remoteEnd(c openai.Completion, r Request, used int, pausedAfter bool) TurnEnd {
	switch {
	case closedBy(c.Tokens, r.EndTokens):
		return EndClosed
	case c.FinishReason == "stop":
		return EndPaused
	case pausedAfter:
		return EndPaused
	case used >= r.MaxResponseTokens:
		return EndLength
	default:
		// The server stopped short of the budget for its own reason (its context is full).
		return EndLength
	}
}

func (s *remoteStream) acquire(ctx context.Context) error {
	if s.b.slots == nil {
		return nil
	}
	select {
	case s.b.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *remoteStream) release() {
	if s.b.slots != nil {
		<-s.b.slots
	}
}

func (s *remoteStream) Append(ctx context.Context, ids []int32) error {
	if s.used+len(ids) >= s.req.MaxResponseTokens {
		return fmt.Errorf("append %d tokens: the response budget of %d has %d left", len(ids), s.req.MaxResponseTokens, s.req.MaxResponseTokens-s.used)
	}
	s.ids = append(s.ids, ids...)
	s.used += len(ids)
	return nil
}

func (s *remoteStream) Close() { s.b.Client.Forget(s.session) }
