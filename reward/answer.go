package reward

import (
	"regexp"
	"strings"
	"unicode"
)

// answer is a parsed final answer or reference.
type answer struct {
	kind  string // what Kind returns; "scalar" until scalarKind refines it
	text  string // the normalized text, for text comparison
	expr  *node  // scalar: the expression
	items []*answer
	// tuple, interval: brackets; set: "{" "}" (bare=true for an unbracketed list)
	open, close string
	bare        bool
	rows, cols  int      // matrix
	rels        []string // equation or inequality chain: sides[i] rels[i] sides[i+1]
	sides       []*node
	union       bool // items are intervals joined by ∪
}

// parseAnswer turns an answer string into its structure. It never fails: what does not parse is text.
func parseAnswer(raw string) *answer {
	if len(raw) > maxAnswerChars {
		return &answer{kind: "text", text: textKey(raw[:maxAnswerChars])}
	}
	s := normalize(raw)
	if s == "" {
		return &answer{kind: "empty"}
	}
	if strings.Contains(s, `\begin`) {
		if m, ok := parseMatrix(s); ok {
			return m
		}
		if inner, ok := bracketedEnvironment(s); ok { // \left[ \begin{array}…\end{array} \right]
			if m, ok := parseMatrix(inner); ok {
				return m
			}
		}
		return &answer{kind: "text", text: textKey(s)}
	}
	if s == `\varnothing` || s == `\{\}` || s == "{}" {
		return &answer{kind: "set", open: "{", close: "}", items: []*answer{}}
	}
	if isTextual(s) {
		// "\text{The answer is } 5": the phrase is no part of the answer.
		if v, ok := answerPhrase(s); ok && v != s {
			return parseAnswer(v)
		}
	}
	if isTextual(s) || choiceRE.MatchString(s) {
		return &answer{kind: "text", text: textKey(s)}
	}
	s, ok := mixedNumbers(s)
	if !ok { // "11 6/6": no mixed number, and no product either
		return &answer{kind: "text", text: textKey(s)}
	}
	toks, err := lex(s)
	if err != nil { // not math: compare verbatim, so "5\\" is not "5"
		return &answer{kind: "text", text: "raw:" + s}
	}
	// "x \in \{3, 5\}" is the set.
	if len(toks) > 2 && toks[0].kind == tokIdent && toks[1].kind == tokCmd && toks[1].text == `\in` {
		toks = toks[2:]
	}
	a := parseTokens(toks, 0)
	if a == nil {
		return &answer{kind: "text", text: textKey(s)}
	}
	a.text = textKey(s)
	return a
}

// choiceRE matches a multiple-choice letter: (A) … (E), or a capital A … E alone.
var choiceRE = regexp.MustCompile(`^(\([A-Ea-e]\)|[A-E])$`)

var letterRunRE = regexp.MustCompile(`\\?[A-Za-z]{3,}`)

// isTextual reports whether s reads as words rather than math: a run of three or more letters that
// is no command or function name, or letters outside ASCII.
func isTextual(s string) bool {
	for _, r := range s {
		if r > 127 && unicode.IsLetter(r) {
			return true
		}
	}
	for _, w := range letterRunRE.FindAllString(s, -1) {
		if w[0] == '\\' {
			continue
		}
		if _, ok := plainWords[strings.ToLower(w)]; ok {
			continue
		}
		if strings.Contains(w, "sqrt") || strings.HasPrefix(w, "sin") || strings.HasPrefix(w, "cos") || strings.HasPrefix(w, "tan") || strings.HasPrefix(w, "log") {
			continue
		}
		return true
	}
	return false
}

var textNoise = strings.NewReplacer(" ", "", "\t", "", "\n", "", "{", "", "}", "", `\`, "", "$", "", "*", "")

// textKey normalizes text for comparison: case, spaces, braces and a choice's parentheses ignored.
func textKey(s string) string {
	t := strings.ToLower(textNoise.Replace(stripMath(s)))
	t = strings.TrimSuffix(t, ".")
	if len(t) == 3 && t[0] == '(' && t[2] == ')' { // (a) for choice a
		t = t[1:2]
	}
	return t
}

const maxItems = 64

// parseTokens reads the structure of a token list; depth guards recursion. It returns nil when the
// tokens do not parse.
func parseTokens(toks []token, depth int) *answer {
	if depth > 8 || len(toks) == 0 {
		return nil
	}
	// Unions of intervals.
	if parts := splitTop(toks, func(t token) bool { return t.kind == tokCmd && t.text == `\cup` }); len(parts) > 1 {
		u := &answer{kind: "interval", union: true}
		for _, part := range parts {
			p := parseTokens(part, depth+1)
			if p == nil {
				return nil
			}
			u.items = append(u.items, p)
		}
		return u
	}
	// Bracketed: (a, b), [a, b), \{a, b\}, {a, b}.
	if close := matchingClose(toks, 0); close == len(toks)-1 && len(toks) >= 2 {
		open, end := toks[0].text, toks[len(toks)-1].text
		inner := toks[1 : len(toks)-1]
		pieces := splitTop(inner, isListSeparator)
		set := open == `\{` || open == "{"
		if set {
			if len(inner) == 0 {
				return &answer{kind: "set", open: "{", close: "}", items: []*answer{}}
			}
			if len(pieces) > 1 || open == `\{` {
				return listAnswer(pieces, "set", "{", "}", false, depth)
			}
		} else if len(pieces) > 1 {
			kind := "tuple"
			if open != "(" || end != ")" || len(pieces) == 2 && (containsInfinity(inner)) {
				kind = "interval"
			}
			if open == "[" && end == "]" && len(pieces) != 2 {
				kind = "tuple"
			}
			return listAnswer(pieces, kind, open, end, false, depth)
		}
	}
	if pieces := splitTop(toks, isListSeparator); len(pieces) > 1 {
		return listAnswer(pieces, "set", "{", "}", true, depth)
	}
	// a ± b is the set {a + b, a − b}, at any depth: \frac{-1 \pm \sqrt5}{2}.
	if i := indexPlusMinus(toks); i >= 0 {
		plus := append(append(append([]token{}, toks[:i]...), token{tokOp, "+", 0}), toks[i+1:]...)
		minus := append(append(append([]token{}, toks[:i]...), token{tokOp, "-", 0}), toks[i+1:]...)
		return listAnswer([][]token{plus, minus}, "set", "{", "}", true, depth)
	}
	if relIdx := relationIndexes(toks); len(relIdx) > 0 {
		return parseRelation(toks, relIdx)
	}
	n, err := parseExpr(toks)
	if err != nil {
		return nil
	}
	return &answer{kind: "scalar", expr: n}
}

func indexPlusMinus(toks []token) int {
	for i, t := range toks {
		if t.kind == tokCmd && (t.text == `\pm` || t.text == `\mp`) {
			return i
		}
	}
	return -1
}

func listAnswer(pieces [][]token, kind, open, close string, bare bool, depth int) *answer {
	if len(pieces) > maxItems {
		return nil
	}
	a := &answer{kind: kind, open: open, close: close, bare: bare}
	for _, p := range pieces {
		item := parseTokens(p, depth+1)
		if item == nil {
			return nil
		}
		// A ± element of a set or list stands for its two values: \{1\pm\sqrt5, -2\} has three
		// elements. (Inside a set's piece, a bare set can only come from ±: commas split pieces.)
		if kind == "set" && item.kind == "set" && item.bare && indexPlusMinus(p) >= 0 {
			a.items = append(a.items, item.items...)
			continue
		}
		a.items = append(a.items, item)
	}
	if len(a.items) > maxItems {
		return nil
	}
	return a
}

func isListSeparator(t token) bool {
	return t.kind == tokOp && (t.text == "," || t.text == ";") || t.kind == tokCmd && (t.text == "or" || t.text == "and")
}

func containsInfinity(toks []token) bool {
	for _, t := range toks {
		if t.kind == tokCmd && t.text == `\infty` {
			return true
		}
	}
	return false
}

func isOpen(t token) bool {
	return t.kind == tokOp && (t.text == "(" || t.text == "[" || t.text == "{" || t.text == `\{`)
}

func isClose(t token) bool {
	return t.kind == tokOp && (t.text == ")" || t.text == "]" || t.text == "}" || t.text == `\}`)
}

// matchingClose returns the index of the bracket closing toks[i] (any closing bracket type, so
// half-open intervals match), or -1.
func matchingClose(toks []token, i int) int {
	if !isOpen(toks[i]) {
		return -1
	}
	depth := 0
	for j := i; j < len(toks); j++ {
		switch {
		case isOpen(toks[j]):
			depth++
		case isClose(toks[j]):
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// splitTop splits at separators outside brackets and absolute-value bars.
func splitTop(toks []token, sep func(token) bool) [][]token {
	var parts [][]token
	depth, start := 0, 0
	bars := 0
	for i, t := range toks {
		switch {
		case isOpen(t):
			depth++
		case isClose(t):
			depth--
		case t.kind == tokOp && t.text == "|":
			bars ^= 1
		case depth == 0 && bars == 0 && sep(t):
			parts = append(parts, toks[start:i])
			start = i + 1
		}
	}
	parts = append(parts, toks[start:])
	// Empty pieces ("1,,2", a trailing comma) are dropped.
	out := parts[:0]
	for _, p := range parts {
		if len(p) > 0 {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return [][]token{toks}
	}
	return out
}

// bracketedEnvironment returns the one environment that a pair of round or square brackets
// encloses: [\begin{array}{cc}…\end{array}] and (\begin{pmatrix}…\end{pmatrix}) are the matrix.
func bracketedEnvironment(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) < 2 || !(s[0] == '(' && s[len(s)-1] == ')' || s[0] == '[' && s[len(s)-1] == ']') {
		return "", false
	}
	inner := strings.TrimSpace(s[1 : len(s)-1])
	if !strings.HasPrefix(inner, `\begin{`) || !strings.HasSuffix(inner, "}") || strings.Count(inner, `\begin`) != 1 {
		return "", false
	}
	return inner, true
}

var matrixRE = regexp.MustCompile(`(?s)^\\begin\{([pbBvV]?matrix|array)\}(?:\{[lcr|]*\})?(.*)\\end\{([pbBvV]?matrix|array)\}$`)

func parseMatrix(s string) (*answer, bool) {
	m := matrixRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return nil, false
	}
	a := &answer{kind: "matrix"}
	for _, row := range strings.Split(m[2], `\\`) {
		if strings.TrimSpace(row) == "" {
			continue
		}
		cells := strings.Split(row, "&")
		if a.cols == 0 {
			a.cols = len(cells)
		} else if a.cols != len(cells) {
			return nil, false
		}
		for _, c := range cells {
			if len(a.items) >= maxItems {
				return nil, false
			}
			toks, err := lex(c)
			if err != nil {
				return nil, false
			}
			item := parseTokens(toks, 1)
			if item == nil {
				return nil, false
			}
			a.items = append(a.items, item)
		}
		a.rows++
	}
	return a, a.rows > 0
}

// scalarKind classifies a scalar by its exact value: integer, rational, decimal, or expression.
func scalarKind(n *node) string {
	ev := &evaluator{bud: newBudget(2000)}
	v, err := ev.eval(n)
	if err != nil {
		return "expression"
	}
	q, ok := v.rational()
	switch {
	case !ok:
		return "expression"
	case q.IsInt():
		return "integer"
	case n.literalDecimal():
		return "decimal"
	}
	return "rational"
}
