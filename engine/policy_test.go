package engine

import (
	"encoding/json"
	"testing"

	"gorstar/chat"
	"gorstar/internal/testmodel"
)

// A model directory loads into a policy that renders a prompt with the Python tool and generates
// an assistant turn that stops at the end of turn.
func TestLoadPolicyGenerates(t *testing.T) {
	p, err := LoadPolicy(testmodel.TinyDir(t), PolicyOptions{Primer: "<reason>", Engine: Options{KVTokens: 4096, MaxSeqs: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Template == nil || p.Engine.Options().Tokenizer != p.Tokenizer {
		t.Fatalf("policy %+v", p)
	}
	r, err := p.Renderer([]json.RawMessage{chat.PythonTool})
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := r.RenderPrompt([]chat.Message{{Role: chat.RoleUser, Content: "Compute 2 + 2."}})
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, p.Engine, []Request{{Prompt: prompt, MaxTokens: 8, StopTokens: r.EndOfTurn()}})
	if len(out[0].Tokens) == 0 {
		t.Error("no tokens generated")
	}
}

func TestLoadPolicyMissingDir(t *testing.T) {
	if _, err := LoadPolicy(t.TempDir(), PolicyOptions{}); err == nil {
		t.Error("an empty directory loaded")
	}
}
