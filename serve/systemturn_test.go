package serve

import (
	"encoding/json"
	"strings"
	"testing"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/engine"
	"gorstar/internal/testmodel"
)

// The system turn (instructions and the Python tool's schema) that SFT data is rendered with is the
// one a served chat request with the Python tool gets, byte for byte, and the schema appears once.
func TestSFTAndServedSystemTurnAreTheSame(t *testing.T) {
	m, tok := testmodel.Model(t)
	eng, err := engine.New(m, engine.Options{KVTokens: 1024, MaxSeqs: 1, Tokenizer: tok})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv, err := New(eng, tok, Options{ModelName: "tiny", Primer: "<reason>"})
	if err != nil {
		t.Fatal(err)
	}

	// SFT: a `data synth --sft` conversation, rendered the way training renders it.
	it := data.ArithItem{ID: "arith-1-1", Expr: "4821 * 739", Answer: "3562719"}
	r, err := chat.NewRenderer(tok, chat.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	sft, err := r.Text(it.Conversation().Messages, false)
	if err != nil {
		t.Fatal(err)
	}

	// serve: an OpenAI client passing the Python tool, through the chat-completions path.
	body, _ := json.Marshal(map[string]any{
		"model":    "tiny",
		"messages": []map[string]string{{"role": "user", "content": "Compute 4821 * 739."}},
		"tools":    []json.RawMessage{chat.PythonTool},
	})
	var req chatRequest
	if err := decodeBody(body, &req); err != nil {
		t.Fatal(err)
	}
	ids, _, err := srv.chatPrompt(&req)
	if err != nil {
		t.Fatal(err)
	}
	served := tok.Decode(ids)

	systemTurn := func(text string) string {
		end := strings.Index(text, "<|im_end|>\n")
		if !strings.HasPrefix(text, "<|im_start|>system\n") || end < 0 {
			t.Fatalf("no leading system turn in %q", text)
		}
		return text[:end]
	}
	sys := systemTurn(sft)
	if got := systemTurn(served); got != sys {
		t.Errorf("served system turn\n%s\nSFT system turn\n%s", got, sys)
	}
	if strings.Count(sft, "<|im_start|>system") != 1 || strings.Count(sft, `"required": ["code"]`) != 1 {
		t.Errorf("the SFT conversation shows the system turn or the schema more than once:\n%s", sft)
	}
	// The schema the model sees is chat.PythonTool's (in Python's json.dumps spacing, as here).
	if !strings.Contains(sys, "<tools>\n"+string(chat.PythonTool)+"\n</tools>") {
		t.Errorf("system turn lacks chat.PythonTool:\n%s", sys)
	}
	// And the prompt that follows is the SFT conversation's up to the assistant's text.
	if !strings.HasPrefix(sft, strings.TrimSuffix(served, "<reason>")) {
		t.Errorf("served prompt\n%q\nis not a prefix of the SFT text\n%q", served, sft)
	}
}
