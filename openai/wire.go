package openai

import (
	"bytes"
	"encoding/json"
	"gorstar/internal/plainjson"
	"strconv"
)

// The OpenAI API on the wire, as gorstar serve writes it and this package's client reads it: one
// set of types, so the two cannot drift. vLLM's and SGLang's extensions that gorstar uses are
// here too (token_ids, stop_reason, matched_stop, …), and gorstar serve's own (sampler_seed,
// sampler_skip, weight_version).

// SamplingParams are the request fields /v1/completions and /v1/chat/completions share. Pointers
// and empty values are "not given": the server's defaults apply.
type SamplingParams struct {
	Model       string          `json:"model,omitempty"`
	MaxTokens   *int            `json:"max_tokens,omitempty"`
	Temperature *float64        `json:"temperature,omitempty"`
	TopP        *float64        `json:"top_p,omitempty"`
	TopK        *int            `json:"top_k,omitempty"` // vLLM
	N           *int            `json:"n,omitempty"`
	Stop        json.RawMessage `json:"stop,omitempty"` // a string or a list of strings
	// StopTokenIDs end a sequence at any of these ids (vLLM).
	StopTokenIDs  []int32        `json:"stop_token_ids,omitempty"`
	Seed          *int64         `json:"seed,omitempty"`
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
	IgnoreEOS     bool           `json:"ignore_eos,omitempty"` // vLLM
	// SkipSpecialTokens false keeps <|im_end|> and friends in the text (vLLM, SGLang).
	SkipSpecialTokens *bool `json:"skip_special_tokens,omitempty"`
	// ReturnTokenIDs adds token_ids (and prompt_token_ids) to each choice (vLLM ≥ 0.10.2).
	ReturnTokenIDs bool `json:"return_token_ids,omitempty"`
	// ReturnTokensAsTokenIDs names logprob tokens "token_id:ID" (vLLM).
	ReturnTokensAsTokenIDs bool `json:"return_tokens_as_token_ids,omitempty"`
	// IncludeStopStrInOutput (vLLM) and NoStopTrim (SGLang) keep a matched stop string in the text.
	IncludeStopStrInOutput bool `json:"include_stop_str_in_output,omitempty"`
	NoStopTrim             bool `json:"no_stop_trim,omitempty"`
	// SamplerSeed and SamplerSkip continue a random stream (gorstar serve; Continuation).
	SamplerSeed *uint64 `json:"sampler_seed,omitempty"`
	SamplerSkip *int64  `json:"sampler_skip,omitempty"`
}

// StreamOptions: IncludeUsage ends a stream with a chunk of no choices and the usage.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// CompletionRequest is a /v1/completions request.
type CompletionRequest struct {
	SamplingParams
	// Prompt is a string, a list of strings, a list of token ids or a list of such lists.
	Prompt json.RawMessage `json:"prompt"`
	// Logprobs asks for the sampled tokens' log-probabilities and the N most likely at each step.
	Logprobs *int `json:"logprobs,omitempty"`
	Echo     bool `json:"echo,omitempty"`
}

// CompletionResponse is a /v1/completions answer, or one chunk of its stream.
type CompletionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []CompletionChoice `json:"choices"`
	Usage   *Usage             `json:"usage,omitempty"`
	// WeightVersion names the weights that wrote the answer (SGLang, gorstar serve).
	WeightVersion json.RawMessage `json:"weight_version,omitempty"`
}

// CompletionChoice is one generated sequence.
type CompletionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *CompletionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"` // null in a stream's chunks before the last
	// StopReason is the stop string or stop token id that ended the sequence (vLLM); MatchedStop
	// is SGLang's name for it.
	StopReason  *StopReason `json:"stop_reason"`
	MatchedStop *StopReason `json:"matched_stop,omitempty"`
	// TokenIDs are the generated ids and PromptTokenIDs the prompt's (return_token_ids).
	TokenIDs       []int32 `json:"token_ids,omitempty"`
	PromptTokenIDs []int32 `json:"prompt_token_ids,omitempty"`
}

// CompletionLogprobs is the legacy completions logprobs object.
type CompletionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float32           `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// StopReason is a matched stop: a string, or a token id (IsToken).
type StopReason struct {
	Text    string
	Token   int32
	IsToken bool
}

// MarshalJSON writes the string or the id.
func (s StopReason) MarshalJSON() ([]byte, error) {
	if s.IsToken {
		return []byte(strconv.Itoa(int(s.Token))), nil
	}
	return plainjson.Marshal(s.Text)
}

// UnmarshalJSON reads a string or an integer.
func (s *StopReason) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*s = StopReason{}
		return json.Unmarshal(b, &s.Text)
	}
	*s = StopReason{IsToken: true}
	return json.Unmarshal(b, &s.Token)
}

// ChatCompletionResponse is a /v1/chat/completions answer, or one chunk of its stream.
type ChatCompletionResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []ChatChoice `json:"choices"`
	Usage   *Usage       `json:"usage,omitempty"`
	// PromptTokenIDs are the rendered prompt's ids (return_token_ids).
	PromptTokenIDs []int32         `json:"prompt_token_ids,omitempty"`
	WeightVersion  json.RawMessage `json:"weight_version,omitempty"`
}

// ChatChoice is one assistant message, whole (Message) or a stream's piece of it (Delta).
type ChatChoice struct {
	Index        int           `json:"index"`
	Message      *ChatMessage  `json:"message,omitempty"`
	Delta        *ChatDelta    `json:"delta,omitempty"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
	StopReason   *StopReason   `json:"stop_reason"`
	TokenIDs     []int32       `json:"token_ids,omitempty"`
}

// ChatDelta is what a stream chunk adds to the message.
type ChatDelta struct {
	Role      string     `json:"role,omitempty"`
	Content   *string    `json:"content,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// ChatLogprobs are the chat form of log-probabilities, one entry per generated token.
type ChatLogprobs struct {
	Content []ChatLogprob `json:"content"`
}

// ChatLogprob is a generated token with its most likely alternatives.
type ChatLogprob struct {
	TokenLogprob
	TopLogprobs []TokenLogprob `json:"top_logprobs"`
}

// TokenLogprob is a token's text, log-probability and bytes (its own UTF-8 bytes, which for a
// token holding part of a character are not those of its text).
type TokenLogprob struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// ModelList is the /v1/models answer.
type ModelList struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}

// Model is a served model; MaxModelLen is its context (vLLM).
type Model struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	MaxModelLen int    `json:"max_model_len,omitempty"`
}

// ErrorResponse is an error answer.
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody says what went wrong; Param names the request field at fault.
type ErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// UpdateWeightsRequest is the body of POST /update_weights_from_disk (SGLang's): load the
// safetensors of ModelPath into the served model.
type UpdateWeightsRequest struct {
	ModelPath     string `json:"model_path"`
	LoadFormat    string `json:"load_format,omitempty"`    // "", "auto" or "safetensors"
	WeightVersion string `json:"weight_version,omitempty"` // a label for the new weights (default: the server's count)
}

// UpdateWeightsResponse answers /update_weights_from_disk. WeightVersion is a string from SGLang
// and gorstar serve and may be a number elsewhere; a refusal has only Success and Message.
type UpdateWeightsResponse struct {
	Message           string          `json:"message"`
	NumPausedRequests *int            `json:"num_paused_requests,omitempty"`
	Success           bool            `json:"success"`
	WeightVersion     json.RawMessage `json:"weight_version,omitempty"`
}

// WeightVersionResponse answers GET /get_weight_version.
type WeightVersionResponse struct {
	WeightVersion json.RawMessage `json:"weight_version"`
}
