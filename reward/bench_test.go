package reward

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchMix is a realistic mix of graded rollouts: rStar2-format responses (reasoning, a tool call
// and its response, an answer block) with the kinds of references math RL data has, mostly
// integers. About two thirds are correct.
func benchMix() [][2]string {
	reason := "<reason>Let me set up the problem. We need the number of ordered pairs satisfying the constraint; " +
		"I will enumerate with the tool and then confirm the count analytically by symmetry.</reason>\n" +
		"<tool_call>\n{\"name\": \"python\", \"arguments\": {\"code\": \"print(sum(1 for a in range(100) for b in range(100) if (a*b)%7==1))\", \"input\": \"\"}}\n</tool_call>\n" +
		"<tool_response>\n1372\n</tool_response>\n<reason>The enumeration agrees with the argument, so the total follows.</reason>\n"
	pairs := [][2]string{
		{"204", "204"}, {"17", "17"}, {"1000", "1,000"}, {"073", "73"}, {"42", "24"},
		{"588", "588"}, {"110", "110.0"}, {"5", "x=5"}, {"36", "35"}, {"1", "100"},
		{`\frac{1}{2}`, "2/4"}, {`\frac{3}{4}`, "0.75"}, {`\dfrac{7}{12}`, `\frac{7}{12}`}, {`\frac{5}{8}`, `\frac{3}{8}`},
		{`2\sqrt{2}`, `\sqrt{8}`}, {`\frac{\sqrt{3}}{2}`, `\frac{\sqrt3}{2}`}, {`3+2\sqrt{2}`, `(1+\sqrt2)^2`}, {`\sqrt{5}`, `\sqrt{6}`},
		{`4\pi`, `4\pi`}, {`\frac{\pi}{3}`, `\frac{\pi}{6}`}, {`36\pi`, `36 \pi`},
		{"x^2+2x+1", "(x+1)^2"}, {"(a+b)(b+c)(c+a)", "(a+c)(c+b)(b+a)"}, {"2x-3", "3-2x"},
		{"(1,2)", "(1, 2)"}, {"(2,1)", "(1,2)"}, {"3, 5", `\{5, 3\}`}, {"[1,2)", "(1,2)"},
		{`(-\infty, 3)`, `(-\infty,3)`}, {`\text{(C)}`, "C"}, {`5^\circ`, "5"}, {`\$18.90`, "18.90"},
		{"2^{10}", "1024"}, {`\binom{6}{2}`, "15"}, {"1010_2", "10"}, {"12", "12"},
		{"987", "987"}, {"3", "3"}, {"64", "64"}, {"720", "720"},
	}
	mix := make([][2]string, len(pairs))
	for i, p := range pairs {
		mix[i] = [2]string{reason + `<answer>The final answer is $\boxed{` + p[0] + `}$.</answer>`, p[1]}
	}
	return mix
}

func BenchmarkGradeMix(b *testing.B) {
	mix := benchMix()
	n := 0
	for b.Loop() {
		p := mix[n%len(mix)]
		Grade(p[0], p[1], Options{})
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "grades/s")
}

func BenchmarkAdversarial(b *testing.B) {
	for b.Loop() {
		for _, a := range adversarialInputs {
			Grade(`\boxed{`+a+`}`, "x+1", Options{})
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(adversarialInputs))/1e6, "ms/grade")
}

// BenchmarkGradeVsSympy grades the same mix with gorstar and with a sympy-based checker (one Python
// process, timed inside Python so start-up is not counted) and reports both and the ratio.
func BenchmarkGradeVsSympy(b *testing.B) {
	python, err := exec.LookPath("python3")
	if err != nil {
		b.Skip("python3 not found: sympy baseline skipped")
	}
	if out, err := exec.Command(python, "-c", "import sympy").CombinedOutput(); err != nil {
		b.Skipf("sympy not importable: baseline skipped (%s)", strings.TrimSpace(string(out)))
	}
	mix := benchMix()
	path := filepath.Join(b.TempDir(), "mix.json")
	data, _ := json.Marshal(mix)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}

	goCorrect, n := 0, 0
	start := time.Now()
	for b.Loop() {
		p := mix[n%len(mix)]
		if Grade(p[0], p[1], Options{}).Correct {
			goCorrect++
		}
		n++
	}
	goPer := time.Since(start).Seconds() / float64(n)

	out, err := exec.Command(python, "testdata/sympy_grade.py", path, "2").Output()
	if err != nil {
		b.Fatalf("sympy baseline: %v", err)
	}
	var py struct {
		N         int     `json:"n"`
		Correct   int     `json:"correct"`
		PerGradeS float64 `json:"per_grade_s"`
	}
	if err := json.Unmarshal(out, &py); err != nil {
		b.Fatalf("sympy baseline output %q: %v", out, err)
	}
	b.ReportMetric(goPer*1e6, "gorstar_us/grade")
	b.ReportMetric(py.PerGradeS*1e6, "sympy_us/grade")
	b.ReportMetric(py.PerGradeS/goPer, "x_faster")
	b.Logf("mix of %d: gorstar %d/%d correct, sympy %d/%d correct", len(mix),
		goCorrect*len(mix)/max(n, 1), len(mix), py.Correct/2, len(mix))
}
