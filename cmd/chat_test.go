package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"gorstar/chat"
	"gorstar/internal/testenv"
	"gorstar/pytool"
	"gorstar/rollout"
)

func TestChatWithLocalModel(t *testing.T) {
	dir := initTiny(t)
	r := runCLIWith(context.Background(), "2+2?\n/reset\nagain\n", "chat", "--model", dir, "--no-tools",
		"--max-turn-tokens", "4", "--quiet", "--seed", "1")
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	if strings.Count(r.Stdout, "<reason>") != 2 || !strings.Contains(r.Stdout, "(new conversation)") {
		t.Errorf("output %q", r.Stdout)
	}
	if r := runCLI(t, "chat", "--quiet"); r.Code != 1 {
		t.Errorf("chat without --model or --endpoint: %+v", r)
	}
}

// scriptedModel stands in for a model: it answers each turn with the next text.
type scriptedModel struct{ texts []string }

func (s *scriptedModel) turn(_ context.Context, _ []chat.Message, out io.Writer) (chat.Message, *chat.ParsedToolCall, error) {
	text := s.texts[0]
	s.texts = s.texts[1:]
	fmt.Fprint(out, text)
	msg, call := rollout.AssistantText(text)
	return msg, call, nil
}

// A tool call in an assistant turn runs in the sandbox and its output goes back to the model.
func TestChatLoopRunsToolCalls(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	cfg := pytool.DefaultOptions()
	cfg.Workers = 1
	pool, err := pytool.NewPool(context.Background(), cfg)
	if err != nil {
		testenv.Sandbox(t, err)
	}
	defer pool.Close()
	call, _ := json.Marshal(map[string]any{"name": "python", "arguments": map[string]string{"code": "print(6*7)"}})
	m := &scriptedModel{texts: []string{"<reason>compute\n<tool_call>\n" + string(call) + "\n</tool_call>", "<reason>it is 42"}}
	var out bytes.Buffer
	conv := &rollout.Conversation{Tools: pool, MaxTurns: 4, ToolTextChars: 256}
	err = chatLoop(context.Background(), m, conv, strings.NewReader("what is 6*7?\n"), &out, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "[tool] 42") || !strings.Contains(out.String(), "it is 42") {
		t.Errorf("output %q", out.String())
	}
}
