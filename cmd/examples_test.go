package cmd

import (
	"os"
	"path/filepath"
	"testing"

	"gorstar/config"
)

// The example configurations parse and validate, and quickstart.toml is exactly the embedded
// default (regenerate it with `gorstar config show > examples/quickstart.toml`).
func TestExampleConfigs(t *testing.T) {
	quick := filepath.Join("..", "examples", "quickstart.toml")
	paper := filepath.Join("..", "examples", "rstar2-14b.toml")
	for _, path := range []string{quick, paper} {
		if r := runCLI(t, "config", "check", "--json", path); r.Code != 0 || decodeJSON(t, r)["ok"] != true {
			t.Errorf("config check %s: exit %d: %s", path, r.Code, r.Stderr)
		}
	}
	show := runCLI(t, "config", "show")
	raw, err := os.ReadFile(quick)
	if err != nil || show.Code != 0 || string(raw) != show.Stdout {
		t.Errorf("%s differs from `gorstar config show` (regenerate it): %v", quick, err)
	}

	c, err := config.Load(paper)
	if err != nil {
		t.Fatal(err)
	}
	r := c.RL
	if r.PromptsPerStep != 512 || r.GroupSize != 16 || r.Oversample != 2 || r.LR != 1e-6 || r.WarmupSteps != 20 ||
		r.ClipLow != 0.2 || r.ClipHigh != 0.28 || len(r.Stages) != 3 {
		t.Fatalf("rl: %+v", r)
	}
	want := []config.Stage{
		{Name: "stage1", Steps: 300, MaxResponseTokens: 8192, MaxTurns: 10},
		{Name: "stage2", Steps: 85, MaxResponseTokens: 12288, MaxTurns: 10},
		{Name: "stage3", Steps: 125, MaxResponseTokens: 12288, MaxTurns: 15, HardOnly: true, ResetOptimizer: true},
	}
	for i, s := range r.Stages {
		if s != want[i] {
			t.Errorf("stage %d: %+v, want %+v", i, s, want[i])
		}
	}
	if c.Eval.Samples != 16 || c.Eval.Temperature != 0.6 || c.SFT.LR != 5e-6 || len(c.Rollout.Endpoints) == 0 {
		t.Errorf("eval %+v, sft lr %v, endpoints %v", c.Eval, c.SFT.LR, c.Rollout.Endpoints)
	}
}
