package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The data commands end to end: synth → stats → export → import → filter → split, all with --json.
func TestDataCommands(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	ok := func(args ...string) map[string]any {
		t.Helper()
		r := runCLI(t, args...)
		if r.Code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, r.Code, r.Stderr)
		}
		return decodeJSON(t, r)
	}
	if m := ok("data", "synth", "--task", "arith", "--n", "40", "--out", p("train.parquet"), "--seed", "3", "--json"); m["rows"] != 40.0 {
		t.Errorf("synth: %v", m)
	}
	st := ok("data", "stats", "--json", p("train.parquet"))
	if st["rows"] != 40.0 || st["answer_kinds"].(map[string]any)["integer"] != 40.0 ||
		strings.Join(dataTestStrings(st["columns"]), ",") != "id,problem,answer,source,meta" {
		t.Errorf("stats: %v", st)
	}
	if m := ok("data", "export", "--in", p("train.parquet"), "--out", p("train.jsonl"), "--json"); m["rows"] != 40.0 {
		t.Errorf("export: %v", m)
	}
	// A second copy of the first 10 lines makes duplicates.
	lines := strings.SplitAfter(dataTestRead(t, p("train.jsonl")), "\n")
	dataTestWrite(t, p("dups.jsonl"), strings.Join(lines[:10], ""))
	imp := ok("data", "import", "--in", p("train.jsonl"), "--in", p("dups.jsonl"), "--out", p("all.parquet"), "--json")
	if imp["rows"] != 50.0 || imp["skipped"] != 0.0 || imp["out"] != p("all.parquet") {
		t.Errorf("import: %v", imp)
	}
	dataTestWrite(t, p("eval.jsonl"), lines[20]+lines[21])
	f := ok("data", "filter", "--in", p("all.parquet"), "--out", p("clean.parquet"), "--dedup", "--integer-answers",
		"--decontaminate", p("eval.jsonl"), "--ngram", "8", "--json")
	dropped := f["dropped"].(map[string]any)
	if f["rows"] != 38.0 || dropped["duplicate"] != 10.0 || dropped["contaminated"] != 2.0 {
		t.Errorf("filter: %v", f)
	}
	s := ok("data", "split", "--in", p("clean.parquet"), "--train", p("a.parquet"), "--test", p("b.parquet"), "--test-size", "8", "--seed", "1", "--json")
	if s["train"] != 30.0 || s["test"] != 8.0 {
		t.Errorf("split: %v", s)
	}
	if m := ok("data", "synth", "--sft", "--n", "3", "--out", p("sft.parquet"), "--json"); m["rows"] != 3.0 {
		t.Errorf("synth --sft: %v", m)
	}
	if m := ok("data", "stats", "--json", p("sft.parquet")); m["rows"] != 3.0 || m["tool_calls"].(float64) < 3 { // recovery conversations call twice
		t.Errorf("stats sft: %v", m)
	}
}

func TestDataBadInput(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	var b strings.Builder
	for i := 0; i < 56; i++ {
		b.WriteString(`{"problem": "p", "answer": "1"}` + "\n")
	}
	b.WriteString(`{"problem": "p", "answer": 1` + "\n")
	dataTestWrite(t, p("bad.jsonl"), b.String())
	dataTestWrite(t, p("empty.jsonl"), "")
	dataTestWrite(t, p("noans.jsonl"), `{"question": "q", "solution": "s"}`+"\n")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"data", "import", "--in", p("bad.jsonl"), "--out", p("out.parquet")}, "bad.jsonl:57: invalid JSON: "},
		{[]string{"data", "import", "--in", p("empty.jsonl"), "--out", p("out.parquet")}, "empty.jsonl: file is empty"},
		{[]string{"data", "import", "--in", p("missing.jsonl"), "--out", p("out.parquet")}, "missing.jsonl: no such file"},
		{[]string{"data", "import", "--in", p("noans.jsonl"), "--out", p("out.parquet")}, "(fields found: question, solution)"},
		{[]string{"data", "import", "--in", p("noans.jsonl"), "--out", p("out.parquet"), "--answer-col", "solution", "--id-col", "uid"}, `no id field "uid"`},
		{[]string{"data", "stats", p("empty.jsonl")}, "empty.jsonl: file is empty"},
		{[]string{"data", "filter", "--in", p("bad.jsonl"), "--out", p("out.parquet"), "--dedup"}, "bad.jsonl:57: invalid JSON"},
		{[]string{"data", "split", "--in", p("bad.jsonl"), "--train", p("out.parquet"), "--test", p("t.parquet"), "--test-size", "1"}, "bad.jsonl:57: invalid JSON"},
		{[]string{"data", "synth", "--n", "5", "--ops", "/", "--out", p("out.parquet")}, `ops must be a non-empty subset`},
		{[]string{"data", "synth", "--task", "chess", "--out", p("out.parquet")}, `unknown task "chess"`},
		{[]string{"data", "export", "--in", p("noans.jsonl"), "--out", p("out.jsonl")}, `missing field "problem"`},
	}
	for _, c := range cases {
		r := runCLI(t, c.args...)
		if r.Code != 1 || !strings.Contains(r.Stderr, c.want) || strings.Count(strings.TrimSpace(r.Stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and one line with %q", c.args[:2], r.Code, r.Stderr, c.want)
		}
		for _, out := range []string{"out.parquet", "out.jsonl", "t.parquet"} {
			if _, err := os.Stat(p(out)); err == nil {
				t.Errorf("%v left %s behind", c.args[:2], out)
			}
		}
	}
}

func dataTestStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func dataTestRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func dataTestWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The public evaluation layouts import with no flags; a file none fits is one line on stderr
// naming its columns and the flags that map them, exit 1.
func TestDataImportPublicLayouts(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "gsm8k.jsonl")
	r := runCLI(t, "data", "import", "--in", "../data/testdata/public/gsm8k/test.jsonl", "--out", out, "--json")
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	if m := decodeJSON(t, r); m["rows"] != 3.0 {
		t.Errorf("summary %v", m)
	}
	body, _ := os.ReadFile(out)
	if !strings.Contains(string(body), `"answer":"1250","source":"gsm8k"`) {
		t.Errorf("imported gsm8k:\n%s", body)
	}
	r = runCLI(t, "data", "import", "--in", "../data/testdata/public/math/test.jsonl", "--out", out, "--source", "hendrycks_math", "--json")
	if body, _ := os.ReadFile(out); r.Code != 0 || !strings.Contains(string(body), `"answer":"\\frac{1}{2}","source":"hendrycks_math"`) {
		t.Errorf("%+v\n%s", r, body)
	}
	bad := filepath.Join(dir, "odd.jsonl")
	os.WriteFile(bad, []byte(`{"text": "2+2?", "gold": "4"}`+"\n"), 0o644)
	r = runCLI(t, "data", "import", "--in", bad, "--out", filepath.Join(dir, "odd.parquet"))
	if r.Code != 1 || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 ||
		!strings.Contains(r.Stderr, "fields found: gold, text") || !strings.Contains(r.Stderr, "--format gsm8k|") {
		t.Errorf("unmappable file: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "odd.parquet")); !os.IsNotExist(err) {
		t.Error("an output was written for a file that did not import")
	}
}
