package reward

import (
	"strings"
	"sync"
	"testing"
)

type gradeCase struct {
	response, ref string
	opts          Options
	want          bool
	extracted     string
	why           string
}

var (
	strict = Options{}
	rstar2 = Options{Mode: RStar2}
)

const reasoning = "<reason>We compute the sum step by step. First 2+2=4, then 4+1=5.</reason>\n"

var gradeCases = []gradeCase{
	{reasoning + `<answer>The answer is \boxed{5}.</answer>`, "5", strict, true, "5", "box inside the answer block"},
	{`\boxed{3} ... \boxed{5}`, "5", strict, true, "5", "the last box wins"},
	{`\boxed{5} ... \boxed{3}`, "5", strict, false, "3", "the last box wins, even when wrong"},
	{`<answer>\boxed{5}</answer> afterthought \boxed{7}`, "5", strict, true, "5", "the answer block is preferred over a later box"},
	{`\boxed{7} <answer>\boxed{5}</answer>`, "5", strict, true, "5", "the answer block is preferred over an earlier box"},
	{`<answer>\boxed{4}</answer> <answer>\boxed{5}</answer>`, "5", strict, true, "5", "the last answer block wins"},
	{`<answer>\boxed{3} then \boxed{5}</answer>`, "5", strict, true, "5", "last box inside the answer block"},
	{`<answer>The answer is 5.</answer>`, "5", strict, true, "5", "answer block without a box: the phrase"},
	{`<answer>$5$</answer>`, "5", strict, true, "5", "answer block without a box: its short content"},
	{`<answer>5`, "5", strict, true, "5", "unclosed answer block runs to the end"},
	{"<tool_call>\n{\"name\": \"python\", \"arguments\": {\"code\": \"print(2+3)\"}}\n</tool_call><tool_response>\n\\boxed{5}\n</tool_response>", "5", strict, false, "", "a box printed by the tool never counts"},
	{"<tool_call>\n{\"name\": \"python\", \"arguments\": {\"code\": \"print(2+3)\"}}\n</tool_call><tool_response>\n\\boxed{5}\n</tool_response>", "5", rstar2, true, "5", "the release counts a box printed by the tool"},
	{"I get \\boxed{4}.<tool_response>\n\\boxed{5}\n</tool_response>", "5", strict, false, "4", "the model's own box, not the tool's"},
	{"I get \\boxed{4}.<tool_response>\n\\boxed{5}\n</tool_response>", "5", rstar2, true, "5", "the release takes the tool's later box"},
	{"<tool_call>{\"name\": \"python\", \"arguments\": {\"code\": \"print('\\\\boxed{5}')\"}}</tool_call>", "5", strict, false, "", "a box inside a tool call's code does not count"},
	{"<tool_response>\\boxed{5}", "5", strict, false, "", "an unclosed tool response runs to the end"},
	{`\boxed{\frac{1}{2}}`, "0.5", strict, true, `\frac{1}{2}`, "nested braces in the box"},
	{`\boxed{\{1, 2\}}`, `\{2,1\}`, strict, true, `\{1, 2\}`, "escaped braces in the box"},
	{`\fbox{5}`, "5", strict, true, "5", "fbox counts as a box"},
	{`\boxed 5`, "5", strict, true, "5", "box without braces"},
	{`\boxed{5`, "5", strict, false, "", "an unclosed box is no answer"},
	{`\boxed{5} and \boxed{6`, "5", strict, true, "5", "an unclosed last box falls back to the previous box"},
	{"The answer is 5.", "5", strict, true, "5", "fallback phrase"},
	{"So the final answer is $\\frac{1}{2}$.", "1/2", strict, true, `\frac{1}{2}`, "fallback phrase with math"},
	{"Answer: 42", "42", strict, true, "42", "fallback answer colon"},
	{"answer: 3.5 and more text", "3.5", strict, false, "3.5 and more text", "fallback takes the rest of the line"},
	{"The answer is 4. Wait, the answer is 5.", "5", strict, true, "5", "the last phrase wins"},
	{"I think it is 5", "5", strict, false, "", "no box and no phrase: no answer"},
	{"", "5", strict, false, "", "empty response"},
	{`\boxed{5}`, "5", Options{Truncated: true}, false, "", "a truncated response scores 0"},
	{`\boxed{5}`, "5", Options{Mode: RStar2, Truncated: true}, true, "5", "the release forgot the truncation rule"},
	{`\boxed{1}`, "100", strict, false, "1", "release false positive ×100, strict"},
	{`\boxed{1}`, "100", rstar2, true, "1", "release false positive ×100, rstar2"},
	{`\boxed{123450}`, "123456", strict, false, "123450", "release false positive 1e-4, strict"},
	{`\boxed{123450}`, "123456", rstar2, true, "123450", "release false positive 1e-4, rstar2"},
	{`<answer>\boxed{x=5}</answer>`, "5", strict, true, "x=5", "assignment in the box"},
	{`\boxed{5 \text{ cm}}`, "5", strict, true, `5 \text{ cm}`, "unit in the box"},
	{`\boxed{\text{(B)}}`, "B", strict, true, `\text{(B)}`, "choice in the box"},
	{"<answer>" + strings.Repeat("x ", 200) + "</answer>", "5", strict, false, "", "long answer block without a box is no answer"},
}

func TestGrade(t *testing.T) {
	for _, tc := range gradeCases {
		r := Grade(tc.response, tc.ref, tc.opts)
		if r.Correct != tc.want || r.Extracted != tc.extracted {
			t.Errorf("Grade(%q, %q, %+v) = %+v, want correct=%v extracted=%q: %s", tc.response, tc.ref, tc.opts, r, tc.want, tc.extracted, tc.why)
		}
		if r.Reason == "" {
			t.Errorf("Grade(%q, %q) gave no reason", tc.response, tc.ref)
		}
	}
}

func TestGradeReasons(t *testing.T) {
	for _, tc := range []struct{ response, ref, reason string }{
		{`\boxed{5}`, "5", "equal as rationals"},
		{`\boxed{6}`, "5", "different values"},
		{"no box", "5", "no answer found"},
		{`\boxed{x+1}`, "1+x", "equal as expressions"},
		{`\boxed{(1,2]}`, "(1,2)", "different brackets (] vs ()"},
	} {
		if r := Grade(tc.response, tc.ref, strict); r.Reason != tc.reason {
			t.Errorf("Grade(%q, %q).Reason = %q, want %q", tc.response, tc.ref, r.Reason, tc.reason)
		}
	}
	if r := Grade(`\boxed{5}`, "5", Options{Truncated: true}); r.Reason != "truncated response" {
		t.Errorf("truncated reason = %q", r.Reason)
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": Strict, "strict": Strict, "rstar2": RStar2} {
		if m, err := ParseMode(in); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %v, %v", in, m, err)
		}
		if in != "" && want.String() != in {
			t.Errorf("%v.String() = %q", want, want.String())
		}
	}
	if _, err := ParseMode("lenient"); err == nil {
		t.Error("ParseMode(lenient) accepted")
	}
}

// Grade mutates no shared state: run the whole table from many goroutines (go test -race).
func TestGradeConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, tc := range equivCases {
				if ok := Equivalent(tc.got, tc.ref, strict); ok != tc.strict {
					t.Errorf("concurrent %q vs %q = %v", tc.got, tc.ref, ok)
				}
			}
		}()
	}
	wg.Wait()
}
