package reward

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"
)

// Kind classifies an answer (a reference or an extracted answer): "integer", "rational",
// "decimal", "expression", "set", "tuple", "interval", "matrix", "equation", "text" or "empty".
// Numbers are classified by value: "\frac{4}{2}", "2^{10}", "110.0" and "x = 5" are integers.
func Kind(answer string) string {
	a := parseAnswer(answer)
	if a.kind == "scalar" {
		return scalarKind(a.expr)
	}
	return a.kind
}

// Canonical returns a key under which equivalent answers usually coincide, for majority voting:
// exact for rationals, a rounded numeric fingerprint for other numbers and for expressions in
// variables, sorted for sets. It is best effort: equal keys mean equivalent answers with high
// probability; Equivalent is the exact test.
func Canonical(answer string) string {
	return canonicalKey(parseAnswer(answer), newBudget(exactOps))
}

// canonicalKey names a parsed answer; bud bounds the exact work of the whole key.
func canonicalKey(a *answer, bud *budget) string {
	switch {
	case a.kind == "empty":
		return ""
	case a.kind == "text":
		return "text:" + a.text
	case a.expr != nil:
		return scalarKey(a.expr, bud)
	case a.kind == "matrix":
		return fmt.Sprintf("matrix%dx%d", a.rows, a.cols) + listKey(a.items, false, "(", ")", bud)
	case a.union:
		return "union" + listKey(a.items, true, "(", ")", bud)
	case a.kind == "equation":
		return equationKey(a, bud)
	case a.open == "{":
		return listKey(a.items, true, "{", "}", bud)
	}
	return listKey(a.items, false, a.open, a.close, bud)
}

func listKey(items []*answer, sorted bool, open, close string, bud *budget) string {
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = canonicalKey(it, bud)
	}
	if sorted {
		sort.Strings(keys)
		out := keys[:0]
		for i, k := range keys {
			if i == 0 || k != keys[i-1] {
				out = append(out, k)
			}
		}
		keys = out
	}
	return open + strings.Join(keys, ",") + close
}

// scalarKey is the exact rational when there is one, else a numeric fingerprint (at sample points
// for expressions in variables), else the expression's exact canonical text.
func scalarKey(n *node, bud *budget) string {
	ev := &evaluator{bud: bud}
	v, err := ev.eval(n)
	if err == nil {
		if q, ok := v.rational(); ok {
			return q.RatString()
		}
	}
	names := map[string]bool{}
	n.vars(names)
	delete(names, "e")
	delete(names, `\infty`)
	vars := sortedNames(names)
	trials := 1
	if len(vars) > 0 {
		trials = numPoints
	}
	var parts []string
	for k := 0; k < trials; k++ {
		env := map[string]complex128{}
		for j, name := range vars {
			f, _ := samplePoint(j, k).Float64()
			env[name] = complex(f, 0)
		}
		f, ferr := evalFloat(n, env)
		if ferr != nil || math.IsNaN(real(f)) || math.IsInf(real(f), 0) {
			parts = nil
			break
		}
		parts = append(parts, fingerprint(f))
	}
	if parts != nil {
		return "≈" + strings.Join(parts, ";")
	}
	if err == nil {
		return v.key()
	}
	return "expr:" + err.Error()
}

// fingerprint rounds to 10 significant digits so that the same number computed two ways agrees.
func fingerprint(f complex128) string {
	round := func(x float64) string {
		if math.Abs(x) < 1e-12 {
			return "0"
		}
		return fmt.Sprintf("%.10g", x)
	}
	if math.Abs(imag(f)) < 1e-12*math.Max(1, math.Abs(real(f))) {
		return round(real(f))
	}
	return round(real(f)) + "," + round(imag(f)) + "i"
}

// equationKey normalizes L − R (scaled so its leading coefficient is 1) for a single relation.
func equationKey(a *answer, bud *budget) string {
	if len(a.rels) == 1 && (a.rels[0] == "=" || a.rels[0] == "≠") {
		ev := &evaluator{bud: bud}
		if d, err := sideDifference(ev, a.sides[0], a.sides[1]); err == nil && len(d.numer()) > 0 {
			if _, ok := d.denom().constant(); ok {
				lead := d.numer()[d.numer().sortedKeys()[0]].coef
				return a.rels[0] + "0:" + d.numer().scale(new(big.Rat).Inv(lead)).String()
			}
			return a.rels[0] + "0:" + d.key()
		}
	}
	return "eq:" + a.text
}
