package openai

import (
	"context"
	"encoding/json"
	"fmt"
)

// ChatMessage is a chat message as OpenAI's chat completions API carries it.
type ChatMessage struct {
	Role string `json:"role"`
	// Content is the message's text (null on the wire reads as "").
	Content    string     `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a function call in an assistant message; Arguments is a string holding JSON.
type ToolCall struct {
	// Index orders the calls of a stream's deltas.
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function a ToolCall calls and its arguments.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Usage is the token count an answer reports.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// ChatRequest is one chat completion: the server renders the messages and tools with its own
// chat template and reads tool calls back with its own parser (text mode: no local tokenizer).
type ChatRequest struct {
	// Session keeps the requests of one conversation on one endpoint while it is up.
	Session     string
	Messages    []ChatMessage
	Tools       []json.RawMessage
	MaxTokens   int
	Temperature float64
	TopP        float64 // 0 means 1
	Seed        *uint64
	// Stop ends the message at any of these strings, kept in the text where the server allows
	// (include_stop_str_in_output, no_stop_trim).
	Stop []string
	// Continue: see Request.Continue (gorstar serve honours it; other servers ignore it).
	Continue *Continuation
}

// ChatCompletion is the assistant's answer.
type ChatCompletion struct {
	Message      ChatMessage
	FinishReason string // "stop", "length" or "tool_calls"
	Usage        Usage
	Endpoint     string
}

// ChatCompletionRequest is a /v1/chat/completions request as the client sends it (gorstar serve
// reads the same fields, its messages leniently).
type ChatCompletionRequest struct {
	SamplingParams
	Messages            []ChatMessage     `json:"messages"`
	Tools               []json.RawMessage `json:"tools,omitempty"`
	MaxCompletionTokens *int              `json:"max_completion_tokens,omitempty"`
	Logprobs            bool              `json:"logprobs,omitempty"`
	TopLogprobs         int               `json:"top_logprobs,omitempty"`
}

// Chat asks for the next assistant message on the endpoint dispatch picks, retrying elsewhere
// on failure.
func (c *Client) Chat(ctx context.Context, req ChatRequest) (ChatCompletion, error) {
	if len(req.Messages) == 0 {
		return ChatCompletion{}, fmt.Errorf("openai: a chat request needs a message")
	}
	body := ChatCompletionRequest{Messages: req.Messages, Tools: req.Tools, SamplingParams: SamplingParams{
		Model: c.opts.Model, MaxTokens: &req.MaxTokens, Temperature: &req.Temperature}}
	if req.TopP > 0 {
		body.TopP = &req.TopP
	}
	if req.Seed != nil {
		seed := int64(*req.Seed)
		body.Seed = &seed
	}
	if len(req.Stop) > 0 {
		body.Stop, _ = json.Marshal(req.Stop)
		body.IncludeStopStrInOutput, body.NoStopTrim = true, true
	}
	if req.Continue != nil {
		skip := int64(req.Continue.Skip)
		body.SamplerSeed, body.SamplerSkip = &req.Continue.Seed, &skip
	}
	data, err := json.Marshal(body)
	if err != nil {
		return ChatCompletion{}, err
	}
	var out ChatCompletion
	err = c.withRetries(ctx, req.Session, func(ctx context.Context, ep *endpoint) error {
		answer, err := c.post(ctx, ep.url+"/v1/chat/completions", data)
		if err != nil {
			return err
		}
		var r ChatCompletionResponse
		switch err := json.Unmarshal(answer, &r); {
		case err != nil:
			return &attemptError{retryable: true, err: fmt.Errorf("the answer is not a chat completion: %v", err)}
		case len(r.Choices) != 1 || r.Choices[0].Message == nil:
			return &attemptError{retryable: true, err: fmt.Errorf("the answer has %d choices with a message, want 1", len(r.Choices))}
		case r.Usage == nil:
			return &attemptError{retryable: true, err: fmt.Errorf("the answer has no usage (token counts)")}
		}
		ch := r.Choices[0]
		out = ChatCompletion{Message: *ch.Message, Usage: *r.Usage, Endpoint: ep.url}
		if ch.FinishReason != nil {
			out.FinishReason = *ch.FinishReason
		}
		return nil
	})
	return out, err
}
