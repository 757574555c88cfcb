package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Request is one completion of a prompt given as token ids.
type Request struct {
	// Session keeps the requests of one trajectory on one endpoint while it is up (its prefix
	// cache); empty: each request is dispatched on its own.
	Session      string
	Prompt       []int32
	MaxTokens    int
	Temperature  float64 // 0 is greedy
	TopP         float64 // 0 means 1
	TopK         int     // 0: off
	Seed         *uint64
	Stop         []string
	StopTokenIDs []int32
	IgnoreEOS    bool
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
	Tokens        []int32
	LogProbs      []float32 // of each sampled token; nil with FromText
	Text          string
	FinishReason  string // "stop" or "length"
	Source        TokenSource
	Endpoint      string // the base URL that answered
	WeightVersion string // the server's weight_version, or the one this client pushed to it
}

// completionResponse is the part of a /v1/completions answer the client reads.
type completionResponse struct {
	WeightVersion json.RawMessage `json:"weight_version"`
	Choices       []struct {
		Text         string  `json:"text"`
		FinishReason string  `json:"finish_reason"`
		TokenIDs     []int32 `json:"token_ids"`
		Logprobs     *struct {
			Tokens        []string   `json:"tokens"`
			TokenLogprobs []*float32 `json:"token_logprobs"`
		} `json:"logprobs"`
	} `json:"choices"`
}

func (c *Client) completionBody(req Request) ([]byte, error) {
	if len(req.Prompt) == 0 {
		return nil, fmt.Errorf("openai: the prompt is empty")
	}
	body := map[string]any{
		"prompt": req.Prompt, "max_tokens": req.MaxTokens, "temperature": req.Temperature,
		"logprobs": 0, "return_token_ids": true, "return_tokens_as_token_ids": true,
		"skip_special_tokens": false, // text fallback: keep <|im_end|> and friends, so the ids match
	}
	if c.opts.Model != "" {
		body["model"] = c.opts.Model
	}
	if req.TopP > 0 {
		body["top_p"] = req.TopP
	}
	if req.TopK > 0 {
		body["top_k"] = req.TopK
	}
	if req.Seed != nil {
		body["seed"] = int64(*req.Seed)
	}
	if len(req.Stop) > 0 {
		body["stop"] = req.Stop
	}
	if len(req.StopTokenIDs) > 0 {
		body["stop_token_ids"] = req.StopTokenIDs
	}
	if req.IgnoreEOS {
		body["ignore_eos"] = true
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
		out, err = c.readCompletion(data)
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
func (c *Client) readCompletion(data []byte) (Completion, error) {
	var r completionResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return Completion{}, fmt.Errorf("the answer is not a completion: %v", err)
	}
	if len(r.Choices) != 1 {
		return Completion{}, fmt.Errorf("the answer has %d choices, want 1", len(r.Choices))
	}
	ch := r.Choices[0]
	out := Completion{Text: ch.Text, FinishReason: ch.FinishReason, WeightVersion: versionString(r.WeightVersion)}
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
			return Completion{}, fmt.Errorf("the server returned no token ids and the client has no tokenizer to read its text")
		}
		out.Tokens, out.Source = c.opts.Tokenizer.EncodeWithSpecials(ch.Text, true), FromText
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
