package rl_test

import (
	"context"
	"encoding/json"
	"testing"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/internal/testenv"
	"gorstar/internal/tooloptions"
	"gorstar/pytool"
)

// The error-recovery SFT conversations show, after the failed call, exactly the text the sandbox
// returns for that code, so SFT teaches what RL will see.
func TestRecoveryToolTextIsTheSandboxs(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	cfg := tooloptions.From(testOptions("", "", "").Exec)
	pool, err := pytool.NewPool(context.Background(), cfg)
	skipWithoutSandbox(t, err)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	gen, err := data.NewArith(data.DefaultArith(), 9)
	if err != nil {
		t.Fatal(err)
	}
	for k := range 4 {
		conv := gen.Next().RecoveryConversation(k%2 == 1)
		for i, m := range conv.Messages {
			if m.Role != chat.RoleTool {
				continue
			}
			var args struct{ Code, Input string }
			if err := json.Unmarshal(conv.Messages[i-1].ToolCalls[0].Arguments, &args); err != nil {
				t.Fatal(err)
			}
			res := pool.Run(context.Background(), pytool.Call{Code: args.Code, Stdin: args.Input})
			if got := res.ToolText(256); got != m.Content {
				t.Errorf("%s: the sandbox shows %q, the conversation %q", args.Code, got, m.Content)
			}
		}
	}
}
