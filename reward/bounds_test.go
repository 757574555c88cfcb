package reward

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// adversarialInputs are answers built to make a verifier do a lot of work. Each must grade within
// the work bounds: TestAdversarialInputsAreBounded asserts a bound on the memory each allocates
// (counted, not timed) and logs the slowest; BenchmarkAdversarial measures them.
var adversarialInputs = []string{
	"9^{9^{9^{9}}}",
	"2^{100000000}",
	"(x+y+z+w)^{200}",
	"(x+1)^{100000}",
	"(a+b+c+d+e+f+g+h)^{9}",
	"10000000!",
	"1000!!",
	`\binom{1000000000}{500000000}`,
	`\binom{1000000}{500000}`,
	`\sqrt{99999999977}`,
	`\sqrt{999999937}\sqrt{999999929}\sqrt{999999893}`,
	`\sqrt[64]{2}\sqrt[63]{3}\sqrt[61]{5}`,
	"1e1000000000",
	"1.5e-99999999",
	strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000),
	strings.Repeat("{", 3000) + "1" + strings.Repeat("}", 3000),
	strings.Repeat("x+", 3000) + "1",
	strings.Repeat("(x+1)", 600),
	strings.Repeat(`\sqrt{`, 500) + "2" + strings.Repeat("}", 500),
	strings.Repeat(`\frac{1}{`, 400) + "2" + strings.Repeat("}", 400),
	strings.Repeat("9", 5000),
	strings.Repeat("1,", 2000) + "1",
	strings.Repeat("2^", 1000) + "2",
	strings.Repeat("x", 3000),
	`\sin(` + strings.Repeat(`\sin(`, 300) + "1" + strings.Repeat(")", 301),
	"(" + strings.Repeat("x+", 100) + "1)^{50}",
	"(x-1)^{256}/(x+1)^{256}",
	strings.Repeat(`\begin{pmatrix}`, 50) + "1" + strings.Repeat(`\end{pmatrix}`, 50),
	strings.Repeat(`\boxed{`, 3000) + "1" + strings.Repeat("}", 3000),
	strings.Repeat("<answer>", 3000) + strings.Repeat("</answer>", 3000),
	`\frac{(x+y)^{40}}{(x-y)^{40}} + \frac{(x-y)^{40}}{(x+y)^{40}}`,
	`\{` + strings.Repeat(`(\sqrt2+\sqrt3+\sqrt5+x)^{9},`, 40) + `1\}`,
	strings.Repeat(`(\sqrt2+\sqrt3+x+y)^{7}, `, 60) + "1",
	strings.Repeat(`\sin(x^{99}+y), `, 60) + "1",
}

// maxAdversarialAlloc bounds the bytes the four calls below may allocate for one input and one
// reference. The worst of the table allocates ~12 MB; a grade whose work bounds failed would
// allocate without end.
const maxAdversarialAlloc = 64 << 20

func TestAdversarialInputsAreBounded(t *testing.T) {
	var slowest time.Duration
	var which string
	var ms runtime.MemStats
	for _, a := range adversarialInputs {
		for _, ref := range []string{a, "1", "x+1"} {
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			start := time.Now()
			Grade(`\boxed{`+a+`}`, ref, strict)
			Grade(a, ref, rstar2)
			Kind(a)
			Canonical(a)
			d := time.Since(start)
			runtime.ReadMemStats(&ms)
			if alloc := ms.TotalAlloc - before; alloc > maxAdversarialAlloc {
				t.Errorf("%.60q against %q allocated %d MB, more than the bound of %d MB", a, ref, alloc>>20, maxAdversarialAlloc>>20)
			}
			if d > slowest {
				slowest, which = d, a
			}
		}
	}
	if len(which) > 60 {
		which = which[:60] + "…"
	}
	t.Logf("slowest adversarial input (4 calls): %v for %q", slowest, which)
}

func TestBoundsAreReported(t *testing.T) {
	for _, tc := range []struct{ expr, why string }{
		{"2^{100000000}", "power past the coefficient bits"},
		{strings.Repeat("2^{10000}*", 100) + "1", "product of big constants"},
		{"10000000!", "factorial past the cap"},
		{`\binom{10^{9}}{5*10^{8}}`, "binomial past the cap"},
		{"(x+y+z+w)^{200}", "expansion past the term cap"},
		{strings.Repeat("(", 500) + "1" + strings.Repeat(")", 500), "nesting past the depth cap"},
	} {
		toks, err := lex(normalize(tc.expr))
		if err != nil {
			t.Fatalf("lex %q: %v", tc.expr, err)
		}
		n, err := parseExpr(toks)
		if err == nil {
			_, err = (&evaluator{bud: newBudget(exactOps)}).eval(n)
		}
		if !isTooBig(err) {
			t.Errorf("%s: %.40q gave %v, want a too-big error", tc.why, tc.expr, err)
		}
	}
}
