package cmd

import (
	"encoding/json"
	"strings"
	"testing"

	"gorstar/bench"
	"gorstar/internal/stats"
	"gorstar/internal/testenv"
)

// --repeat N: every run's figure listed and the row's the median of them.
func TestGenerateBenchRepeat(t *testing.T) {
	testenv.Short(t, "a bench run as a test")
	r := runCLI(t, "model", "bench", "--generate", "--preset", "tiny", "--batch", "2", "--prompt-len", "4", "--new-tokens", "3", "--repeat", "3", "--json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var res struct {
		Generate []bench.GenerateRow `json:"generate"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || len(res.Generate) != 1 {
		t.Fatalf("output %s: %v", r.Stdout, err)
	}
	row := res.Generate[0]
	if len(row.Runs) != 3 || row.TokensPerS != stats.Median(row.Runs) || row.TorchRuns != nil {
		t.Errorf("row %+v: want 3 runs, their median, no PyTorch runs", row)
	}
	if r := runCLI(t, "model", "bench", "--generate", "--preset", "tiny", "--repeat", "0"); r.Code != 1 || !strings.Contains(r.Stderr, "--repeat") {
		t.Errorf("--repeat 0: exit %d, %q", r.Code, r.Stderr)
	}
}
