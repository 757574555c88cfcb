package eval

import (
	"context"
	"strings"
	"testing"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/rollout"
	"gorstar/tokenizer"
)

// The prompt check drops a problem whose rollout prompt is longer than the limit, and keeps one
// at the limit exactly; without a rater nothing else is dropped.
func TestProblemCheckPromptTokens(t *testing.T) {
	tok, err := tokenizer.ByteLevelChat()
	if err != nil {
		t.Fatal(err)
	}
	r, err := chat.NewRenderer(tok, chat.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	short := data.Problem{ID: "s", Problem: "1+1?", Answer: "2"}
	long := data.Problem{ID: "l", Problem: strings.Repeat("a long question ", 20), Answer: "1"}
	ids, err := rollout.Prompt(r, short)
	if err != nil {
		t.Fatal(err)
	}
	pc := &ProblemCheck{Render: r, MaxPromptTokens: len(ids)}
	drop, err := pc.Check(context.Background(), []data.Problem{short, long})
	if err != nil {
		t.Fatal(err)
	}
	if len(drop) != 2 || drop[0] != "" || drop[1] != DropPromptTokens || pc.Rated != 0 {
		t.Errorf("drop %q, rated %d", drop, pc.Rated)
	}
}
