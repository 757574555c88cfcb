package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrNoTokenIDs is the answer of a server that returns text only, to a client without a
// tokenizer to read it (training: it needs the ids and logprobs the policy sampled).
var ErrNoTokenIDs = errors.New("the server returned no token ids (vLLM returns them with return_token_ids from 0.10.2, " +
	"or run with --return-tokens-as-token-ids; SGLang's OpenAI API does not) and the client has no tokenizer to read its text")

// Request is one completion of a prompt given as token ids.
type Request struct {
	// Session keeps the requests of one trajectory on one endpoint while it is up (its prefix
	// cache); empty: each request is dispatched on its own.
	Session     string
	Prompt      []int32
	MaxTokens   int
	Temperature float64 // 0 is greedy
	TopP        float64 // 0 means 1
	TopK        int     // 0: off
	Seed        *uint64
	// Continue, when set, asks gorstar serve to draw from the random stream of Continue.Seed
	// after Continue.Skip draws (sampler_seed, sampler_skip): a request that holds a sequence's
	// prompt and response so far then samples what the sequence would have sampled next. Other
	// servers ignore it and sample with Seed.
	Continue     *Continuation
	Stop         []string
	StopTokenIDs []int32
	IgnoreEOS    bool
}

// Continuation names a position in a random stream: the stream of Seed after Skip draws.
type Continuation struct {
	Seed uint64
	Skip int
}

// TokenSource says how a Completion's tokens were read.
type TokenSource string

const (
	// FromTokenIDs: the server returned the ids (vLLM's return_token_ids, gorstar serve).
	FromTokenIDs TokenSource = "token_ids"
	// FromLogprobTokens: the ids came from logprob tokens named "token_id:ID"
	// (vLLM's return_tokens_as_token_ids, for versions without return_token_ids).
	FromLogprobTokens TokenSource = "logprob_tokens"
	// FromText: the server returned text only; the local tokenizer made the ids, which may differ
	// from what the model sampled, and there are no logprobs.
	FromText TokenSource = "text"
)

// Completion is what the model generated.
type Completion struct {
	Tokens       []int32
	LogProbs     []float32 // of each sampled token; nil with FromText
	Text         string
	FinishReason string // "stop" or "length"
	// StopString is the stop string that ended the completion and StopToken (when HasStopToken)
	// the stop token, as the server reported them (vLLM's stop_reason, SGLang's matched_stop) or
	// as the text shows them. Neither is set for a stop the server did not say the cause of.
	StopString   string
	StopToken    int32
	HasStopToken bool
	// StopRestored says the server cut the stop string from its text and the client put it back
	// (text path only: with token ids the ids hold it).
	StopRestored  bool
	Source        TokenSource
	Endpoint      string // the base URL that answered
	WeightVersion string // the server's weight_version, or the one this client pushed to it
}

func (c *Client) completionBody(req Request) ([]byte, error) {
	if len(req.Prompt) == 0 {
		return nil, fmt.Errorf("openai: the prompt is empty")
	}
	prompt, err := json.Marshal(req.Prompt)
	if err != nil {
		return nil, err
	}
	zero, keepSpecials := 0, false
	body := CompletionRequest{Prompt: prompt, Logprobs: &zero, SamplingParams: SamplingParams{
		Model: c.opts.Model, MaxTokens: &req.MaxTokens, Temperature: &req.Temperature,
		StopTokenIDs: req.StopTokenIDs, IgnoreEOS: req.IgnoreEOS,
		ReturnTokenIDs: true, ReturnTokensAsTokenIDs: true,
		SkipSpecialTokens: &keepSpecials, // text fallback: keep <|im_end|> and friends, so the ids match
		// Keep a matched stop string in the text (vLLM's name, then SGLang's); a server that cuts
		// it anyway says which in stop_reason or matched_stop, and the client puts it back.
		IncludeStopStrInOutput: true, NoStopTrim: true,
	}}
	if req.TopP > 0 {
		body.TopP = &req.TopP
	}
	if req.TopK > 0 {
		body.TopK = &req.TopK
	}
	if req.Seed != nil {
		seed := int64(*req.Seed)
		body.Seed = &seed
	}
	if len(req.Stop) > 0 {
		if body.Stop, err = json.Marshal(req.Stop); err != nil {
			return nil, err
		}
	}
	if req.Continue != nil {
		skip := int64(req.Continue.Skip)
		body.SamplerSeed, body.SamplerSkip = &req.Continue.Seed, &skip
	}
	return json.Marshal(body)
}

// Complete generates from req.Prompt on the endpoint dispatch picks, retrying elsewhere on failure.
func (c *Client) Complete(ctx context.Context, req Request) (Completion, error) {
	body, err := c.completionBody(req)
	if err != nil {
		return Completion{}, err
	}
	var out Completion
	err = c.withRetries(ctx, req.Session, func(ctx context.Context, ep *endpoint) error {
		data, err := c.post(ctx, ep.url+"/v1/completions", body)
		if err != nil {
			return err
		}
		out, err = c.readCompletion(data, req)
		if errors.Is(err, ErrNoTokenIDs) {
			return &attemptError{err: err} // the same from every server of a deployment
		}
		if err != nil {
			return &attemptError{retryable: true, err: err} // garbage: another endpoint may do better
		}
		out.Endpoint = ep.url
		if out.WeightVersion == "" {
			c.mu.Lock()
			out.WeightVersion = ep.version
			c.mu.Unlock()
		}
		return nil
	})
	return out, err
}

// readCompletion takes the ids from the best source the answer offers.
func (c *Client) readCompletion(data []byte, req Request) (Completion, error) {
	var r CompletionResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return Completion{}, fmt.Errorf("the answer is not a completion: %v", err)
	}
	if len(r.Choices) != 1 {
		return Completion{}, fmt.Errorf("the answer has %d choices, want 1", len(r.Choices))
	}
	ch := r.Choices[0]
	out := Completion{Text: ch.Text, WeightVersion: versionString(r.WeightVersion)}
	if ch.FinishReason != nil {
		out.FinishReason = *ch.FinishReason
	}
	reason := ch.StopReason
	if reason == nil {
		reason = ch.MatchedStop
	}
	out.stopFrom(reason, req.Stop)
	var logprobs []*float32
	var names []string
	if ch.Logprobs != nil {
		logprobs, names = ch.Logprobs.TokenLogprobs, ch.Logprobs.Tokens
	}
	switch ids, ok := idsFromNames(names); {
	case ch.TokenIDs != nil:
		out.Tokens, out.Source = ch.TokenIDs, FromTokenIDs
	case ok:
		out.Tokens, out.Source = ids, FromLogprobTokens
	default:
		if c.opts.Tokenizer == nil {
			return Completion{}, ErrNoTokenIDs
		}
		c.readText(&out)
		return out, nil
	}
	if len(logprobs) == len(out.Tokens) {
		out.LogProbs = make([]float32, len(logprobs))
		for i, lp := range logprobs {
			if lp == nil {
				return Completion{}, fmt.Errorf("token %d has no logprob", i)
			}
			out.LogProbs[i] = *lp
		}
	} else if logprobs != nil {
		return Completion{}, fmt.Errorf("%d logprobs for %d tokens", len(logprobs), len(out.Tokens))
	}
	return out, nil
}

// stopFrom reads a stop_reason or matched_stop when the completion stopped; without one, a text
// that ends with one of the request's stop strings names it.
func (out *Completion) stopFrom(reason *StopReason, stops []string) {
	switch {
	case out.FinishReason != "stop":
	case reason != nil && reason.IsToken:
		out.StopToken, out.HasStopToken = reason.Token, true
	case reason != nil && reason.Text != "":
		out.StopString = reason.Text
	default:
		for _, st := range stops {
			if st != "" && strings.HasSuffix(out.Text, st) {
				out.StopString = st
				return
			}
		}
	}
}

// readText makes the ids of a text-only answer with the local tokenizer, after putting back the
// stop string or stop token the server cut from the text (vLLM and SGLang cut both unless asked
// not to; some servers ignore the asking).
func (c *Client) readText(out *Completion) {
	tok := c.opts.Tokenizer
	if out.StopString != "" && !strings.HasSuffix(out.Text, out.StopString) {
		out.Text += out.StopString
		out.StopRestored = true
	}
	out.Tokens, out.Source = tok.EncodeWithSpecials(out.Text, true), FromText
	if out.HasStopToken {
		if n := len(out.Tokens); n == 0 || out.Tokens[n-1] != out.StopToken {
			out.Tokens = append(out.Tokens, out.StopToken)
			out.Text += tok.Decode([]int32{out.StopToken})
			out.StopRestored = true
		}
	}
}

// idsFromNames reads "token_id:ID" logprob names; ok only when every name has that form.
func idsFromNames(names []string) ([]int32, bool) {
	if len(names) == 0 {
		return nil, false
	}
	ids := make([]int32, len(names))
	for i, n := range names {
		s, found := strings.CutPrefix(n, "token_id:")
		id, err := strconv.ParseInt(s, 10, 32)
		if !found || err != nil {
			return nil, false
		}
		ids[i] = int32(id)
	}
	return ids, true
}

// versionString reads a weight_version sent as a string (SGLang, gorstar) or a number.
func versionString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}
