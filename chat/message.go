package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"gorstar/internal/plainjson"
)

// Roles a message may have.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one turn of a conversation, the one message type of gorstar: data files, SFT, chat,
// serve and rollouts all use it. An assistant turn that calls a tool keeps the text before the call
// in Content and the call in ToolCalls. Name is the tool's name on a tool message (optional).
//
// Weight is an assistant message's weight in the SFT loss, as in OpenAI's fine-tuning format: nil
// or 1 trains on the message, 0 keeps it as context only (a demonstrated mistake that the next
// turn corrects). Other roles carry none.
//
// Its JSON form is the conversation rows of gorstar's data files: {"role", "content",
// "tool_calls", "name", "weight"}; a null content reads as empty.
type Message struct {
	Role      string     `json:"role"`
	Content   string     `json:"content"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	Name      string     `json:"name,omitempty"`
	Weight    *int       `json:"weight,omitempty"`
}

// Weight returns a pointer to w, for Message.Weight.
func Weight(w int) *int { return &w }

// InLoss reports whether the message's tokens count in the SFT loss: an assistant message whose
// weight is not 0.
func (m Message) InLoss() bool {
	return m.Role == RoleAssistant && (m.Weight == nil || *m.Weight != 0)
}

// CheckWeight refuses a weight other than 0 or 1, and a weight on a message that is not the
// assistant's. Its errors are about the field "weight".
func (m Message) CheckWeight() error {
	switch {
	case m.Weight == nil:
		return nil
	case m.Role != RoleAssistant:
		return fmt.Errorf("only assistant messages carry a weight, this one is %q", m.Role)
	case *m.Weight != 0 && *m.Weight != 1:
		return fmt.Errorf("expected 0 or 1, got %d", *m.Weight)
	}
	return nil
}

// ToolCall is a function call made by the assistant. Arguments is a JSON object, kept and rendered
// byte for byte as the model wrote it (spacing included).
//
// JSON form: {"name": N, "arguments": "<the JSON text>"}, arguments as a string (as OpenAI does) so
// the text survives byte for byte. Reading also accepts arguments as an object and the OpenAI form
// {"type": "function", "function": {"name", "arguments"}}. In Parquet (package data) a call is
// struct{name, arguments string}.
type ToolCall struct {
	Name      string
	Arguments json.RawMessage
}

// Conversation is a conversation with an id: one row of a conversations table (an SFT example).
type Conversation struct {
	ID       string    `json:"id"`
	Messages []Message `json:"messages"`
}

// MarshalJSON writes {"name": N, "arguments": "<JSON text>"}.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	return plainjson.Marshal(struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}{c.Name, string(c.Arguments)})
}

// UnmarshalJSON reads the gorstar form and the OpenAI form, arguments as an object or a string;
// missing arguments read as {}.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	var j struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Function  *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Function != nil {
		j.Name, j.Arguments = j.Function.Name, j.Function.Arguments
	}
	c.Name = j.Name
	c.Arguments = json.RawMessage("{}")
	raw := bytes.TrimSpace(j.Arguments)
	var text string
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '"' && json.Unmarshal(raw, &text) == nil:
		c.Arguments = json.RawMessage(text)
	default:
		c.Arguments = append(json.RawMessage(nil), raw...) // as written, spacing included
	}
	return nil
}

// UnmarshalJSON accepts a null content as empty, and a null weight as none. A weight that is not
// an integer is refused here; CheckWeight judges the integer.
func (m *Message) UnmarshalJSON(b []byte) error {
	var j struct {
		Role      string          `json:"role"`
		Content   *string         `json:"content"`
		ToolCalls []ToolCall      `json:"tool_calls"`
		Name      string          `json:"name"`
		Weight    json.RawMessage `json:"weight"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*m = Message{Role: j.Role, ToolCalls: j.ToolCalls, Name: j.Name}
	if j.Content != nil {
		m.Content = *j.Content
	}
	if raw := bytes.TrimSpace(j.Weight); len(raw) > 0 && string(raw) != "null" {
		var w int
		if err := json.Unmarshal(raw, &w); err != nil {
			return fmt.Errorf("weight: expected 0 or 1, got %s", raw)
		}
		m.Weight = &w
	}
	return nil
}

// validate checks the fields a template relies on.
func (m Message) validate(i int) error {
	switch m.Role {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool:
	default:
		return fmt.Errorf("message %d: role %q is not one of system, user, assistant, tool", i, m.Role)
	}
	if len(m.ToolCalls) > 0 && m.Role != RoleAssistant {
		return fmt.Errorf("message %d: only assistant messages carry tool_calls, this one is %q", i, m.Role)
	}
	if err := m.CheckWeight(); err != nil {
		return fmt.Errorf("message %d weight: %w", i, err)
	}
	for j, c := range m.ToolCalls {
		if c.Name == "" {
			return fmt.Errorf("message %d tool_calls[%d]: empty name", i, j)
		}
		if args := bytes.TrimSpace(c.Arguments); len(args) == 0 || args[0] != '{' || !json.Valid(args) {
			return fmt.Errorf("message %d tool_calls[%d] (%s): arguments must be a JSON object, got %q", i, j, c.Name, c.Arguments)
		}
	}
	return nil
}
