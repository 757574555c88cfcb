package chat_test

import (
	"fmt"

	"gorstar/chat"
)

func ExampleParseToolCall() {
	turn := `Let me compute. <tool_call>{"name": "python", "arguments": {"code": "print(6*7)"}}</tool_call>`
	p, found := chat.ParseToolCall(turn)
	fmt.Println(found, p.Call.Name, string(p.Call.Arguments), p.Error == "")

	// A malformed call is not an error of the rollout: its description goes back to the model.
	p, _ = chat.ParseToolCall(`<tool_call>{"name": "python", "arguments": </tool_call>`)
	fmt.Println(p.Error != "")
	// Output:
	// true python {"code":"print(6*7)"} true
	// true
}
