package chat

import (
	"encoding/json"
	"gorstar/internal/plainjson"
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
	b, err := plainjson.Marshal(c) // as package data writes JSONL
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

// An assistant message's weight is written as OpenAI's fine-tuning format writes it, "weight": 0
// or 1 after the other fields, and only when set; a null reads as none, a non-integer is refused.
func TestMessageWeightJSON(t *testing.T) {
	msgs := []Message{
		{Role: RoleAssistant, Content: "a", Weight: Weight(0)},
		{Role: RoleAssistant, Content: "b", Weight: Weight(1)},
		{Role: RoleAssistant, Content: "c"},
	}
	b, err := plainjson.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"assistant","content":"a","weight":0},{"role":"assistant","content":"b","weight":1},{"role":"assistant","content":"c"}]`
	if string(b) != want {
		t.Errorf("JSON\n%s\nwant\n%s", b, want)
	}
	var back []Message
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, msgs) {
		t.Errorf("read back %+v, %v", back, err)
	}
	if back[0].InLoss() || !back[1].InLoss() || !back[2].InLoss() {
		t.Errorf("InLoss of weights 0, 1, none: %v %v %v", back[0].InLoss(), back[1].InLoss(), back[2].InLoss())
	}
	var null Message
	if err := json.Unmarshal([]byte(`{"role": "assistant", "content": "x", "weight": null}`), &null); err != nil || null.Weight != nil {
		t.Errorf("null weight → %+v, %v", null, err)
	}
	for _, w := range []string{`0.5`, `"0"`, `true`, `[1]`} {
		var m Message
		err := json.Unmarshal([]byte(`{"role": "assistant", "content": "x", "weight": `+w+`}`), &m)
		if err == nil || err.Error() != "weight: expected 0 or 1, got "+w {
			t.Errorf("weight %s: %v", w, err)
		}
	}
}

func TestCheckWeight(t *testing.T) {
	for _, c := range []struct {
		m    Message
		want string
	}{
		{Message{Role: RoleAssistant}, ""},
		{Message{Role: RoleAssistant, Weight: Weight(0)}, ""},
		{Message{Role: RoleAssistant, Weight: Weight(1)}, ""},
		{Message{Role: RoleAssistant, Weight: Weight(2)}, "expected 0 or 1, got 2"},
		{Message{Role: RoleAssistant, Weight: Weight(-1)}, "expected 0 or 1, got -1"},
		{Message{Role: RoleTool, Weight: Weight(0)}, `only assistant messages carry a weight, this one is "tool"`},
		{Message{Role: RoleUser, Weight: Weight(1)}, `only assistant messages carry a weight, this one is "user"`},
	} {
		got := ""
		if err := c.m.CheckWeight(); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%+v: %q, want %q", c.m, got, c.want)
		}
	}
}
