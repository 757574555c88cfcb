package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Roles a message may have.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one turn of a conversation. Its JSON form (role, content, tool_calls, name) matches the
// conversation rows of gorstar's data files.
type Message struct {
	Role      string     `json:"role"`
	Content   string     `json:"content"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Name is the tool's name on a tool message (optional).
	Name string `json:"name,omitempty"`
}

// ToolCall is a function call made by the assistant. Arguments is a JSON object, rendered byte for
// byte (as data.ToolCall keeps it).
type ToolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
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
