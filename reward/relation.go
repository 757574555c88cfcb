package reward

import (
	"math/big"
	"strings"
)

func isRelation(t token) bool {
	if t.kind != tokOp {
		return false
	}
	switch t.text {
	case "=", "<", ">", "≤", "≥", "≠":
		return true
	}
	return false
}

func relationIndexes(toks []token) []int {
	var idx []int
	depth := 0
	for i, t := range toks {
		switch {
		case isOpen(t):
			depth++
		case isClose(t):
			depth--
		case depth == 0 && isRelation(t):
			idx = append(idx, i)
		}
	}
	return idx
}

// parseRelation reads x = 5 (the value 5), a < x ≤ b (an interval), and other equations and
// inequalities.
func parseRelation(toks []token, idx []int) *answer {
	if len(idx) > 4 {
		return nil
	}
	// f(x) = 2x + 1 assigns like y = 2x + 1.
	if len(idx) == 1 && toks[idx[0]].text == "=" && isFunctionHead(toks[:idx[0]]) {
		toks = append([]token{{kind: tokIdent, text: toks[0].text + "(…)"}}, toks[idx[0]:]...)
		idx = []int{1}
	}
	a := &answer{kind: "equation"}
	start := 0
	for _, i := range append(idx, len(toks)) {
		if i == start {
			return nil
		}
		n, err := parseExpr(toks[start:i])
		if err != nil {
			// "x = (1, 2)" or "x = 3, 5" style right-hand sides.
			if len(idx) == 1 && i == len(toks) && isLoneVariable(a.sides) {
				rhs := parseTokens(toks[start:], 1)
				if rhs == nil {
					return nil
				}
				return rhs
			}
			return nil
		}
		a.sides = append(a.sides, n)
		if i < len(toks) {
			a.rels = append(a.rels, toks[i].text)
		}
		start = i + 1
	}
	if iv := inequalityInterval(a); iv != nil {
		return iv
	}
	if len(a.sides) == 2 && a.rels[0] == "=" && isLoneVar(a.sides[1]) && !isLoneVar(a.sides[0]) && !a.sides[0].hasVars() {
		a.sides[0], a.sides[1] = a.sides[1], a.sides[0] // 5 = x is x = 5
	}
	if len(a.sides) == 2 && a.rels[0] == "=" && isLoneVar(a.sides[0]) && !mentions(a.sides[1], a.sides[0].name) {
		rhs := &answer{kind: "scalar", expr: a.sides[1], rels: a.rels, sides: a.sides}
		return rhs
	}
	return a
}

// isFunctionHead matches f(x), g(t, u), P(n) on the left of an equation.
func isFunctionHead(toks []token) bool {
	return len(toks) >= 3 && toks[0].kind == tokIdent && toks[1].kind == tokOp && toks[1].text == "(" &&
		matchingClose(toks, 1) == len(toks)-1
}

func isLoneVariable(sides []*node) bool { return len(sides) == 1 && isLoneVar(sides[0]) }

func isLoneVar(n *node) bool {
	return n.kind == nVar && n.name != `\pi` && n.name != "i" && n.name != `\infty` && n.name != "e"
}

func mentions(n *node, name string) bool {
	if n.kind == nVar && n.name == name {
		return true
	}
	for _, a := range n.args {
		if mentions(a, name) {
			return true
		}
	}
	return false
}

// inequalityInterval turns x > 3, x ≤ 2 and 1 < x ≤ 3 into intervals.
func inequalityInterval(a *answer) *answer {
	inf := &node{kind: nVar, name: `\infty`}
	negInf := &node{kind: nNeg, args: []*node{inf}}
	bracket := func(rel string, lower bool) string {
		strict := rel == "<" || rel == ">"
		switch {
		case lower && strict:
			return "("
		case lower:
			return "["
		case strict:
			return ")"
		}
		return "]"
	}
	item := func(n *node) *answer { return &answer{kind: "scalar", expr: n} }
	switch len(a.sides) {
	case 2:
		l, r, rel := a.sides[0], a.sides[1], a.rels[0]
		if rel == "=" || rel == "≠" {
			return nil
		}
		if isLoneVar(r) && !l.hasVars() { // 3 < x is x > 3
			l, r = r, l
			rel = map[string]string{"<": ">", ">": "<", "≤": "≥", "≥": "≤"}[rel]
		}
		if !isLoneVar(l) || r.hasVars() {
			// -x > -1 is x < 1, and 2x > 6 is x > 3.
			name, bound, flip, ok := linearBound(l, r)
			if !ok {
				return nil
			}
			l, r = &node{kind: nVar, name: name}, &node{kind: nNum, num: bound}
			if flip {
				rel = map[string]string{"<": ">", ">": "<", "≤": "≥", "≥": "≤"}[rel]
			}
		}
		if rel == ">" || rel == "≥" {
			return &answer{kind: "interval", open: bracket(rel, true), close: ")", items: []*answer{item(r), item(inf)}}
		}
		return &answer{kind: "interval", open: "(", close: bracket(rel, false), items: []*answer{item(negInf), item(r)}}
	case 3:
		lo, x, hi := a.sides[0], a.sides[1], a.sides[2]
		r1, r2 := a.rels[0], a.rels[1]
		if !isLoneVar(x) || lo.hasVars() || hi.hasVars() {
			return nil
		}
		up := func(r string) bool { return r == "<" || r == "≤" }
		down := func(r string) bool { return r == ">" || r == "≥" }
		switch {
		case up(r1) && up(r2):
			return &answer{kind: "interval", open: bracket(r1, true), close: bracket(r2, false), items: []*answer{item(lo), item(hi)}}
		case down(r1) && down(r2):
			return &answer{kind: "interval", open: bracket(r2, true), close: bracket(r1, false), items: []*answer{item(hi), item(lo)}}
		}
	}
	return nil
}

// linearBound solves l − r = a·x + b (a, b rational, a ≠ 0, one variable x) for the bound −b/a,
// and reports whether dividing by a flips the relation (a < 0). Anything else (two variables, a
// power of x, a radical or π in the bound) is not read.
func linearBound(l, r *node) (name string, bound *big.Rat, flip, ok bool) {
	ev := &evaluator{bud: newBudget(200)}
	d, err := sideDifference(ev, l, r)
	if err != nil {
		return "", nil, false, false
	}
	if _, ok := d.denom().constant(); !ok {
		return "", nil, false, false
	}
	var a *big.Rat
	b := new(big.Rat)
	for key, t := range d.numer() {
		switch {
		case key == "":
			b = t.coef
		case a == nil && len(t.mono.vars) == 1 && t.mono.vars[0].exp == 1 && !t.mono.imag && t.mono.root.n == 0 &&
			isLoneVar(&node{kind: nVar, name: t.mono.vars[0].name}) && !strings.HasPrefix(t.mono.vars[0].name, "⟨"):
			a, name = t.coef, t.mono.vars[0].name
		default:
			return "", nil, false, false
		}
	}
	if a == nil {
		return "", nil, false, false
	}
	den, _ := d.denom().constant()
	a = new(big.Rat).Quo(a, den)
	b = new(big.Rat).Quo(b, den)
	return name, new(big.Rat).Neg(new(big.Rat).Quo(b, a)), a.Sign() < 0, true
}
