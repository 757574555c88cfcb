package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gorstar/internal/testenv"
	"gorstar/internal/testmodel"
	"gorstar/rollout"
)

// writeFile writes text to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A tiny random model rolls out two problems × 2 samples with the real engine and sandbox: the
// summary counts them and both trace files are written.
func TestRolloutWritesTraces(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	dir := t.TempDir()
	model := testmodel.TinyDir(t)
	problems := writeFile(t, dir, "p.jsonl", `{"problem":"What is 1+1?","answer":"2"}`+"\n"+`{"problem":"What is 2+3?","answer":"5"}`+"\n")
	out, jsonl := filepath.Join(dir, "t.parquet"), filepath.Join(dir, "t.jsonl")
	r := runCLI(t, "rollout", "--model", model, "--data", problems, "--samples", "2", "--out", out, "--jsonl", jsonl,
		"--max-response-tokens", "24", "--max-turns", "2", "--workers", "2", "--seed", "3", "--json")
	if r.Code != 0 && strings.Contains(r.Stderr, "sandbox") {
		testenv.Skip(t, "a Python sandbox", strings.TrimSpace(r.Stderr), "apt-get install bubblewrap, or allow unprivileged user namespaces")
	}
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	sum := decodeJSON(t, r)
	for _, k := range []string{"trajectories", "correct", "tool_calls", "failed_tool_calls", "truncated",
		"decode_tokens_per_s", "tool_wait_fraction", "tool_p50_ms", "tool_p99_ms"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("--json lacks %q: %s", k, r.Stdout)
		}
	}
	if sum["trajectories"] != float64(4) {
		t.Errorf("trajectories %v, want 4", sum["trajectories"])
	}
	lines, err := os.ReadFile(jsonl)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(lines), "\n"); n != 4 {
		t.Errorf("%d JSONL traces, want 4", n)
	}
	if st, err := os.Stat(out); err != nil || st.Size() == 0 {
		t.Errorf("parquet traces: %v", err)
	}
	// The Parquet traces export to JSONL, a trajectory per line with every column.
	exported := filepath.Join(dir, "exported.jsonl")
	if r := runCLI(t, "data", "export", "--in", out, "--out", exported); r.Code != 0 {
		t.Fatalf("export traces: %+v", r)
	}
	rows, _ := os.ReadFile(exported)
	if n := strings.Count(string(rows), "\n"); n != 4 || !strings.Contains(string(rows), `"loss_mask":[`) {
		t.Errorf("exported traces: %d lines: %.300s", n, rows)
	}
}

// Bad input ends with one line naming what is wrong, exit 1, and no output file.
func TestRolloutBadInput(t *testing.T) {
	dir := t.TempDir()
	model := testmodel.TinyDir(t)
	good := writeFile(t, dir, "p.jsonl", `{"problem":"What is 1+1?","answer":"2"}`+"\n")
	noProblem := writeFile(t, dir, "q.jsonl", `{"question":"What is 1+1?","answer":"2"}`+"\n")
	noAnswer := writeFile(t, dir, "n.jsonl", `{"problem":"What is 1+1?"}`+"\n")
	badTemplate := writeFile(t, dir, "bad.tmpl", "{{ bad template\n")
	noTok := filepath.Join(dir, "notok")
	if err := os.CopyFS(noTok, os.DirFS(model)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(noTok, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	down := "http://" + freeAddr(t)
	out := filepath.Join(dir, "t.parquet")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"table without a problem column", []string{"--model", model, "--data", noProblem}, `missing field "problem"`},
		{"problem without an answer", []string{"--model", model, "--data", noAnswer}, "no answer"},
		{"model without a tokenizer", []string{"--model", noTok, "--data", good}, "tokenizer.json"},
		{"template that does not parse", []string{"--model", model, "--data", good, "--template", badTemplate}, "bad.tmpl"},
		{"endpoint without a served model", []string{"--endpoint", "http://127.0.0.1:1", "--tokenizer", model, "--data", good}, "--served-model NAME"},
		{"endpoint without a tokenizer", []string{"--endpoint", "http://127.0.0.1:1", "--served-model", "tiny", "--data", good}, "--tokenizer DIR"},
		{"model and endpoint", []string{"--model", model, "--endpoint", "http://127.0.0.1:1", "--data", good}, "not both"},
		{"endpoint down", []string{"--endpoint", down, "--served-model", "tiny", "--tokenizer", model, "--data", good}, down},
		{"no model", []string{"--data", good}, "--model"},
		{"missing data", []string{"--model", model, "--data", filepath.Join(dir, "none.jsonl")}, "none.jsonl"},
		{"out folder missing", []string{"--model", model, "--data", good, "--out", filepath.Join(dir, "no", "t.parquet")}, "does not exist"},
	} {
		args := append([]string{"rollout", "--quiet", "--out", out}, tc.args...)
		r := runCLI(t, args...)
		if r.Code != 1 || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 || !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line with %q", tc.name, r.Code, r.Stderr, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: %s was written", tc.name, out)
		}
	}
}

// The same rollouts natively and through `gorstar serve` over HTTP (--endpoint): with one turn
// and the same seeds, the trajectories are the same token for token.
func TestRolloutThroughServe(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny")
	if r := runCLI(t, "model", "init", "--out", model, "--preset", "tiny"); r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	problems := writeFile(t, dir, "p.jsonl", `{"problem":"What is 1+1?","answer":"2"}`+"\n"+`{"problem":"What is 2+3?","answer":"5"}`+"\n")
	common := []string{"rollout", "--data", problems, "--samples", "3", "--max-response-tokens", "24", "--max-turns", "1",
		"--temperature", "0.8", "--workers", "2", "--seed", "5", "--json", "--quiet"}
	native := runCLI(t, append(common, "--model", model, "--out", filepath.Join(dir, "n.parquet"), "--jsonl", filepath.Join(dir, "n.jsonl"))...)
	if native.Code != 0 && strings.Contains(native.Stderr, "sandbox") {
		testenv.Skip(t, "a Python sandbox", strings.TrimSpace(native.Stderr), "apt-get install bubblewrap, or allow unprivileged user namespaces")
	}
	if native.Code != 0 {
		t.Fatalf("native: %+v", native)
	}
	url := startServe(t, model)
	remote := runCLI(t, append(common, "--endpoint", url, "--served-model", "tiny", "--tokenizer", model, "--concurrency", "4",
		"--out", filepath.Join(dir, "r.parquet"), "--jsonl", filepath.Join(dir, "r.jsonl"))...)
	if remote.Code != 0 {
		t.Fatalf("remote: %+v", remote)
	}
	if sum := decodeJSON(t, remote); sum["trajectories"] != float64(6) {
		t.Errorf("remote trajectories %v, want 6", sum["trajectories"])
	}
	a, b := readTraces(t, filepath.Join(dir, "n.jsonl")), readTraces(t, filepath.Join(dir, "r.jsonl"))
	if len(a) != 6 || len(b) != 6 {
		t.Fatalf("%d native and %d remote traces, want 6 each", len(a), len(b))
	}
	for i := range a {
		if !slices.Equal(a[i].PromptIDs, b[i].PromptIDs) || !slices.Equal(a[i].ResponseIDs, b[i].ResponseIDs) ||
			a[i].Finish != b[i].Finish || a[i].Seed != b[i].Seed {
			t.Errorf("trace %d differs:\nnative %+v\nremote %+v", i, a[i], b[i])
		}
	}
	// A served model the server does not list: one line naming what it lists.
	r := runCLI(t, append(common, "--endpoint", url, "--served-model", "nope", "--tokenizer", model,
		"--out", filepath.Join(dir, "x.parquet"))...)
	if r.Code != 1 || !strings.Contains(r.Stderr, `"nope"`) || !strings.Contains(r.Stderr, "tiny") || strings.Count(r.Stderr, "\n") != 1 {
		t.Errorf("unlisted model: %+v", r)
	}
}

func readTraces(t *testing.T, path string) []rollout.Trajectory {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []rollout.Trajectory
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var tr rollout.Trajectory
		if err := json.Unmarshal([]byte(line), &tr); err != nil {
			t.Fatal(err)
		}
		out = append(out, tr)
	}
	return out
}

// The bench runs end to end on a few rollouts and reports the fields.
func TestRolloutBenchJSON(t *testing.T) {
	testenv.Short(t, "a bench run as a test")
	r := runCLI(t, "rollout", "bench", "--preset", "tiny", "--tool-sleep", "1ms", "--trajectories", "8",
		"--concurrency", "4", "--threads", "2", "--json")
	if r.Code != 0 && strings.Contains(r.Stderr, "sandbox") {
		testenv.Skip(t, "a Python sandbox", strings.TrimSpace(r.Stderr), "apt-get install bubblewrap, or allow unprivileged user namespaces")
	}
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	res := decodeJSON(t, r)
	for _, k := range []string{"overlapped_s", "naive_s", "speedup", "decode_tokens_per_s", "engine_only_tokens_per_s"} {
		if v, ok := res[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v, want a positive number", k, res[k])
		}
	}
	// exec.priority = "auto" (the default): the tools run at idle priority beside the engine.
	if res["tool_priority"] != "idle" {
		t.Errorf("tool_priority = %v, want idle", res["tool_priority"])
	}
	// --role-words (the default): a tool turn around "1" is 16 tokens, as in Qwen3 but for <reason>.
	calls, appended := res["tool_calls"].(float64), res["appended_tokens"].(float64)
	if res["role_words"] != true || calls < 1 || res["failed_tool_calls"] == 0.0 && appended != 16*calls {
		t.Errorf("role_words %v, %v appended tokens for %v tool calls: want true and 16 a call", res["role_words"], appended, calls)
	}
}

// A rollout stopped midway (as by Ctrl-C) keeps its finished trajectories; the same command run
// again rolls out only the rest and writes the traces an uninterrupted run writes, token for
// token. Another command on the same --out is refused, naming what changed.
func TestRolloutResumesAfterInterrupt(t *testing.T) {
	testenv.Short(t, "runs the built binary and kills it")
	dir := t.TempDir()
	model := testmodel.TinyDir(t)
	var lines strings.Builder
	for i := range 6 {
		fmt.Fprintf(&lines, `{"problem":"What is %d+%d?","answer":"%d"}`+"\n", i, i+1, 2*i+1)
	}
	problems := writeFile(t, dir, "p.jsonl", lines.String())
	args := func(out string) []string {
		return []string{"rollout", "--model", model, "--data", problems, "--samples", "4", "--out", out,
			"--jsonl", strings.TrimSuffix(out, ".parquet") + ".jsonl", "--max-response-tokens", "40", "--max-turns", "2",
			"--temperature", "1", "--concurrency", "2", "--workers", "2", "--seed", "11", "--json", "--quiet"}
	}
	full := runCLI(t, args(filepath.Join(dir, "full.parquet"))...)
	if full.Code != 0 && strings.Contains(full.Stderr, "sandbox") {
		testenv.Skip(t, "a Python sandbox", strings.TrimSpace(full.Stderr), "apt-get install bubblewrap, or allow unprivileged user namespaces")
	}
	if full.Code != 0 {
		t.Fatalf("%+v", full)
	}
	want := readTraces(t, filepath.Join(dir, "full.jsonl"))

	out := filepath.Join(dir, "cut.parquet")
	_, partial := rollout.CheckpointPaths(out)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // Ctrl-C once a few trajectories are kept
		for ctx.Err() == nil {
			if b, err := os.ReadFile(partial); err == nil && strings.Count(string(b), "\n") >= 3 {
				cancel()
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	cut := runCLIWith(ctx, "", args(out)...)
	cancel()
	if cut.Code != 130 || !strings.Contains(cut.Stderr, "finished trajectories are kept in "+partial) {
		t.Fatalf("interrupted run: %+v; want exit 130 (Ctrl-C) saying where the finished trajectories are", cut)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatalf("the interrupted run wrote %s", out)
	}

	// Other settings on the same --out: refused, the checkpoint left alone.
	other := append(args(out), "--max-turns", "3")
	if r := runCLI(t, other...); r.Code != 1 || !strings.Contains(r.Stderr, "max_turns (was 2, now 3)") {
		t.Errorf("resume with another --max-turns: %+v", r)
	}
	resumeAndCompare(t, args(out), want)

	// The same after a SIGKILL of the binary (no handler runs; a line may be torn).
	out = filepath.Join(dir, "killed.parquet")
	_, partial = rollout.CheckpointPaths(out)
	cmd := osexec.Command(gorstarBinary(t), args(out)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if b, err := os.ReadFile(partial); err == nil && strings.Count(string(b), "\n") >= 3 {
			break
		}
	}
	cmd.Process.Kill()
	if err := cmd.Wait(); err == nil {
		t.Fatalf("the run ended before it was killed")
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatalf("the killed run wrote %s", out)
	}
	resumeAndCompare(t, args(out), want)
}

// resumeAndCompare runs an interrupted rollout's command again and checks that it rolled out
// only what its checkpoint lacked and wrote the uninterrupted run's traces.
func resumeAndCompare(t *testing.T, args []string, want []rollout.Trajectory) {
	t.Helper()
	out := args[slices.Index(args, "--out")+1]
	manifest, partial := rollout.CheckpointPaths(out)
	kept := strings.Count(dataTestRead(t, partial), "\n") // whole lines: a torn one is rolled again
	res := runCLI(t, args...)
	if res.Code != 0 {
		t.Fatalf("resumed run: %+v", res)
	}
	sum := decodeJSON(t, res)
	if sum["trajectories"] != float64(len(want)) || sum["resumed"] != float64(kept) || kept < 3 || kept >= len(want) {
		t.Errorf("resumed run: %v trajectories, %v resumed; the checkpoint held %d", sum["trajectories"], sum["resumed"], kept)
	}
	got := readTraces(t, strings.TrimSuffix(out, ".parquet")+".jsonl")
	if len(got) != len(want) {
		t.Fatalf("%d traces after resuming, want %d", len(got), len(want))
	}
	for i := range want {
		a, b := want[i], got[i]
		if a.ProblemIndex != b.ProblemIndex || a.Sample != b.Sample || a.Seed != b.Seed || a.Text != b.Text ||
			!slices.Equal(a.ResponseIDs, b.ResponseIDs) || !slices.Equal(a.LogProbs, b.LogProbs) ||
			!slices.Equal(a.LossMask, b.LossMask) || a.Finish != b.Finish || a.Reward != b.Reward {
			t.Errorf("trace %d differs from the uninterrupted run's:\nwant %+v\ngot  %+v", i, a, b)
		}
	}
	if _, err := os.Stat(partial); !os.IsNotExist(err) {
		t.Errorf("the checkpoint is still there after the run finished: %v", err)
	}
	if _, err := os.Stat(manifest); err != nil {
		t.Errorf("no manifest beside the traces: %v", err)
	}
}
