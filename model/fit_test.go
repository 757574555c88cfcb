package model

import (
	"fmt"
	"strings"
	"testing"

	"gorstar/internal/usererr"
)

// CheckFit passes a step within the budget and refuses a larger one with one line naming the
// fewest recomputed layers that fit and the largest pass that fits; both suggestions do fit and
// one layer fewer / 64 tokens more do not.
func TestCheckFit(t *testing.T) {
	c := smallPresetConfig(t)
	const tokens = 4096
	mem := func(tok, r int) int64 { return c.StepMemory(BF16, 1, tok, r, 0).Total }
	o := FitOptions{Precision: BF16, Tokens: tokens, MinTokens: 256, What: "sft", TokensKey: "sft.micro_batch_tokens"}
	o.Budget = mem(tokens, 0)
	if err := c.CheckFit(o); err != nil {
		t.Fatalf("a step of exactly the budget refused: %v", err)
	}
	o.Budget = (mem(tokens, 0) + mem(tokens, c.NumHiddenLayers)) / 2
	err := c.CheckFit(o)
	if err == nil || !usererr.Is(err) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("want a one-line user error, got %v", err)
	}
	msg := err.Error()
	t.Log(msg)
	if !strings.Contains(msg, "activations "+GiB(c.StepMemory(BF16, 1, tokens, 0, 0).Activations)+", GEMM operands bf16") {
		t.Errorf("the refusal does not give the bf16 activations and how they are stored: %s", msg)
	}
	var r, tok int
	if _, e := fmtSscan(msg, "model.recompute_layers = ", &r); e != nil {
		t.Fatalf("no recompute suggestion: %s", msg)
	}
	if _, e := fmtSscan(msg, "sft.micro_batch_tokens to ", &tok); e != nil {
		t.Fatalf("no smaller pass: %s", msg)
	}
	if mem(tokens, r) > o.Budget || mem(tokens, r-1) <= o.Budget {
		t.Errorf("recompute %d: %d bytes, %d with one fewer, budget %d", r, mem(tokens, r), mem(tokens, r-1), o.Budget)
	}
	if tok < o.MinTokens || mem(tok, 0) > o.Budget || mem(tok+64, 0) <= o.Budget {
		t.Errorf("tokens %d: %d bytes, %d with 64 more, budget %d", tok, mem(tok, 0), mem(tok+64, 0), o.Budget)
	}
	o.Budget = c.StepMemory(BF16, 1, 1, 0, 0).Weights // not even the weights, gradients and optimizer
	if err := c.CheckFit(o); err == nil || !strings.Contains(err.Error(), "nothing fits") {
		t.Errorf("a budget below the weights: %v", err)
	}
}

func smallPresetConfig(t *testing.T) Config {
	t.Helper()
	c, err := Preset("small", 32000)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fmtSscan reads the integer after key in s.
func fmtSscan(s, key string, v *int) (int, error) {
	i := strings.Index(s, key)
	if i < 0 {
		return 0, usererr.New("no %q", key)
	}
	return fmt.Sscan(s[i+len(key):], v)
}
