package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"gorstar/chat"
	"gorstar/internal/usererr"
)

// endpointChat asks an OpenAI-compatible server.
type endpointChat struct {
	url, model  string
	tools       []json.RawMessage
	maxTokens   int
	temperature float64
}

// endpointCheckTimeout bounds the first question to the endpoint: a server that does not list its
// models within it is not one chat can talk to.
const endpointCheckTimeout = 10 * time.Second

// check asks the endpoint for its models before the first question, so a wrong address or
// model name is one line at start, not an error in the middle of a conversation.
func (e *endpointChat) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, endpointCheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/v1/models", nil)
	if err != nil {
		return usererr.New("--endpoint %s: %v", e.url, err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return usererr.New("--endpoint %s: no answer within %s", e.url, endpointCheckTimeout)
		}
		return usererr.New("--endpoint %s: nothing answers (%v)", e.url, errors.Unwrap(err))
	}
	defer res.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&list); err != nil || res.StatusCode != http.StatusOK {
		return usererr.New("--endpoint %s: not an OpenAI-compatible server (GET /v1/models answered %s)", e.url, res.Status)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if e.model != "" && !slices.Contains(ids, e.model) {
		return usererr.New("--served-model %s: %s serves %s", e.model, e.url, strings.Join(ids, ", "))
	}
	return nil
}

func (e *endpointChat) turn(ctx context.Context, msgs []chat.Message, out io.Writer) (chat.Message, error) {
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type toolCall struct {
		ID       string `json:"id,omitempty"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	type message struct {
		Role      string     `json:"role"`
		Content   *string    `json:"content"`
		ToolCalls []toolCall `json:"tool_calls,omitempty"`
		Name      string     `json:"name,omitempty"`
	}
	var body struct {
		Model       string            `json:"model,omitempty"`
		Messages    []message         `json:"messages"`
		Tools       []json.RawMessage `json:"tools,omitempty"`
		MaxTokens   int               `json:"max_tokens"`
		Temperature float64           `json:"temperature"`
	}
	body.Model, body.Tools, body.MaxTokens, body.Temperature = e.model, e.tools, e.maxTokens, e.temperature
	for _, m := range msgs {
		content := m.Content
		om := message{Role: m.Role, Content: &content, Name: m.Name}
		for _, c := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, toolCall{Type: "function", Function: fn{Name: c.Name, Arguments: string(c.Arguments)}})
		}
		body.Messages = append(body.Messages, om)
	}
	data, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/v1/chat/completions", bytes.NewReader(data))
	if err != nil {
		return chat.Message{}, usererr.New("--endpoint %s: %v", e.url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return chat.Message{}, usererr.New("--endpoint %s: %v", e.url, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return chat.Message{}, fmt.Errorf("read the answer of %s: %w", e.url, err)
	}
	var answer struct {
		Choices []struct {
			Message message `json:"message"`
		} `json:"choices"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return chat.Message{}, fmt.Errorf("%s answered %s: %.200s", e.url, res.Status, raw)
	}
	if answer.Error != nil || len(answer.Choices) == 0 {
		msg := res.Status
		if answer.Error != nil {
			msg = answer.Error.Message
		}
		return chat.Message{}, &turnRefused{fmt.Sprintf("--endpoint %s: %s", e.url, msg)}
	}
	m := answer.Choices[0].Message
	out1 := chat.Message{Role: chat.RoleAssistant}
	if m.Content != nil {
		out1.Content = *m.Content
	}
	fmt.Fprint(out, out1.Content)
	for _, c := range m.ToolCalls {
		args := json.RawMessage(c.Function.Arguments)
		if !json.Valid(args) {
			args = json.RawMessage("{}")
		}
		out1.ToolCalls = append(out1.ToolCalls, chat.ToolCall{Name: c.Function.Name, Arguments: args})
		fmt.Fprintf(out, "\n<tool_call>\n{\"name\": %q, \"arguments\": %s}\n</tool_call>", c.Function.Name, args)
	}
	return out1, nil
}
