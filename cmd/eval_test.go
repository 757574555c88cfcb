package cmd

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"gorstar/eval"
	"gorstar/internal/testenv"
)

func writeEvalProblems(t *testing.T, dir, name string, lines ...string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startServe runs `gorstar serve` in-process on loopback until the test ends.
func startServe(t *testing.T, dir string) string {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan cliResult, 1)
	go func() {
		served <- runCLIWith(ctx, "", "serve", "--model", dir, "--listen", addr, "--kv-tokens", "8192", "--quiet")
	}()
	t.Cleanup(func() { cancel(); <-served })
	url := "http://" + addr
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		res, err := http.Get(url + "/v1/models")
		if err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not come up: %v", err)
		}
	}
}

// The same model evaluated natively and through `gorstar serve` over HTTP, with the same seeds,
// gives the same per-sample results — every response's ids — and the same summary. The untrained
// model writes bytes that are not UTF-8 and calls the tool now and then, so ids that went through
// text, or a turn after a tool call sampled from another random stream, would show.
func TestEvalNativeAndServeAgree(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny")
	if r := runCLI(t, "model", "init", "--out", model, "--preset", "tiny"); r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	var lines []string
	for i := range 12 {
		lines = append(lines, fmt.Sprintf(`{"id": "q%d", "problem": "What is %d*3?", "answer": "%d"}`, i, i, 3*i))
	}
	data := writeEvalProblems(t, dir, "p.jsonl", lines...)
	common := []string{"eval", "--data", data, "--samples", "4", "--temperature", "0.8", "--max-response-tokens", "600",
		"--seed", "11", "--json", "--quiet"}
	native := runCLI(t, append(common, "--model", model, "--out", filepath.Join(dir, "native.parquet"))...)
	if native.Code != 0 {
		t.Fatalf("native: %+v", native)
	}
	url := startServe(t, model)
	remote := runCLI(t, append(common, "--endpoint", url, "--served-model", "tiny", "--tokenizer", model,
		"--concurrency", "3", "--out", filepath.Join(dir, "remote.parquet"))...)
	if remote.Code != 0 {
		t.Fatalf("remote: %+v", remote)
	}
	a, err := eval.ReadResults(filepath.Join(dir, "native.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := eval.ReadResults(filepath.Join(dir, "remote.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 48 || len(b) != 48 {
		t.Fatalf("%d native and %d remote results, want 48", len(a), len(b))
	}
	resumed, invalid := 0, 0
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			t.Fatalf("sample %d differs:\nnative %+v\nremote %+v", i, a[i], b[i])
		}
		if a[i].Turns > 1 {
			resumed++
		}
		if strings.ContainsRune(a[i].Response, utf8.RuneError) {
			invalid++
		}
	}
	t.Logf("%d samples went on after a tool call, %d responses hold bytes that are not UTF-8", resumed, invalid)
	if resumed == 0 || invalid == 0 {
		t.Errorf("%d samples resumed after a call, %d with invalid UTF-8: the test no longer covers them", resumed, invalid)
	}
	na, rb := decodeJSON(t, native), decodeJSON(t, remote)
	for _, k := range []string{"avg_pass@1", "pass@k", "maj@k", "mean_response_tokens", "tool_calls_per_response", "n_problems"} {
		if _, ok := na[k]; !ok || !reflect.DeepEqual(na[k], rb[k]) {
			t.Errorf("%s: native %v, remote %v", k, na[k], rb[k])
		}
	}
	if na["n_problems"] != 12.0 {
		t.Errorf("n_problems %v", na["n_problems"])
	}
	// Eval results export to JSONL, a row per sample with every column.
	exported := filepath.Join(dir, "native.jsonl")
	if r := runCLI(t, "data", "export", "--in", filepath.Join(dir, "native.parquet"), "--out", exported); r.Code != 0 {
		t.Fatalf("export eval results: %+v", r)
	}
	rows, _ := os.ReadFile(exported)
	if lines := strings.Split(strings.TrimSpace(string(rows)), "\n"); len(lines) != 48 ||
		!strings.Contains(lines[0], `"response_ids":[`) || !strings.Contains(lines[0], `"problem_id":"q0"`) {
		t.Errorf("exported results: %d lines, first %.200s", len(lines), lines[0])
	}
	// Without --tokenizer: text mode, recorded in the manifest, with its one-line warning; the
	// same samples and grading, token counts from the server's usage.
	textOut := filepath.Join(dir, "text.parquet")
	text := runCLI(t, "eval", "--data", data, "--samples", "4", "--temperature", "0.8", "--max-response-tokens", "600",
		"--seed", "11", "--endpoint", url, "--served-model", "tiny", "--concurrency", "3", "--out", textOut)
	if text.Code != 0 || strings.Count(text.Stderr, "text mode") != 1 || !strings.Contains(text.Stderr, "training (rollout, rl) needs token mode") {
		t.Fatalf("text mode: %+v", text)
	}
	_, manPath, _ := eval.Paths(textOut)
	man, err := os.ReadFile(manPath)
	if err != nil || !strings.Contains(string(man), `"mode": "text"`) {
		t.Errorf("text mode manifest: %s (%v)", man, err)
	}
	tr, err := eval.ReadResults(textOut)
	if err != nil || len(tr) != 48 {
		t.Fatalf("text mode results: %d, %v", len(tr), err)
	}
	for i, r := range tr {
		if r.Tokens == 0 || r.Generated == 0 || len(r.ResponseIDs) != 0 {
			t.Fatalf("text mode sample %d: %d tokens, %d generated, %d ids; want counts from usage and no ids", i, r.Tokens, r.Generated, len(r.ResponseIDs))
		}
	}
	// A served model the server does not list: one line naming what it lists.
	r := runCLI(t, append(common, "--endpoint", url, "--served-model", "nope", "--tokenizer", model,
		"--out", filepath.Join(dir, "nope.parquet"))...)
	if r.Code != 1 || !strings.Contains(r.Stderr, `"nope"`) || !strings.Contains(r.Stderr, "tiny") || strings.Count(r.Stderr, "\n") != 1 {
		t.Errorf("unlisted model: %+v", r)
	}
}

// Bad input: one clear line, exit 1, and no results file.
func TestEvalBadInput(t *testing.T) {
	dir := t.TempDir()
	good := writeEvalProblems(t, dir, "good.jsonl", `{"id": "a", "problem": "1+1?", "answer": "2"}`)
	noAnswer := writeEvalProblems(t, dir, "noanswer.jsonl", `{"id": "a", "problem": "1+1?", "answer": "2"}`,
		`{"id": "b", "problem": "2+2?"}`)
	dup := writeEvalProblems(t, dir, "dup.jsonl", `{"id": "a", "problem": "1+1?", "answer": "2"}`,
		`{"id": "a", "problem": "2+2?", "answer": "4"}`)
	tok := filepath.Join(dir, "tiny")
	if r := runCLI(t, "model", "init", "--out", tok, "--preset", "tiny"); r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	down := "http://" + freeAddr(t)
	out := filepath.Join(dir, "r.parquet")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no answer", []string{"--model", tok, "--data", noAnswer}, "noanswer.jsonl:2: no answer"},
		{"duplicate ids", []string{"--model", tok, "--data", dup}, `same id "a"`},
		{"zero samples", []string{"--model", tok, "--data", good, "--samples", "0"}, "--samples must be ≥ 1"},
		{"no model", []string{"--data", good}, "give --model DIR or --endpoint URL"},
		{"missing data", []string{"--model", tok, "--data", filepath.Join(dir, "none.jsonl")}, "none.jsonl"},
		{"endpoint down", []string{"--endpoint", down, "--served-model", "tiny", "--tokenizer", tok, "--data", good}, "(connection refused)"},
		{"text mode, endpoint down", []string{"--endpoint", down, "--served-model", "tiny", "--data", good}, "(connection refused)"},
		{"exec nodes down", []string{"--model", tok, "--data", good, "--set", `exec.endpoints=["` + down + `"]`},
			"exec.endpoints: none of the 1 servers answers (" + down},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, append([]string{"eval", "--out", out, "--max-response-tokens", "8"}, c.args...)...)
			if r.Code != 1 || !strings.Contains(r.Stderr, c.want) || strings.Count(r.Stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 1 and one line with %q", r.Code, r.Stderr, c.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}

// --data repeated evaluates the sets together: --json keeps the top-level fields (over all
// problems) and adds one row per set; the config's [[eval.sets]] does the same without --data.
func TestEvalSeveralSetsCLI(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny")
	if r := runCLI(t, "model", "init", "--out", model, "--preset", "tiny"); r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	gsm, amc := "../data/testdata/public/gsm8k/test.jsonl", "../data/testdata/public/amc23/test.jsonl"
	common := []string{"eval", "--model", model, "--samples", "1", "--max-response-tokens", "16", "--json"}
	cfg := filepath.Join(dir, "sets.toml")
	if err := os.WriteFile(cfg, []byte("[[eval.sets]]\ndata = \""+gsm+"\"\n[[eval.sets]]\nname = \"amc\"\ndata = \""+amc+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		append(common, "--data", gsm, "--data", amc, "--out", filepath.Join(dir, "a.parquet")),
		append([]string{"--config", cfg}, append(common, "--out", filepath.Join(dir, "b.parquet"))...),
	} {
		r := runCLI(t, args...)
		if r.Code != 0 {
			t.Fatalf("%v: %+v", args, r)
		}
		m := decodeJSON(t, r)
		sets, _ := m["sets"].([]any)
		if m["n_problems"] != 5.0 || len(sets) != 2 || m["avg_pass@1"] == nil || m["maj@k"] == nil {
			t.Fatalf("%v: summary %v", args, m)
		}
		first, second := sets[0].(map[string]any), sets[1].(map[string]any)
		if first["name"] != "gsm8k" || first["n_problems"] != 3.0 || second["n_problems"] != 2.0 || first["avg_pass@1_ci95"] == nil {
			t.Errorf("%v: sets %v", args, sets)
		}
	}
}
