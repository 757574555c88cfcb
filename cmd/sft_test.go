package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/internal/testenv"
)

// A tiny SFT run end to end into a run directory's sft/, then the run's report.
func TestSFTCommandAndReport(t *testing.T) {
	testenv.Short(t, "the whole pipeline")
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	mustRun := func(args ...string) cliResult {
		t.Helper()
		r := runCLI(t, args...)
		if r.Code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, r.Code, r.Stderr)
		}
		return r
	}
	mustRun("model", "init", "--preset", "tiny", "--out", p("m"), "--quiet")
	mustRun("data", "synth", "--sft", "--n", "12", "--out", p("conv.parquet"), "--quiet")
	run := p("run")
	res := decodeJSON(t, mustRun("sft", "--model", p("m"), "--data", p("conv.parquet"), "--out", filepath.Join(run, "sft"),
		"--epochs", "1", "--until-eval-loss", "0", "--batch-size", "4", "--eval-fraction", "0.2", "--lr", "1e-3", "--threads", "2", "--json"))
	// 12 conversations, 2 held out (0.2, rounded by sft), 10 trained in steps of 4: 3 steps.
	if res["steps"] != 3.0 || res["tokens"].(float64) <= 0 || res["train_loss"].(float64) <= 0 || res["eval_loss"].(float64) <= 0 {
		t.Errorf("sft --json: %v", res)
	}
	for _, f := range []string{"config.json", "model.safetensors", "metrics.jsonl"} {
		if _, err := os.Stat(filepath.Join(run, "sft", f)); err != nil {
			t.Errorf("sft --out lacks %s: %v", f, err)
		}
	}

	r := decodeJSON(t, mustRun("report", "--json", run))
	page, err := os.ReadFile(filepath.Join(run, "report.html"))
	if err != nil || r["report"] != filepath.Join(run, "report.html") {
		t.Fatalf("report: %v, %v", r, err)
	}
	if !strings.Contains(string(page), `id="chart-sft-loss"`) || !strings.Contains(string(page), "No RL metrics yet") {
		t.Errorf("the report of an SFT-only run should chart its loss and say RL has not run")
	}
}

func TestSFTBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	model := filepath.Join(dir, "m")
	if r := runCLI(t, "model", "init", "--preset", "tiny", "--out", model, "--quiet"); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	conv := filepath.Join(dir, "conv.jsonl")
	if r := runCLI(t, "data", "synth", "--sft", "--n", "2", "--out", conv, "--quiet"); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing data", []string{"sft", "--model", model, "--data", filepath.Join(dir, "nope.parquet"), "--out", filepath.Join(dir, "o1")}, "nope.parquet"},
		{"out is a file", []string{"sft", "--model", model, "--data", conv, "--out", file}, file},
		{"no model flag", []string{"sft", "--data", conv, "--out", filepath.Join(dir, "o2")}, "--model is required"},
		{"bad overlong", []string{"sft", "--model", model, "--data", conv, "--out", filepath.Join(dir, "o3"), "--overlong", "wrap"}, "sft.overlong"},
		{"bench without a model", []string{"sft", "bench"}, "exactly one of --model and --preset"},
		{"report of no directory", []string{"report", filepath.Join(dir, "norun")}, "norun"},
		{"report without argument", []string{"report"}, "RUN_DIR"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{c.args[0], "--threads", "2"}, c.args[1:]...)
			r := runCLI(t, args...)
			lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
			if r.Code != 1 || len(lines) != 1 || !strings.Contains(r.Stderr, c.want) {
				t.Fatalf("want exit 1 and one line naming %q, got %d:\n%s", c.want, r.Code, r.Stderr)
			}
		})
	}
	for _, o := range []string{"o1", "o2", "o3"} {
		if _, err := os.Stat(filepath.Join(dir, o)); err == nil {
			t.Errorf("a refused run left %s behind", o)
		}
	}
}

func TestSFTBench(t *testing.T) {
	testenv.Short(t, "a bench run as a test")
	r := runCLI(t, "sft", "bench", "--preset", "tiny", "--steps", "1", "--conversations", "8", "--batch-tokens", "1024", "--threads", "2", "--json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	m := decodeJSON(t, r)
	if m["tokens_per_step"] != 1024.0 || m["sft_tokens_per_s"].(float64) <= 0 || m["train_tokens_per_s"].(float64) <= 0 ||
		m["ratio"].(float64) <= 0 || m["model"] != "tiny" {
		t.Errorf("sft bench --json: %v", m)
	}
}
