package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
		return chat.Message{}, usererr.New("--endpoint %s: %s", e.url, msg)
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
