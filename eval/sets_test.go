package eval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/config"
	"gorstar/internal/testmodel"
)

// Several sets evaluate together, one row each: the public layouts as published (here the
// project's fixtures in those layouts), named from their folders and contents.
func TestEvalSeveralSets(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(t, testmodel.TinyDir(t), "", filepath.Join(dir, "results.parquet"))
	o.Eval.Samples = 2
	o.Eval.Sets = []config.EvalSet{
		{Data: "../data/testdata/public/gsm8k/test.jsonl"},
		{Data: "../data/testdata/public/amc23/test.jsonl"},
		{Name: "mine", Data: writeProblems(t, dir, 3)},
	}
	res, err := Run(ctxT(t), o)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name     string
		problems int
	}{{"gsm8k", 3}, {"amc23", 2}, {"mine", 3}}
	if len(res.Sets) != len(want) {
		t.Fatalf("sets %+v", res.Sets)
	}
	total := 0
	for i, w := range want {
		s := res.Sets[i]
		if s.Name != w.name || s.NProblems != w.problems || s.NSamples != 2*w.problems || s.Data != o.Eval.Sets[i].Data {
			t.Errorf("set %d: %+v, want %s with %d problems", i, s, w.name, w.problems)
		}
		total += s.NProblems
	}
	if res.NProblems != total {
		t.Errorf("all: %d problems, want %d", res.NProblems, total)
	}
	recs, err := ReadResults(res.Out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(recs[0].ProblemID, "gsm8k/") || recs[0].Source != "gsm8k" {
		t.Errorf("first record %s from %s: ids are prefixed with the set and the source is its name", recs[0].ProblemID, recs[0].Source)
	}
	md, err := os.ReadFile(res.Markdown)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"## Per set", "| gsm8k | 3 | 2 |", "| amc23 | 2 | 2 |", "| avg@2 (%) | gsm8k | amc23 | mine |"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("RESULTS.md lacks %q:\n%s", s, md)
		}
	}

	// Two sets under one name are refused before anything runs.
	o.Out = filepath.Join(dir, "dup.parquet")
	o.Eval.Sets = []config.EvalSet{{Data: "../data/testdata/public/gsm8k/test.jsonl"}, {Data: "../data/testdata/public/gsm8k/test.jsonl"}}
	if _, err := Run(ctxT(t), o); err == nil || !strings.Contains(err.Error(), `are both named "gsm8k"`) {
		t.Errorf("duplicate set names: %v", err)
	}
}

// One file keeps the single-set result: the top-level fields, and one row in Sets.
func TestEvalOneSetRow(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(t, testmodel.TinyDir(t), "../data/testdata/public/amc23/test.jsonl", filepath.Join(dir, "r.parquet"))
	o.Eval.Samples = 1
	res, err := Run(ctxT(t), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sets) != 1 || res.Sets[0].Name != "amc23" || res.Sets[0].NProblems != 2 || res.NProblems != 2 {
		t.Errorf("sets %+v, n_problems %d", res.Sets, res.NProblems)
	}
}
