package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/model"
)

// sft refuses a run whose step does not fit model.memory_gib before the model loads: exit 1,
// one line with the recompute_layers value and the micro-batch that would fit, no output left.
func TestSFTRefusesStepThatDoesNotFit(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "m")
	if r := runCLI(t, "model", "init", "--preset", "tiny", "--out", m, "--quiet"); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	conv := filepath.Join(dir, "conv.jsonl")
	if r := runCLI(t, "data", "synth", "--sft", "--n", "2", "--out", conv, "--quiet"); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	cfg, err := model.LoadConfig(m)
	if err != nil {
		t.Fatal(err)
	}
	const tokens = 8192
	mem := func(r int) int64 { return cfg.StepMemory(model.BF16, 1, tokens, r, 0).Total }
	budget := float64(mem(0)+mem(cfg.NumHiddenLayers)) / 2 / (1 << 30)
	out := filepath.Join(dir, "out")
	r := runCLI(t, "sft", "--threads", "2", "--model", m, "--data", conv, "--out", out,
		"--set", "model.dtype=bf16", "--set", fmt.Sprintf("model.memory_gib=%g", budget),
		"--set", fmt.Sprintf("sft.micro_batch_tokens=%d", tokens), "--set", "sft.max_seq_len=2048", "--set", "sft.until_eval_loss=0")
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	if r.Code != 1 || len(lines) != 1 || !strings.Contains(r.Stderr, "model.recompute_layers = ") ||
		!strings.Contains(r.Stderr, "lower sft.micro_batch_tokens to ") {
		t.Fatalf("want exit 1 and one line with both suggestions, got %d:\n%s", r.Code, r.Stderr)
	}
	t.Log(lines[0])
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run left its --out behind")
	}
}
