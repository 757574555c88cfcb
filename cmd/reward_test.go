package cmd

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writePairs(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pairs.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var rewardPairs = []string{
	`{"id": "a", "response": "<answer>\\boxed{\\frac{1}{2}}</answer>", "answer": "0.5"}`,
	`{"id": "b", "response": "\\boxed{1}", "answer": "100"}`,
	``,
	`{"id": "c", "response": "<tool_response>\\boxed{7}</tool_response>", "answer": "7"}`,
	`{"id": "d", "response": "\\boxed{7}", "answer": "7", "truncated": true}`,
}

func TestRewardGradeWritesJSONL(t *testing.T) {
	in := writePairs(t, rewardPairs...)
	out := filepath.Join(t.TempDir(), "graded.jsonl")
	r := runCLI(t, "reward", "grade", "--in", in, "--out", out, "--json")
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	m := decodeJSON(t, r)
	if m["n"] != 4.0 || m["correct"] != 1.0 || m["per_s"].(float64) <= 0 {
		t.Fatalf("summary %v", m)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []map[string]any
	for s := bufio.NewScanner(f); s.Scan(); {
		var row map[string]any
		if err := json.Unmarshal(s.Bytes(), &row); err != nil {
			t.Fatalf("output line %q: %v", s.Text(), err)
		}
		rows = append(rows, row)
	}
	want := []struct {
		id        string
		correct   bool
		extracted string
	}{{"a", true, `\frac{1}{2}`}, {"b", false, "1"}, {"c", false, ""}, {"d", false, ""}}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		if rows[i]["id"] != w.id || rows[i]["correct"] != w.correct || rows[i]["extracted"] != w.extracted {
			t.Errorf("row %d = %v, want %+v", i, rows[i], w)
		}
	}
}

func TestRewardGradeModes(t *testing.T) {
	in := writePairs(t, rewardPairs...)
	for _, args := range [][]string{
		{"reward", "grade", "--in", in, "--mode", "rstar2", "--json"},
		{"--set", "reward.mode=rstar2", "reward", "grade", "--in", in, "--json"},
	} {
		r := runCLI(t, args...)
		if r.Code != 0 {
			t.Fatalf("%v: %+v", args, r)
		}
		// rstar2: ×100 accepted, the tool's box counts, truncation ignored.
		if m := decodeJSON(t, r); m["correct"] != 4.0 {
			t.Errorf("%v: summary %v, want 4 correct", args, m)
		}
	}
}

func TestRewardGradeStdout(t *testing.T) {
	in := writePairs(t, rewardPairs[0])
	r := runCLI(t, "reward", "grade", "--quiet", "--in", in)
	if r.Code != 0 || !strings.Contains(r.Stdout, `"correct":true`) || strings.Count(r.Stdout, "\n") != 1 {
		t.Fatalf("%+v", r)
	}
}

func TestRewardGradeUserErrors(t *testing.T) {
	for _, tc := range []struct {
		lines []string
		args  []string
		want  string
	}{
		{[]string{`{"response": "a"`, `{"response": "a", "answer": {}}`}, nil, "pairs.jsonl:1: invalid JSON"},
		{[]string{`{"response": "a", "answer": [1]}`}, nil, `pairs.jsonl:1: field "answer": want a string or a number, got [1]; no line to grade`},
		{[]string{`{"response": "a"}`}, nil, `pairs.jsonl:1: missing field "answer"`},
		{[]string{`{"answer": "1"}`}, nil, `pairs.jsonl:1: missing field "response"`},
		{[]string{`{"response": 5, "answer": "1"}`}, nil, `pairs.jsonl:1: field "response": want a string`},
		{[]string{`{"response": "a", "answer": "1", "truncated": "yes"}`}, nil, `field "truncated"`},
		{[]string{`[1, 2]`}, nil, "pairs.jsonl:1: expected an object, got a list"},
		{[]string{`{"response": "a", "answer": "1"}`}, []string{"--mode", "lenient"}, `--mode: unknown reward mode "lenient"`},
	} {
		in := writePairs(t, tc.lines...)
		out := filepath.Join(t.TempDir(), "out.jsonl")
		r := runCLI(t, append([]string{"reward", "grade", "--in", in, "--out", out}, tc.args...)...)
		if r.Code != 1 || !strings.Contains(r.Stderr, tc.want) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("%v: code %d stderr %q, want exit 1 with %q", tc.lines, r.Code, r.Stderr, tc.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%v: output written despite the error", tc.lines)
		}
	}
	for _, args := range [][]string{{"reward", "grade"}, {"reward", "grade", "--in", "/no/such/pairs.jsonl"}} {
		if r := runCLI(t, args...); r.Code != 1 {
			t.Errorf("%v: %+v, want exit 1", args, r)
		}
	}
}

// A bad line is named with its line number and left out; the other lines are graded. Numeric
// answers (27.0, as AMC23 and SVAMP store them) grade as numbers.
func TestRewardGradeBadLinesAndNumbers(t *testing.T) {
	in := writePairs(t,
		`{"id": "a", "response": "\\boxed{27}", "answer": 27.0}`,
		`{"id": "b", "response": "a"`,
		`{"id": "c", "response": "\\boxed{2.5}", "answer": 2.5}`,
		`{"id": "d", "answer": "1"}`,
		`{"id": "e", "response": "\\boxed{3}", "answer": "4"}`,
	)
	out := filepath.Join(t.TempDir(), "graded.jsonl")
	r := runCLI(t, "reward", "grade", "--in", in, "--out", out, "--json")
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	if m := decodeJSON(t, r); m["n"] != 3.0 || m["correct"] != 2.0 || m["bad_lines"] != 2.0 {
		t.Errorf("summary %v, want 3 graded, 2 correct, 2 bad lines", m)
	}
	for _, want := range []string{"pairs.jsonl:2: invalid JSON", `pairs.jsonl:4: missing field "response"`} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr %q does not name %q", r.Stderr, want)
		}
	}
	body, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(body), "\n"); got != 3 {
		t.Errorf("%d output lines, want the 3 graded ones:\n%s", got, body)
	}
}
