package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"gorstar/chat"
	"gorstar/engine"
	"gorstar/internal/plainjson"
	"gorstar/openai"
)

// chatRequest is openai.ChatCompletionRequest read leniently: a message's content may be a list of
// text parts, a call's arguments an object instead of a string (clients send both).
type chatRequest struct {
	openai.SamplingParams
	Messages            []openAIMessage   `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	Logprobs            bool              `json:"logprobs"`
	TopLogprobs         int               `json:"top_logprobs"`
}

// openAIMessage is a chat message as OpenAI clients send it.
type openAIMessage struct {
	Role       string           `json:"role"`
	Content    json.RawMessage  `json:"content"` // a string, null, or a list of {"type": "text", "text": …}
	Name       string           `json:"name"`
	ToolCalls  []openAIToolCall `json:"tool_calls"`
	ToolCallID string           `json:"tool_call_id"`
}

type openAIToolCall struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"` // a string holding JSON (OpenAI) or an object
	} `json:"function"`
}

func contentText(raw json.RawMessage, i int) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", badRequest(fmt.Sprintf("messages[%d].content", i), "messages[%d].content must be a string or a list of text parts", i)
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "text" {
			return "", badRequest(fmt.Sprintf("messages[%d].content", i), "messages[%d].content[%d]: only text parts are supported, got %q", i, j, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func (m openAIMessage) toChat(i int) (chat.Message, error) {
	text, err := contentText(m.Content, i)
	if err != nil {
		return chat.Message{}, err
	}
	out := chat.Message{Role: m.Role, Content: text, Name: m.Name}
	for j, c := range m.ToolCalls {
		args := bytes.TrimSpace(c.Function.Arguments)
		var s string
		if json.Unmarshal(args, &s) == nil {
			args = []byte(s)
		}
		if len(bytes.TrimSpace(args)) == 0 {
			args = []byte("{}")
		}
		if !json.Valid(args) {
			return out, badRequest(fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, j),
				"messages[%d].tool_calls[%d].function.arguments is not JSON", i, j)
		}
		out.ToolCalls = append(out.ToolCalls, chat.ToolCall{Name: c.Function.Name, Arguments: json.RawMessage(args)})
	}
	return out, nil
}

// chatPrompt renders a chat request's messages and tools through the template into the ids of the
// generation prompt; endOfTurn is the ids that close an assistant turn.
func (s *Server) chatPrompt(req *chatRequest) (prompt, endOfTurn []int32, err error) {
	if len(req.Messages) == 0 {
		return nil, nil, badRequest("messages", "messages must hold at least one message")
	}
	msgs := make([]chat.Message, len(req.Messages))
	for i, m := range req.Messages {
		if msgs[i], err = m.toChat(i); err != nil {
			return nil, nil, err
		}
	}
	renderer, err := chat.NewRenderer(s.tok, chat.Options{Template: s.opts.Template, Tools: req.Tools, Primer: s.opts.Primer})
	if err != nil {
		return nil, nil, badRequest("tools", "render the chat template: %v", err)
	}
	if prompt, err = renderer.RenderPrompt(msgs); err != nil {
		return nil, nil, badRequest("messages", "%v", err)
	}
	return prompt, renderer.EndOfTurn(), nil
}

// chatCompletions answers POST /v1/chat/completions.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req chatRequest
	if err := decodeBody(body, &req); err != nil {
		return err
	}
	if err := s.checkModel(req.Model); err != nil {
		return err
	}
	prompt, endOfTurn, err := s.chatPrompt(&req)
	if err != nil {
		return err
	}
	if req.MaxCompletionTokens != nil {
		req.MaxTokens = req.MaxCompletionTokens
	}
	o := s.eng.Options()
	er, n, err := s.engineRequest(&req.SamplingParams, max(1, min(o.MaxContext, o.KVTokens)-len(prompt)))
	if err != nil {
		return err
	}
	if req.TopLogprobs < 0 || req.TopLogprobs > engine.MaxTopLogProbs {
		return badRequest("top_logprobs", "top_logprobs must be between 0 and %d, got %d", engine.MaxTopLogProbs, req.TopLogprobs)
	}
	if req.Logprobs {
		er.TopLogProbs = req.TopLogprobs
	}
	if end := endOfTurn; len(end) == 1 && !containsID(er.StopTokens, end[0]) {
		er.StopTokens = append(er.StopTokens, end[0])
	}
	er.Prompt = prompt
	if req.Stream {
		return s.streamChat(w, r, er, n, &req)
	}
	outs, err := s.generate(r.Context(), er, n)
	if err != nil {
		return err
	}
	resp := openai.ChatCompletionResponse{ID: newID("chatcmpl-"), Object: "chat.completion", Created: time.Now().Unix(),
		Model: s.opts.ModelName, Choices: make([]openai.ChatChoice, n), WeightVersion: s.weightVersion()}
	completion := 0
	for i, c := range outs {
		completion += len(c.tokens)
		msg, finish := s.assistantMessage(s.opts.Primer+s.text(c, er.StopTokens, keepStop(&req.SamplingParams)), finishReason(c.finish))
		ch := openai.ChatChoice{Index: i, Message: &msg, FinishReason: &finish, StopReason: stopReason(c, req.StopTokenIDs)}
		if req.Logprobs {
			ch.Logprobs = s.chatLogprobs(c)
		}
		if req.ReturnTokenIDs {
			ch.TokenIDs = nonNil(c.tokens)
		}
		resp.Choices[i] = ch
	}
	resp.Usage = usage(len(prompt), completion)
	if req.ReturnTokenIDs {
		resp.PromptTokenIDs = prompt
	}
	plainjson.WriteHTTP(w, http.StatusOK, resp)
	return nil
}

// assistantMessage turns the generated text into an OpenAI message: a well-formed <tool_call>
// becomes tool_calls (the text before it stays the content) and finish_reason "tool_calls"; a
// malformed one stays in the content.
func (s *Server) assistantMessage(text, finish string) (openai.ChatMessage, string) {
	msg := openai.ChatMessage{Role: "assistant", Content: text}
	call, found := chat.ParseToolCall(text)
	if !found || call.Error != "" {
		return msg, finish
	}
	msg.Content = strings.TrimRight(text[:call.Start], " \n")
	// The arguments as json.dumps prints them (vLLM's and SGLang's parsers do the same): sent
	// back in a later request, they render as the model wrote them, not compacted.
	args, err := chat.PythonJSON(call.Call.Arguments)
	if err != nil {
		args = string(call.Call.Arguments)
	}
	msg.ToolCalls = []openai.ToolCall{{ID: newID("call_"), Type: "function",
		Function: openai.FunctionCall{Name: call.Call.Name, Arguments: args}}}
	return msg, "tool_calls"
}

func (s *Server) chatLogprobs(c choice) *openai.ChatLogprobs {
	// "bytes" are the token's own bytes, which for a token holding part of a UTF-8 character are
	// not those of its text (a replacement character): joined over the tokens they give the exact
	// UTF-8 of the content, which is what OpenAI's field is for. An id the tokenizer does not know
	// (the model's vocabulary is padded past it) has no bytes.
	entry := func(id int32, lp float32) openai.TokenLogprob {
		b, _ := s.tok.TokenBytes(id) // none for an id past the tokenizer's vocabulary (padding)
		ints := make([]int, len(b))
		for j, x := range b {
			ints[j] = int(x)
		}
		return openai.TokenLogprob{Token: s.tok.Decode([]int32{id}), Logprob: lp, Bytes: ints}
	}
	out := &openai.ChatLogprobs{Content: make([]openai.ChatLogprob, len(c.tokens))}
	for i, id := range c.tokens {
		e := openai.ChatLogprob{TokenLogprob: entry(id, c.logprobs[i]), TopLogprobs: []openai.TokenLogprob{}}
		if i < len(c.top) {
			for _, a := range c.top[i] {
				e.TopLogprobs = append(e.TopLogprobs, entry(a.Token, a.LogProb))
			}
		}
		out.Content[i] = e
	}
	return out
}
