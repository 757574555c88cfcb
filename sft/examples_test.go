package sft

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/internal/usererr"
	"gorstar/tokenizer"
)

func byteRenderer(t *testing.T, template string) (*chat.Renderer, *tokenizer.Tokenizer) {
	return byteRendererTB(t, template)
}

func byteRendererTB(t testing.TB, template string) (*chat.Renderer, *tokenizer.Tokenizer) {
	t.Helper()
	tok, err := tokenizer.ByteLevelChat()
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chat.LoadTemplate(template)
	if err != nil {
		t.Fatal(err)
	}
	opts := chat.DefaultOptions()
	opts.Template = tmpl
	r, err := chat.NewRenderer(tok, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, tok
}

// The loss falls exactly on what the assistant wrote: its text, its tool call and each closing
// <|im_end|>; never on the system prompt, the user's problem, the tool's output or the headers.
func TestWeightsCoverAssistantTokensOnly(t *testing.T) {
	for _, template := range []string{"rstar2", "chatml"} {
		t.Run(template, func(t *testing.T) {
			r, tok := byteRenderer(t, template)
			path := synthConversations(t, 3, 7, "c.jsonl")
			ds, err := LoadExamples(path, r, 4096, OverlongTruncate)
			if err != nil {
				t.Fatal(err)
			}
			convs := readConvs(t, path)
			for k, e := range ds.Examples {
				b, _ := buildBatch(ds.Examples, []row{{k}}, 0.5)
				var got strings.Builder
				for i, w := range b.Weights {
					switch {
					case w == 0.5:
						got.WriteString(tok.Decode(b.IDs[i : i+1]))
					case w != 0:
						t.Fatalf("weight %g at %d, want 0 or 0.5", w, i)
					}
				}
				msgs := convs[k].Messages
				call := `<tool_call>` + "\n" + `{"name": "python", "arguments": ` + string(msgs[1].ToolCalls[0].Arguments) + "}\n</tool_call>"
				want := msgs[1].Content + "\n" + call + "<|im_end|>" + msgs[3].Content + "<|im_end|>"
				if got.String() != want {
					t.Errorf("row %d: weighted text\n%q\nwant\n%q", e.Row, got.String(), want)
				}
				if n := e.Targets(); float32(n)*0.5 != sum(b.Weights) {
					t.Errorf("row %d: %d targets but weights sum to %g", e.Row, n, sum(b.Weights))
				}
			}
		})
	}
}

func sum(w []float32) float32 {
	s := float32(0)
	for _, v := range w {
		s += v
	}
	return s
}

func TestOverlongPolicy(t *testing.T) {
	r, _ := byteRenderer(t, "chatml")
	path := synthConversations(t, 4, 3, "c.parquet")
	full, err := LoadExamples(path, r, 1<<20, OverlongDrop)
	if err != nil {
		t.Fatal(err)
	}
	limit := len(full.Examples[0].IDs)
	for _, e := range full.Examples {
		limit = min(limit, len(e.IDs))
	}
	trunc, err := LoadExamples(path, r, limit, OverlongTruncate)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range trunc.Examples {
		if len(e.IDs) > limit || len(e.Mask) != len(e.IDs) {
			t.Fatalf("row %d: %d ids, %d mask after truncating to %d", e.Row, len(e.IDs), len(e.Mask), limit)
		}
	}
	drop, err := LoadExamples(path, r, limit, OverlongDrop)
	if err != nil {
		t.Fatal(err)
	}
	over := 0
	for _, e := range full.Examples {
		if len(e.IDs) > limit {
			over++
		}
	}
	if over == 0 {
		t.Fatal("the fixture's conversations all have one length")
	}
	if trunc.Truncated != over || trunc.Dropped != 0 || drop.Dropped != over || len(drop.Examples) != 4-over {
		t.Errorf("over %d: truncate counted %d/%d, drop counted %d and kept %d", over, trunc.Truncated, trunc.Dropped, drop.Dropped, len(drop.Examples))
	}
	if _, err := LoadExamples(path, r, 8, OverlongDrop); !usererr.Is(err) {
		t.Errorf("everything dropped: got %v, want a user error", err)
	}
}

func TestBadConversations(t *testing.T) {
	call := `"tool_calls": [{"name": "python", "arguments": "{\"code\": \"print(1)\"}"}]`
	for _, tc := range []struct{ name, line, want string }{
		{"starts with assistant", `{"id": "a", "messages": [{"role": "assistant", "content": "hi"}]}`, "row 2: messages[0].role"},
		{"arguments not JSON", `{"id": "a", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [{"name": "python", "arguments": "{code: 1"}]}]}`, "row 2: messages[1].tool_calls[0].arguments"},
		{"arguments not an object", `{"id": "a", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [{"name": "python", "arguments": "[1]"}]}]}`, "row 2: messages[1].tool_calls[0].arguments"},
		{"tool without call", `{"id": "a", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "x"}, {"role": "tool", "content": "1"}]}`, "row 2: messages[2]: a tool message without a preceding"},
		{"two answers to one call", `{"id": "a", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", ` + call + `}, {"role": "tool", "content": "1"}, {"role": "tool", "content": "1"}]}`, "row 2: messages[3]: a tool message"},
		{"unknown role", `{"id": "a", "messages": [{"role": "user", "content": "q"}, {"role": "robot", "content": "x"}]}`, "row 2: messages[1].role"},
		{"no assistant", `{"id": "a", "messages": [{"role": "user", "content": "q"}]}`, "row 2: messages: no assistant"},
		{"empty", `{"id": "a", "messages": []}`, "row 2: messages: empty"},
		{"only weight 0", `{"id": "a", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "x", "weight": 0}]}`, "row 2: messages: no assistant turn to learn from (every one has weight 0)"},
		{"weight 2", `{"id": "a", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "x", "weight": 2}]}`, ":2: messages[1].weight: expected 0 or 1, got 2"},
		{"weight on a tool message", `{"id": "a", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", ` + call + `}, {"role": "tool", "content": "1", "weight": 1}, {"role": "assistant", "content": "x"}]}`, ":2: messages[2].weight: only assistant messages carry a weight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := byteRenderer(t, "rstar2")
			good := `{"id": "ok", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", ` + call + `}, {"role": "tool", "content": "1"}, {"role": "assistant", "content": "done"}]}`
			path := filepath.Join(t.TempDir(), "c.jsonl")
			if err := os.WriteFile(path, []byte(good+"\n"+tc.line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadExamples(path, r, 4096, OverlongTruncate)
			if !usererr.Is(err) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want a one-line user error containing %q", err, tc.want)
			}
		})
	}
	t.Run("empty table", func(t *testing.T) {
		r, _ := byteRenderer(t, "rstar2")
		path := filepath.Join(t.TempDir(), "c.parquet")
		w, err := data.CreateConversations(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadExamples(path, r, 4096, OverlongTruncate); !usererr.Is(err) || !strings.Contains(err.Error(), "no conversations") {
			t.Fatalf("got %v", err)
		}
	})
}

// In a masked recovery conversation the loss falls on the correction and the answer, never on the
// failed call of weight 0, which stays in the context.
func TestRecoveryTurnOutOfLoss(t *testing.T) {
	r, tok := byteRenderer(t, "rstar2")
	path := filepath.Join(t.TempDir(), "c.jsonl")
	if _, err := data.Synth(context.Background(), data.SynthOptions{Task: "arith", N: 3, Out: path, SFT: true,
		RecoveryShare: 1, RecoveryMasked: true, Seed: 7, Arith: data.DefaultArith()}); err != nil {
		t.Fatal(err)
	}
	ds, err := LoadExamples(path, r, 4096, OverlongTruncate)
	if err != nil || len(ds.Examples) != 3 {
		t.Fatalf("%d examples, %v", len(ds.Examples), err)
	}
	for _, e := range ds.Examples {
		var learnt strings.Builder
		for i, id := range e.IDs {
			if e.Mask[i] {
				learnt.WriteString(tok.Decode([]int32{id}))
			}
		}
		all := tok.Decode(e.IDs)
		if !strings.Contains(all, "print(result)") || strings.Contains(learnt.String(), "print(result)") ||
			!strings.HasPrefix(learnt.String(), "<reason>Print the expression itself.</reason>") || !strings.Contains(learnt.String(), "\\boxed{") {
			t.Errorf("row %d: in the loss\n%q", e.Row, learnt.String())
		}
	}
}

// The OpenAI form of a tool call (type/function, arguments as a string) trains like gorstar's own.
func TestOpenAIToolCallForm(t *testing.T) {
	r, _ := byteRenderer(t, "rstar2")
	line := map[string]any{"id": "x", "messages": []map[string]any{
		{"role": "user", "content": "q"},
		{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"type": "function", "id": "c1",
			"function": map[string]any{"name": "python", "arguments": `{"code": "print(2)", "input": ""}`}}}},
		{"role": "tool", "content": "2", "tool_call_id": "c1"},
		{"role": "assistant", "content": "<answer>\\boxed{2}</answer>"},
	}}
	js, _ := json.Marshal(line)
	path := filepath.Join(t.TempDir(), "c.jsonl")
	os.WriteFile(path, append(js, '\n'), 0o644)
	ds, err := LoadExamples(path, r, 4096, OverlongTruncate)
	if err != nil || len(ds.Examples) != 1 || ds.Examples[0].Targets() == 0 {
		t.Fatalf("got %+v, %v", ds, err)
	}
}

func readConvs(t *testing.T, path string) []chat.Conversation {
	t.Helper()
	c, err := data.ReadAllConversations(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
