package cmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"gorstar/internal/stats"
	"gorstar/internal/testenv"

	"github.com/urfave/cli/v2"
)

func TestGenerateBench(t *testing.T) {
	testenv.Short(t, "a bench run as a test")
	app := &cli.App{Flags: globalFlags(), Writer: &bytes.Buffer{}, Action: func(c *cli.Context) error {
		o, err := globalOptions(c)
		if err != nil {
			return err
		}
		return generateBench(c, o, "", "tiny", 2, 4, 3, 1, false)
	}}
	var out bytes.Buffer
	app.Writer = &out
	if err := app.Run([]string{"x", "--json"}); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Generate []generateRow `json:"generate"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Generate) != 1 || res.Generate[0].TokensPerS <= 0 {
		t.Fatalf("output %s: %v", out.String(), err)
	}
}

// --repeat N: every run's figure listed and the row's the median of them.
func TestGenerateBenchRepeat(t *testing.T) {
	testenv.Short(t, "a bench run as a test")
	r := runCLI(t, "model", "bench", "--generate", "--preset", "tiny", "--batch", "2", "--prompt-len", "4", "--new-tokens", "3", "--repeat", "3", "--json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var res struct {
		Generate []generateRow `json:"generate"`
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
