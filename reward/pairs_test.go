package reward

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// Good lines are graded in parallel and written back with their other fields; bad lines are named
// with their line number and left out.
func TestPairs(t *testing.T) {
	in := `{"id": 1, "response": "so \\boxed{42}", "answer": 42}
not json
{"id": 2, "response": "\\boxed{1/2}", "answer": "0.5"}

{"id": 3, "response": "\\boxed{7}", "answer": "8", "truncated": false}
{"id": 4, "answer": "1"}
`
	pairs, bad, err := ReadPairs(strings.NewReader(in), "pairs.jsonl", Strict)
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 3 || len(bad) != 2 || !strings.HasPrefix(bad[0], "pairs.jsonl:2: ") || bad[1] != `pairs.jsonl:6: missing field "response"` {
		t.Fatalf("%d pairs, bad %q", len(pairs), bad)
	}
	if pairs[0].Answer != "42" {
		t.Errorf("numeric answer read as %q", pairs[0].Answer)
	}
	calls := 0
	if n := GradePairs(pairs, 3, func(k int) { calls += k }); n != 2 || calls != 3 {
		t.Errorf("%d correct, %d done calls; want 2 and 3", n, calls)
	}
	for i, p := range pairs {
		if want := Grade(p.Response, p.Answer, p.Options); p.Result != want {
			t.Errorf("pair %d: %+v, Grade says %+v", i, p.Result, want)
		}
	}
	var out bytes.Buffer
	if err := WritePairs(&out, pairs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var last map[string]any
	if err := json.Unmarshal([]byte(lines[2]), &last); err != nil || len(lines) != 3 {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	if last["id"] != 3.0 || last["correct"] != false || last["extracted"] != "7" || last["truncated"] != false {
		t.Errorf("last line %v", last)
	}
}

func TestReadPairsRefusesWithoutPairs(t *testing.T) {
	if _, _, err := ReadPairs(strings.NewReader("\n"), "e.jsonl", Strict); err == nil || err.Error() != "e.jsonl: empty (no lines to grade)" {
		t.Errorf("empty: %v", err)
	}
	_, _, err := ReadPairs(strings.NewReader("1\n[]\n"), "b.jsonl", Strict)
	if err == nil || !strings.HasPrefix(err.Error(), "b.jsonl:1: ") || !strings.HasSuffix(err.Error(), "(and 1 more bad lines); no line to grade") {
		t.Errorf("all bad: %v", err)
	}
}
