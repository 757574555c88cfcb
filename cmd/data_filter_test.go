package cmd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/internal/testenv"
	"gorstar/internal/testmodel"
	"gorstar/rollout"
	"gorstar/tokenizer"
)

// fast keeps pass-rate sampling short: one turn (no tool call runs), a few tokens.
var fast = []string{"--set", "eval.max_turns=1", "--set", "eval.max_tokens=8"}

// filterProblems writes four short problems, one of them twice, and one long one.
func filterProblems(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	for i, text := range []string{"Compute 2 + 2.", "Compute 3 * 5.", "Compute 2 + 2.", "Compute 7 - 1.",
		"Compute the sum: " + strings.Repeat("1 + ", 300) + "1.", "Compute 9 * 9."} {
		lines = append(lines, fmt.Sprintf(`{"id": "p%d", "problem": %q, "answer": "1"}`, i, text))
	}
	return writeEvalProblems(t, dir, "problems.jsonl", lines...)
}

// promptLen is a problem's rollout prompt in tokens under the default template.
func promptLen(t *testing.T, modelDir, problem string) int {
	t.Helper()
	tok, err := tokenizer.Load(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := chat.NewRenderer(tok, chat.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	ids, err := rollout.Prompt(r, data.Problem{Problem: problem})
	if err != nil {
		t.Fatal(err)
	}
	return len(ids)
}

func readPassRates(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// Rules, then the prompt's length, then the pass rate of a random policy (which solves nothing,
// so at 0.875 it keeps all it samples, and at 0 too); the counts by reason, the pass rates of
// exactly the problems sampled, and the kept rows in input order.
func TestDataFilterPromptTokensAndPassRate(t *testing.T) {
	dir := t.TempDir()
	model := testmodel.TinyDir(t)
	in := filterProblems(t, dir)
	limit := promptLen(t, model, "Compute 2 + 2.") + 50 // the long problem is ~1200 tokens longer
	out, rates := filepath.Join(dir, "kept.jsonl"), filepath.Join(dir, "rates.jsonl")
	args := append([]string{"data", "filter", "--json", "--in", in, "--out", out, "--dedup",
		"--max-prompt-tokens", fmt.Sprint(limit), "--max-pass-rate", "0.875", "--model", model, "--samples", "2",
		"--pass-rates", rates}, fast...)
	r := runCLI(t, args...)
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	res := decodeJSON(t, r)
	dropped := res["dropped"].(map[string]any)
	if res["read"] != 6.0 || res["rows"] != 4.0 || res["rated"] != 4.0 || dropped["duplicate"] != 1.0 ||
		dropped["prompt_tokens"] != 1.0 || dropped["solved"] != nil || res["pass_rates"] != rates {
		t.Errorf("result %v", res)
	}
	kept, err := data.ReadAllProblems(out)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range kept {
		ids = append(ids, p.ID)
	}
	if strings.Join(ids, " ") != "p0 p1 p3 p5" {
		t.Errorf("kept %v", ids)
	}
	lines := readPassRates(t, rates)
	if len(lines) != 4 {
		t.Fatalf("%d pass-rate lines, want 4 (the problems sampled)", len(lines))
	}
	for i, l := range lines {
		if l["id"] != ids[i] || l["samples"] != 2.0 || l["correct"] != 0.0 || l["pass_rate"] != 0.0 || l["kept"] != true {
			t.Errorf("pass-rate line %d: %v", i, l)
		}
	}
	// At F = 0 a random policy still solves nothing: everything sampled stays. Without --json
	// the one line names the counts.
	r = runCLI(t, append([]string{"data", "filter", "--quiet", "--in", in, "--out", out, "--max-pass-rate", "0",
		"--model", model, "--samples", "1"}, fast...)...)
	if r.Code != 0 || !strings.Contains(r.Stdout, "kept 6 of 6 rows") {
		t.Errorf("%+v", r)
	}
}

// A pass-rate filter through `gorstar serve` samples what the model natively samples: the same
// seeds give the same pass rates.
func TestDataFilterEndpointAgreesWithNative(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	dir := t.TempDir()
	model := testmodel.TinyDir(t)
	in := filterProblems(t, dir)
	url := startServe(t, model)
	native, served := filepath.Join(dir, "native.jsonl"), filepath.Join(dir, "served.jsonl")
	common := append([]string{"data", "filter", "--quiet", "--in", in, "--max-pass-rate", "0.5", "--samples", "2"}, fast...)
	if r := runCLI(t, append(common, "--out", filepath.Join(dir, "a.jsonl"), "--model", model, "--pass-rates", native)...); r.Code != 0 {
		t.Fatalf("native: %+v", r)
	}
	if r := runCLI(t, append(common, "--out", filepath.Join(dir, "b.jsonl"), "--endpoint", url, "--served-model", "tiny",
		"--tokenizer", model, "--pass-rates", served)...); r.Code != 0 {
		t.Fatalf("served: %+v", r)
	}
	a, b := readPassRates(t, native), readPassRates(t, served)
	if len(a) != 6 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("native %v\nserved %v", a, b)
	}
}

// Flags that cannot work are refused before anything is opened or written.
func TestDataFilterBadFlags(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	shared, m := badModelDir(t)
	in := filterProblems(t, shared)
	base := []string{"data", "filter", "--in", in, "--out", "out.jsonl"}
	bad := func(want string, args ...string) badCase {
		return badCase{args: append(append([]string{}, base...), args...), want: want}
	}
	runBad(t, shared, []badCase{
		bad("--max-pass-rate needs --model DIR or --endpoint URL", "--max-pass-rate", "0.875"),
		bad("--samples must be ≥ 1, got 0", "--max-pass-rate", "0.875", "--model", m, "--samples", "0"),
		bad("--max-pass-rate must be in [0, 1], got 1.5", "--max-pass-rate", "1.5", "--model", m),
		bad("--max-pass-rate must be in [0, 1], got -0.1", "--max-pass-rate", "-0.1", "--model", m),
		bad("no such tokenizer file", "--max-prompt-tokens", "100", "--tokenizer", "missing"),
		bad("--max-prompt-tokens needs --tokenizer DIR", "--max-prompt-tokens", "100"),
		bad("--max-prompt-tokens must be ≥ 1, got 0", "--max-prompt-tokens", "0", "--tokenizer", m),
		bad("--samples needs --max-pass-rate F", "--samples", "8"),
		bad("--pass-rates needs --max-pass-rate F", "--pass-rates", "rates.jsonl"),
		bad("--seed needs --max-pass-rate F", "--seed", "3"),
		bad("--endpoint needs --served-model NAME", "--max-pass-rate", "0.5", "--endpoint", "http://127.0.0.1:1"),
		bad("give --model DIR or --endpoint URL, not both", "--max-pass-rate", "0.5", "--model", m, "--endpoint", "http://127.0.0.1:1"),
		bad("--pass-rates out.jsonl: is also", "--max-pass-rate", "0.5", "--model", m, "--pass-rates", "out.jsonl"),
	})
}
