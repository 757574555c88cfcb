package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"gorstar/chat"
	"gorstar/openai"
	"gorstar/pytool"
)

// scriptedReply answers each assistant turn with the next text, as a model would write it.
func scriptedReply(texts ...string) Reply {
	return func(context.Context, []chat.Message) (chat.Message, *chat.ParsedToolCall, error) {
		if len(texts) == 0 {
			return chat.Message{}, nil, errors.New("no more turns")
		}
		msg, call := AssistantText(texts[0])
		texts = texts[1:]
		return msg, call, nil
	}
}

func chatCallText(t *testing.T, name string, args any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"name": name, "arguments": args})
	if err != nil {
		t.Fatal(err)
	}
	return "<reason>call\n<tool_call>\n" + string(b) + "\n</tool_call>"
}

// unreachable is a runner the test must not reach: calls the loop refuses never get to the sandbox.
type unreachable struct{ t *testing.T }

func (u unreachable) Run(context.Context, pytool.Call) pytool.Result {
	u.t.Fatal("a refused call reached the sandbox")
	return pytool.Result{}
}

func (u unreachable) RunBatch(ctx context.Context, calls []pytool.Call) []pytool.Result {
	return []pytool.Result{u.Run(ctx, calls[0])}
}

// An unknown tool, a call without code and a malformed call get a rollout's error texts back, and
// the model goes on after each.
func TestConversationRefusesAsTheLoop(t *testing.T) {
	c := &Conversation{Tools: unreachable{t}, MaxTurns: 5, System: "be brief"}
	var tools []string
	err := c.Ask(context.Background(), "6*7?", scriptedReply(
		chatCallText(t, "calculator", map[string]string{"code": "6*7"}),
		chatCallText(t, "python", map[string]string{"input": "x"}),
		"<reason>\n<tool_call>\n{\"name\": \"python\", \"arguments\": [1]}\n</tool_call>",
		"<reason>it is 42",
	), func(text string) { tools = append(tools, text) })
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 3 || tools[0] != `Error: unknown tool "calculator"; the tools are: python.` ||
		!strings.Contains(tools[1], `needs a non-empty "code" string argument`) || !strings.HasPrefix(tools[2], "Error") {
		t.Fatalf("tool responses %q", tools)
	}
	convs := c.Conversations()
	if len(convs) != 1 || len(convs[0]) != 9 || convs[0][0].Role != chat.RoleSystem || convs[0][8].Content != "<reason>it is 42" {
		t.Fatalf("conversation %+v", convs)
	}
	if m := convs[0][2]; len(m.ToolCalls) != 1 || m.ToolCalls[0].Name != "calculator" || m.Content != "<reason>call" {
		t.Errorf("assistant turn with a call: %+v", m)
	}
}

// A failed turn forgets its exchange; /reset keeps the conversation among those held; MaxTurns
// ends an answer without running its last call; no tools shows a call without running it.
func TestConversationTurns(t *testing.T) {
	c := &Conversation{Tools: unreachable{t}, MaxTurns: 1}
	if err := c.Ask(context.Background(), "hi", scriptedReply(), nil); err == nil || len(c.Conversations()) != 0 {
		t.Fatalf("failed turn: %v, %+v", err, c.Conversations())
	}
	if err := c.Ask(context.Background(), "hi", scriptedReply(chatCallText(t, "python", map[string]string{"code": "1"})), nil); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	c.Tools = nil
	c.MaxTurns = 3
	if err := c.Ask(context.Background(), "again", scriptedReply(chatCallText(t, "python", map[string]string{"code": "1"})), nil); err != nil {
		t.Fatal(err)
	}
	convs := c.Conversations()
	if len(convs) != 2 || len(convs[0]) != 2 || len(convs[1]) != 2 || convs[1][0].Content != "again" {
		t.Fatalf("conversations %+v", convs)
	}
}

// A call runs in the sandbox and its response goes back to the model.
func TestConversationRunsTheTool(t *testing.T) {
	c := &Conversation{Tools: testPool(t, 1), MaxTurns: 4, ToolTextChars: 256}
	var tools []string
	err := c.Ask(context.Background(), "6*7?", scriptedReply(chatCallText(t, "python", map[string]string{"code": "print(6*7)"}), "<reason>42"),
		func(text string) { tools = append(tools, text) })
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 || strings.TrimSpace(tools[0]) != "42" {
		t.Errorf("tool responses %q", tools)
	}
}

func TestServerToolCall(t *testing.T) {
	p := ServerToolCall(openai.ToolCall{Function: openai.FunctionCall{Name: "python", Arguments: `{"code": "1"}`}})
	if p.Error != "" || p.Call.Name != "python" || string(p.Call.Arguments) != `{"code": "1"}` {
		t.Errorf("well-formed: %+v", p)
	}
	if p := ServerToolCall(openai.ToolCall{Function: openai.FunctionCall{Name: "python", Arguments: "{"}}); p.Error == "" {
		t.Errorf("not JSON: %+v", p)
	}
	if p := ServerToolCall(openai.ToolCall{Function: openai.FunctionCall{Name: "python"}}); string(p.Call.Arguments) != "{}" {
		t.Errorf("empty arguments: %+v", p)
	}
}
