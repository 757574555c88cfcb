package rollout_test

import (
	"context"
	"fmt"

	"gorstar/chat"
	"gorstar/pytool"
	"gorstar/rollout"
)

// One question to a model that makes a tool call the loop refuses (an unknown tool) and then
// answers: the refusal is the text a rollout would give the model. Without Tools, the call would
// be shown and end the answer; with a pytool.Pool, a python call runs in the sandbox.
func ExampleConversation() {
	turns := []string{
		"<reason>let me compute\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"code\": \"6*7\"}}\n</tool_call>",
		"<reason>6*7 is 42\n<answer>\\boxed{42}</answer>",
	}
	// A model stands here: the engine or an endpoint writes each turn's text.
	reply := func(ctx context.Context, msgs []chat.Message) (chat.Message, *chat.ParsedToolCall, error) {
		text := turns[0]
		turns = turns[1:]
		msg, call := rollout.AssistantText(text)
		return msg, call, nil
	}
	conv := &rollout.Conversation{Tools: noSandbox{}, MaxTurns: 4, ToolTextChars: 256}
	err := conv.Ask(context.Background(), "what is 6*7?", reply, func(text string) { fmt.Println("[tool]", text) })
	if err != nil {
		fmt.Println(err)
		return
	}
	msgs := conv.Conversations()[0]
	fmt.Println(len(msgs), "messages; the last:", msgs[len(msgs)-1].Content)
	// Output:
	// [tool] Error: unknown tool "calculator"; the tools are: python.
	// 4 messages; the last: <reason>6*7 is 42
	// <answer>\boxed{42}</answer>
}

// noSandbox stands in for a pytool.Pool in the example: the refused call never reaches it.
type noSandbox struct{}

func (noSandbox) Run(context.Context, pytool.Call) pytool.Result {
	return pytool.Result{Status: pytool.StatusInternal}
}

func (noSandbox) RunBatch(_ context.Context, calls []pytool.Call) []pytool.Result {
	return make([]pytool.Result, len(calls))
}
