package chat

import (
	"encoding/json"
	"reflect"
	"testing"
)

// A tool call reads from gorstar's form (arguments as an object or a string) and from OpenAI's,
// keeping the arguments' text byte for byte.
func TestToolCallJSONForms(t *testing.T) {
	const args = `{"code": "print(1)", "input": ""}`
	for _, in := range []string{
		`{"name": "python", "arguments": {"code": "print(1)", "input": ""}}`,
		`{"name": "python", "arguments": "{\"code\": \"print(1)\", \"input\": \"\"}"}`,
		`{"type": "function", "function": {"name": "python", "arguments": "{\"code\": \"print(1)\", \"input\": \"\"}"}}`,
	} {
		var tc ToolCall
		if err := json.Unmarshal([]byte(in), &tc); err != nil {
			t.Fatal(err)
		}
		if tc.Name != "python" || string(tc.Arguments) != args {
			t.Errorf("%s → %+v", in, tc)
		}
	}
	var none ToolCall
	if err := json.Unmarshal([]byte(`{"name": "f"}`), &none); err != nil || string(none.Arguments) != "{}" {
		t.Errorf("missing arguments → %+v, %v", none, err)
	}
}

// A conversation written as JSON (arguments as a string, '<' unescaped) reads back unchanged.
func TestConversationJSONRoundTrip(t *testing.T) {
	c := Conversation{ID: "c1", Messages: []Message{
		{Role: RoleUser, Content: "2 < 3?"},
		{Role: RoleAssistant, Content: "<reason>check", ToolCalls: []ToolCall{PythonCall("print(2 < 3)", "")}},
		{Role: RoleTool, Name: PythonToolName, Content: "True"},
	}}
	b, err := marshalNoEscape(c) // as package data writes JSONL
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"c1","messages":[{"role":"user","content":"2 < 3?"},` +
		`{"role":"assistant","content":"<reason>check","tool_calls":[{"name":"python","arguments":"{\"code\": \"print(2 < 3)\", \"input\": \"\"}"}]},` +
		`{"role":"tool","content":"True","name":"python"}]}`
	if string(b) != want {
		t.Errorf("JSON\n%s\nwant\n%s", b, want)
	}
	var back Conversation
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("read back %+v, %v", back, err)
	}
	var null Message
	if err := json.Unmarshal([]byte(`{"role": "assistant", "content": null}`), &null); err != nil || null.Content != "" {
		t.Errorf("null content → %+v, %v", null, err)
	}
}
