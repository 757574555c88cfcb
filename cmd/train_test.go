package cmd

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gorstar/internal/testenv"
	"gorstar/train"
)

// shortTrain are --set overrides that cut the quickstart to seconds while every stage still runs.
var shortTrain = []string{
	"data.synth.train=16", "data.synth.eval=4", "data.synth.sft=16", "model.copy_steps=10", "sft.epochs=1", "sft.batch_size=8",
	"rl.prompts_per_step=2", "rl.group_size=2", "rl.oversample=1", "rl.hard_only_samples=2", "rl.hard_only_pool=4",
	"rl.stages.0.steps=1", "rl.stages.1.steps=1", "rl.stages.2.steps=1", "rl.stages.0.max_response_tokens=64",
	"rl.stages.1.max_response_tokens=64", "rl.stages.2.max_response_tokens=64",
	"eval.samples=1", "eval.max_tokens=64", "exec.workers=2",
}

func shortTrainArgs(args ...string) []string {
	for _, s := range shortTrain {
		args = append(args, "--set", s)
	}
	return append(args, "--threads", "2")
}

// gorstar train --json through every stage: the final eval with "sft_eval" and "stages"; then
// --only eval-stage2 redoes that evaluation alone, and the table is printed.
func TestTrainCommandJSON(t *testing.T) {
	testenv.Short(t, "the whole pipeline")
	run := filepath.Join(t.TempDir(), "run")
	r := runCLI(t, shortTrainArgs("train", "--run-dir", run, "--json")...)
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
	}
	m := decodeJSON(t, r)
	stages, _ := m["stages"].([]any)
	sftEval, _ := m["sft_eval"].(map[string]any)
	if m["stage"] != "stage3" || len(stages) != 3 || sftEval["stage"] != "sft" || m["avg_pass@1"] == nil || m["tool_use_rate"] == nil {
		t.Fatalf("train --json: %v", m)
	}
	if err := os.Remove(train.Layout{Dir: run}.EvalSummary("stage2")); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, shortTrainArgs("train", "--run-dir", run, "--only", "eval-stage2")...)
	if r.Code != 0 || !strings.Contains(r.Stdout, "stage2") || !strings.Contains(r.Stderr, "== eval-stage2") ||
		strings.Contains(r.Stderr, "== rl") {
		t.Fatalf("--only eval-stage2: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(train.Layout{Dir: run}.EvalSummary("stage2")); err != nil {
		t.Fatal(err)
	}
}

// Bad input to gorstar train, run as the binary: one stderr line, exit 1, before any work (no
// file is created).
func TestTrainBadInput(t *testing.T) {
	testenv.Short(t, "the whole pipeline")
	shared := t.TempDir()
	busy := filepath.Join(shared, "busy")
	lock, err := train.AcquireLock(busy) // this test process holds it while the binary tries
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	runBad(t, shared, []badCase{
		{args: []string{"train", "--config", "p.toml"}, files: map[string]string{"p.toml": "[rl]\nlr = 1e-6\nlrr = 1\n"},
			want: `p.toml:3: unknown key "rl.lrr"`},
		{args: []string{"train", "--config", "p.toml"}, files: map[string]string{"p.toml": "[sft]\nepochs = 'three'\n"},
			want: "p.toml:2"},
		{args: []string{"train", "--set", "data.train=missing.jsonl"}, want: "data.train: missing.jsonl does not exist"},
		{args: []string{"train", "--set", "rl.stages.2.data=hard.parquet"}, want: "rl.stages.2.data: hard.parquet does not exist"},
		{args: []string{"train", "--only", "rl"}, want: "stage rl needs runs/quickstart/sft/config.json, which stage sft writes"},
		{args: []string{"train", "--only", "bogus"}, want: `no stage "bogus"; the stages are data, init, sft, eval-sft, rl`},
		{args: []string{"train", "--from", "sft", "--only", "rl"}, want: "give --from or --only, not both"},
		{args: []string{"train", "extra"}, want: `unexpected argument "extra"`},
		{args: []string{"train", "--run-dir", busy}, want: "is in use by process " + itoa(os.Getpid())},
		{args: []string{"train", "--set", `exec.endpoints=["http://127.0.0.1:1"]`},
			want: "exec.endpoints: none of the 1 servers answers (http://127.0.0.1:1"},
	})
}

func itoa(n int) string { return strconv.Itoa(n) }
