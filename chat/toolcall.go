package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Tags around a tool call in the model's text.
const (
	ToolCallOpen  = "<tool_call>"
	ToolCallClose = "</tool_call>"
)

// ParsedToolCall is the first tool call found in an assistant turn.
type ParsedToolCall struct {
	// Call is the call when Error is empty.
	Call ToolCall
	// Error describes a malformed call. rStar2 does not stop the rollout on one: this text goes back
	// to the model as the tool's response.
	Error string
	// Start and End are the byte offsets of the call, tags included, in the text (End is the text's
	// length when the closing tag is missing).
	Start, End int
}

// ParseToolCall reads the first <tool_call> … </tool_call> in text; found is false when text has
// none. Only the first call of a turn is run, so later ones are ignored. The body must be a JSON
// object {"name": string, "arguments": object}; arguments given as a string holding a JSON object
// are accepted too. A missing closing tag is tolerated when the rest of the text is such an object
// (generation may have stopped on the tag).
func ParseToolCall(text string) (call ParsedToolCall, found bool) {
	open := strings.Index(text, ToolCallOpen)
	if open < 0 {
		return ParsedToolCall{}, false
	}
	call.Start = open
	bodyStart := open + len(ToolCallOpen)
	body := text[bodyStart:]
	closed := false
	if k := strings.Index(body, ToolCallClose); k >= 0 {
		body = body[:k]
		call.End = bodyStart + k + len(ToolCallClose)
		closed = true
	} else {
		call.End = len(text)
	}
	c, err := parseCallJSON(body)
	if err != nil {
		call.Error = "Error: " + err.Error()
		if !closed {
			call.Error += "; the call is also missing its closing " + ToolCallClose
		}
		call.Error += `. Write a call as <tool_call>{"name": "…", "arguments": {…}}</tool_call>.`
		return call, true
	}
	call.Call = c
	return call, true
}

func parseCallJSON(body string) (ToolCall, error) {
	body = strings.TrimSpace(body)
	if body == "" {
		return ToolCall{}, fmt.Errorf("the tool call is empty")
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(body))
	if err := dec.Decode(&raw); err != nil {
		return ToolCall{}, fmt.Errorf("the tool call is not a JSON object: %v", err)
	}
	if dec.More() {
		return ToolCall{}, fmt.Errorf("the tool call has text after its JSON object (one call per turn)")
	}
	var name string
	if err := json.Unmarshal(raw["name"], &name); err != nil || name == "" {
		return ToolCall{}, fmt.Errorf(`the tool call needs a "name" string`)
	}
	args, ok := raw["arguments"]
	if !ok {
		return ToolCall{}, fmt.Errorf(`the tool call to %s has no "arguments"`, name)
	}
	if args = bytes.TrimSpace(args); len(args) > 0 && args[0] == '"' {
		var inner string
		if err := json.Unmarshal(args, &inner); err == nil {
			args = json.RawMessage(strings.TrimSpace(inner))
		}
	}
	if len(args) == 0 || args[0] != '{' || !json.Valid(args) {
		return ToolCall{}, fmt.Errorf(`the "arguments" of the call to %s must be a JSON object`, name)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, args); err != nil {
		return ToolCall{}, fmt.Errorf(`the "arguments" of the call to %s: %v`, name, err)
	}
	return ToolCall{Name: name, Arguments: compact.Bytes()}, nil
}
