package metrics

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// sample builds a result: correct samples have 100 tokens, wrong ones 300; all make two calls.
func sample(id, source string, idx int, answer string, correct bool) SampleResult {
	tokens := 300
	if correct {
		tokens = 100
	}
	return SampleResult{ProblemID: id, Source: source, Sample: idx, Answer: answer, Correct: correct,
		ResponseTokens: tokens, ToolCalls: 2}
}

// crafted has three problems, their samples out of order:
//
//	A (aime): 5 5 3 3, right right wrong wrong — maj tie goes to "5", right
//	B (aime): – 7 8 8, wrong right wrong wrong  — maj "8", wrong
//	C (math): 2 2 9 9 x over five samples, the 2s right — maj tie goes to "2", right
func crafted() []SampleResult {
	rs := []SampleResult{
		sample("A", "aime", 2, "3", false),
		sample("B", "aime", 1, "7", true),
		sample("A", "aime", 0, "5", true),
		sample("C", "math", 0, " 2", true),
		sample("A", "aime", 1, "5", true),
		sample("B", "aime", 0, "", false),
		sample("C", "math", 1, "2 ", true),
		sample("A", "aime", 3, "3", false),
		sample("B", "aime", 2, "8", false),
		sample("C", "math", 2, "9", false),
		sample("B", "aime", 3, "8", false),
		sample("C", "math", 3, "9", false),
		sample("C", "math", 4, "x", false),
	}
	for i := range rs[:4] {
		rs[i].FailedCalls = 1
	}
	rs[5].Truncated, rs[9].Truncated = true, true
	return rs
}

func TestSummarize(t *testing.T) {
	s := Summarize(crafted(), SummaryOptions{Normalize: strings.TrimSpace, Seed: 3})
	m := s.Metrics
	if m.NProblems != 3 || m.NSamples != 13 || m.K != 4 || m.NCorrect != 5 {
		t.Fatalf("counts %d problems, %d samples, k %d, %d correct; want 3, 13, 4, 5", m.NProblems, m.NSamples, m.K, m.NCorrect)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"avg pass@1", m.AvgPass1, (0.5 + 0.25 + 0.4) / 3},
		{"pass@1", m.PassAtKCurve[0], (0.5 + 0.25 + 0.4) / 3},
		{"pass@2", m.PassAtKCurve[1], (5.0/6 + 0.5 + 0.7) / 3},
		{"pass@3", m.PassAtKCurve[2], (1 + 0.75 + 0.9) / 3},
		{"pass@k", m.PassAtK, 1},
		{"maj@k", m.MajAtK, 2.0 / 3},
		{"mean tokens", m.MeanResponseTokens, 2900.0 / 13},
		{"mean tokens correct", m.MeanResponseTokensCorrect, 100},
		{"mean tokens incorrect", m.MeanResponseTokensIncorrect, 300},
		{"calls per response", m.ToolCallsPerResponse, 2},
		{"failed call rate", m.FailedToolCallRate, 4.0 / 26},
		{"truncation rate", m.TruncationRate, 2.0 / 13},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if lo, hi := m.AvgPass1CI[0], m.AvgPass1CI[1]; !(0.25 <= lo && lo <= m.AvgPass1 && m.AvgPass1 <= hi && hi <= 0.5) {
		t.Errorf("interval [%v, %v] around %v: want within the problems' range [0.25, 0.5]", lo, hi, m.AvgPass1)
	}
}

func TestSummarizePerSource(t *testing.T) {
	s := Summarize(crafted(), SummaryOptions{Normalize: strings.TrimSpace})
	aime, math5 := s.PerSource["aime"], s.PerSource["math"]
	if len(s.PerSource) != 2 || aime.NProblems != 2 || math5.NProblems != 1 {
		t.Fatalf("per source %+v", s.PerSource)
	}
	if aime.AvgPass1 != 0.375 || aime.MajAtK != 0.5 || aime.K != 4 {
		t.Errorf("aime: avg pass@1 %v, maj@k %v, k %d; want 0.375, 0.5, 4", aime.AvgPass1, aime.MajAtK, aime.K)
	}
	if math5.AvgPass1 != 0.4 || math5.MajAtK != 1 || math5.K != 5 || math5.AvgPass1CI != [2]float64{0.4, 0.4} {
		t.Errorf("math: avg pass@1 %v, maj@k %v, k %d, CI %v; want 0.4, 1, 5, [0.4 0.4]",
			math5.AvgPass1, math5.MajAtK, math5.K, math5.AvgPass1CI)
	}
}

func TestSummarizeNormalizerDecidesMajority(t *testing.T) {
	// Without trimming, C's " 2" and "2 " differ and the 9s win.
	s := Summarize(crafted(), SummaryOptions{})
	if got := s.PerSource["math"].MajAtK; got != 0 {
		t.Errorf("math maj@k without a normalizer = %v, want 0", got)
	}
}

func TestSummarizeIsDeterministic(t *testing.T) {
	a := Summarize(crafted(), SummaryOptions{Seed: 5})
	b := Summarize(crafted(), SummaryOptions{Seed: 5})
	if a.AvgPass1CI != b.AvgPass1CI {
		t.Errorf("same seed gave intervals %v and %v", a.AvgPass1CI, b.AvgPass1CI)
	}
}

func TestSummaryJSONFields(t *testing.T) {
	data, err := json.Marshal(Summarize(crafted(), SummaryOptions{Normalize: strings.TrimSpace}))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	// The fields of the `gorstar eval --json` contract, then the others.
	want := map[string]float64{"avg_pass@1": 1.15 / 3, "pass@k": 1, "maj@k": 2.0 / 3,
		"mean_response_tokens": 2900.0 / 13, "tool_calls_per_response": 2, "n_problems": 3,
		"k": 4, "n_samples": 13, "failed_tool_call_rate": 4.0 / 26, "truncation_rate": 2.0 / 13}
	for key, v := range want {
		f, ok := got[key].(float64)
		if !ok || math.Abs(f-v) > 1e-12 {
			t.Errorf("%s = %v, want %v", key, got[key], v)
		}
	}
	for _, key := range []string{"avg_pass@1_ci95", "pass@k_curve", "per_source", "mean_response_tokens_correct"} {
		if _, ok := got[key]; !ok {
			t.Errorf("no %q in %s", key, data)
		}
	}
}

func TestSummarizeEmpty(t *testing.T) {
	s := Summarize(nil, SummaryOptions{})
	if s.NProblems != 0 || s.AvgPass1 != 0 || len(s.PerSource) != 0 {
		t.Errorf("empty summary %+v", s)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Errorf("empty summary does not marshal: %v", err)
	}
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, s); err != nil || !strings.Contains(buf.String(), "| all | 0 | 0 |") {
		t.Errorf("markdown of an empty summary: %v\n%s", err, buf.String())
	}
}

func TestWriteMarkdown(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, Summarize(crafted(), SummaryOptions{Normalize: strings.TrimSpace})); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"| source | problems | k | avg pass@1 (%) |",
		"| all | 3 | 4 | 38.3 | [",
		"| 100.0 | 66.7 | 223 (100 / 300) | 2.00 | 15.4 | 15.4 |",
		"| math | 1 | 5 | 40.0 | [40.0, 40.0] |",
		"| k' | 1 | 2 | 4 |",
		"| pass@k' (all, %) | 38.3 | 67.8 | 100.0 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Index(out, "| aime |") > strings.Index(out, "| math |") {
		t.Errorf("sources out of order:\n%s", out)
	}
}

func TestCurveKs(t *testing.T) {
	for k, want := range map[int][]int{1: {1}, 2: {1, 2}, 16: {1, 2, 4, 8, 16}, 12: {1, 2, 4, 8, 12}} {
		if got := curveKs(k); !slices.Equal(got, want) {
			t.Errorf("curveKs(%d) = %v, want %v", k, got, want)
		}
	}
}
