package reward

import (
	"strings"
	"testing"
)

func TestKind(t *testing.T) {
	for _, tc := range []struct{ answer, kind, why string }{
		{"5", "integer", "plain integer"},
		{"-17", "integer", "negative integer"},
		{"1,000", "integer", "thousands separator"},
		{"110.0", "integer", "integer-valued decimal"},
		{`\frac{4}{2}`, "integer", "integer-valued fraction"},
		{"2^{10}", "integer", "integer-valued power"},
		{"x = 5", "integer", "assignment of an integer"},
		{`5^\circ`, "integer", "degrees"},
		{"1010_2", "integer", "base subscript"},
		{`\frac{1}{2}`, "rational", "fraction"},
		{"-3/4", "rational", "slash fraction"},
		{"0.25", "decimal", "decimal literal"},
		{"-0.5", "decimal", "negative decimal"},
		{`\sqrt{2}`, "expression", "radical"},
		{`2\pi`, "expression", "pi"},
		{"x^2+1", "expression", "polynomial"},
		{"3+4i", "expression", "complex number"},
		{`\{1, 2\}`, "set", "braced set"},
		{"1, 2", "set", "bare list"},
		{`1 \pm \sqrt{2}`, "set", "plus-minus"},
		{`\varnothing`, "set", "empty set"},
		{"(1, 2)", "tuple", "ordered pair"},
		{"(1, 2, 3)", "tuple", "triple"},
		{"[1, 2)", "interval", "half-open interval"},
		{"[1, 2]", "interval", "closed interval"},
		{`(-\infty, 0)`, "interval", "open interval with infinity"},
		{`(1,2) \cup (3,4)`, "interval", "union"},
		{"x > 3", "interval", "inequality in one variable"},
		{`\begin{pmatrix}1&2\\3&4\end{pmatrix}`, "matrix", "pmatrix"},
		{"y = 2x + 3", "expression", "assignment of an expression"},
		{"x + y = 1", "equation", "equation"},
		{"x^2 + y^2 \\le 1", "equation", "inequality in two variables"},
		{`\text{Evelyn}`, "text", "name"},
		{"(C)", "text", "choice"},
		{"", "empty", "nothing"},
		{"  $ $ ", "empty", "only delimiters"},
	} {
		if got := Kind(tc.answer); got != tc.kind {
			t.Errorf("Kind(%q) = %q, want %q: %s", tc.answer, got, tc.kind, tc.why)
		}
	}
}

func TestCanonicalGroupsEquivalentAnswers(t *testing.T) {
	for _, group := range [][]string{
		{"1/2", `\frac{1}{2}`, "0.5", "2/4", `\dfrac12`},
		{"1000", "1,000", `1{,}000`, "x=1000", `1000 \text{ cm}`},
		{`2\sqrt2`, `\sqrt8`, `\frac{4}{\sqrt2}`},
		{`\{3,5\}`, "5, 3", `\{5,3,3\}`},
		{"(a+b)(b+c)(c+a)", "(a+c)(c+b)(b+a)"},
		{"x>3", `(3,\infty)`},
		{`\text{Evelyn}`, "evelyn"},
		{"x+y=1", "2x+2y=2"},
	} {
		want := Canonical(group[0])
		for _, a := range group[1:] {
			if got := Canonical(a); got != want {
				t.Errorf("Canonical(%q) = %q, Canonical(%q) = %q", a, got, group[0], want)
			}
		}
	}
	for _, pair := range [][2]string{{"1/2", "1/3"}, {"(1,2)", "(2,1)"}, {"[1,2)", "(1,2)"}, {"x+1", "x-1"}, {`\sqrt2`, `\sqrt3`}} {
		if Canonical(pair[0]) == Canonical(pair[1]) {
			t.Errorf("Canonical(%q) == Canonical(%q) = %q", pair[0], pair[1], Canonical(pair[0]))
		}
	}
}

func TestExtractAnswer(t *testing.T) {
	for _, tc := range []struct {
		response, want string
		found          bool
	}{
		{`\boxed{a} \boxed{b}`, "b", true},
		{`\boxed{\frac{\sqrt{2}}{2}}`, `\frac{\sqrt{2}}{2}`, true},
		{`\boxed{ 5 }`, "5", true},
		{`<answer>\boxed{1}</answer><tool_response>\boxed{2}</tool_response>`, "1", true},
		{"nothing here", "", false},
		{strings.Repeat("a", maxResponseBytes+10) + `\boxed{9}`, "9", true},
	} {
		got, found := ExtractAnswer(tc.response)
		if got != tc.want || found != tc.found {
			t.Errorf("ExtractAnswer(%.60q) = %q, %v; want %q, %v", tc.response, got, found, tc.want, tc.found)
		}
	}
}
