package reward

import (
	"math/big"
	"sort"
)

const (
	exactOps   = 5000 // budget for the exact symbolic comparisons of one grade
	pointOps   = 4000 // budget for all evaluations at sample points in one grade
	numPoints  = 3
	maxScalars = 1000 // scalar comparisons in one grade (sets compare elements pairwise)
)

// comparer holds one grade's options and its work budgets, shared by every comparison the grade
// makes, so that a large set of expensive elements is bounded as a whole.
type comparer struct {
	opts    Options
	bud     *budget // exact symbolic work
	points  *budget // exact work at sample points
	scalars int     // scalar comparisons made
}

func equivalent(got, ref string, opts Options) (bool, string) {
	a, b := parseAnswer(got), parseAnswer(ref)
	if a.kind == "empty" {
		return false, "empty answer"
	}
	if b.kind == "empty" {
		return false, "empty reference"
	}
	c := &comparer{opts: opts, bud: newBudget(exactOps), points: newBudget(pointOps)}
	return c.equal(a, b)
}

// equal compares answer a with reference b.
func (c *comparer) equal(a, b *answer) (bool, string) {
	if a.kind == "text" || b.kind == "text" {
		if a.text != "" && a.text == b.text {
			return true, "equal as text"
		}
		return false, "different text"
	}
	// x = 5 against 5: compare the value; against y = 5 as well (the name is not graded).
	if a.rels != nil && b.rels != nil && a.expr != nil && b.expr != nil {
		return c.scalar(a.expr, b.expr)
	}
	switch {
	case a.kind == "equation" && b.kind == "equation":
		return c.relations(a, b)
	case a.kind == "equation" || b.kind == "equation":
		if a.rels != nil && b.rels != nil { // y = 2x+3 against 2x+3 = y
			return c.relations(a, b)
		}
		return false, "equation against non-equation"
	case a.kind == "matrix" || b.kind == "matrix":
		return c.matrix(a, b)
	case a.union || b.union:
		if !a.union || !b.union {
			return false, "union against single interval"
		}
		return c.unordered(a.items, b.items, "intervals")
	case b.open == "{" && a.open == "{", b.bare && a.bare:
		return c.unordered(a.items, b.items, "sets")
	case b.open == "{" && a.items == nil && len(b.items) == 1:
		return c.equal(a, b.items[0])
	case a.open == "{" && b.items == nil && len(a.items) == 1 && !a.bare:
		return c.equal(a.items[0], b)
	case b.items != nil && a.bare: // a bare list against a tuple: in order
		return c.ordered(a.items, b.items, "tuples")
	case a.items != nil && b.items != nil:
		if a.open == "{" || b.open == "{" {
			return false, "set against tuple"
		}
		if a.open != b.open || a.close != b.close {
			return false, "different brackets " + a.open + a.close + " vs " + b.open + b.close
		}
		return c.ordered(a.items, b.items, b.kind+"s")
	case a.items != nil || b.items != nil || a.expr == nil || b.expr == nil:
		return false, "list against single value"
	}
	return c.scalar(a.expr, b.expr)
}

func (c *comparer) ordered(a, b []*answer, what string) (bool, string) {
	if len(a) != len(b) {
		return false, "different lengths"
	}
	for i := range a {
		if ok, why := c.equal(a[i], b[i]); !ok {
			return false, "element " + itoa(i+1) + ": " + why
		}
	}
	return true, "equal " + what
}

// unordered compares as sets: every element of each side equals some element of the other.
func (c *comparer) unordered(a, b []*answer, what string) (bool, string) {
	cover := func(xs, ys []*answer) bool {
		for _, x := range xs {
			found := false
			for _, y := range ys {
				if ok, _ := c.equal(x, y); ok {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	if cover(a, b) && cover(b, a) {
		return true, "equal " + what
	}
	return false, "different " + what
}

func (c *comparer) matrix(a, b *answer) (bool, string) {
	if a.kind == "matrix" && b.kind == "matrix" {
		if a.rows != b.rows || a.cols != b.cols {
			return false, "different matrix shapes"
		}
		return c.ordered(a.items, b.items, "matrices")
	}
	// A row or column vector against a tuple.
	m, t := a, b
	if b.kind == "matrix" {
		m, t = b, a
	}
	if (m.rows == 1 || m.cols == 1) && t.items != nil && t.open != "{" {
		return c.ordered(a.items, b.items, "vectors")
	}
	return false, "matrix against non-matrix"
}

// scalar compares two expressions exactly, then (past the bounds, or with opaque functions)
// numerically, and in RStar2 mode with the release's tolerances.
func (c *comparer) scalar(a, b *node) (bool, string) {
	if c.scalars++; c.scalars > maxScalars {
		return false, "too many comparisons"
	}
	ok, why, decided := c.exact(a, b)
	if decided && ok {
		return true, why
	}
	roots := a.hasVarRoot() || b.hasVarRoot()
	if !decided || a.hasFunc() || b.hasFunc() || roots {
		if ok, why := c.numeric(a, b); ok {
			return true, why
		}
	}
	if c.opts.Mode == RStar2 {
		if ok, why := release(a, b); ok {
			return true, why
		}
	}
	if !decided {
		return false, why
	}
	return false, "different values"
}

// exact compares symbolically; past the bound it evaluates the variables at sample points.
func (c *comparer) exact(a, b *node) (ok bool, why string, decided bool) {
	ev := &evaluator{bud: c.bud}
	d, rational, err := difference(ev, a, b)
	if err == nil {
		switch {
		case !d:
			return false, "different values", true
		case rational:
			return true, "equal as rationals", true
		case a.hasVars() || b.hasVars():
			return true, "equal as expressions", true
		}
		return true, "equal as exact numbers", true
	}
	if !isTooBig(err) {
		return false, "cannot evaluate: " + err.Error(), false
	}
	names := map[string]bool{}
	a.vars(names)
	b.vars(names)
	if len(names) == 0 {
		return false, "past exact bounds: " + err.Error(), false
	}
	vars := sortedNames(names)
	for k := 0; k < numPoints; k++ {
		env := map[string]*big.Rat{}
		for j, v := range vars {
			env[v] = samplePoint(j, k)
		}
		ev := &evaluator{bud: c.points, env: env}
		same, _, err := difference(ev, a, b)
		if err != nil {
			return false, "past exact bounds: " + err.Error(), false
		}
		if !same {
			return false, "different values at a sample point", true
		}
	}
	return true, "equal at sample points", true
}

// difference reports whether a − b is zero, by cross-multiplying the two quotients, and whether
// both are rationals.
func difference(ev *evaluator, a, b *node) (zero, rational bool, err error) {
	va, err := ev.eval(a)
	if err != nil {
		return false, false, err
	}
	vb, err := ev.eval(b)
	if err != nil {
		return false, false, err
	}
	qa, ra := va.rational()
	qb, rb := vb.rational()
	if ra && rb {
		return qa.Cmp(qb) == 0, true, nil
	}
	l, err := va.numer().mul(vb.denom(), ev.bud)
	if err != nil {
		return false, false, err
	}
	r, err := vb.numer().mul(va.denom(), ev.bud)
	if err != nil {
		return false, false, err
	}
	return len(l.add(r, -1)) == 0, ra && rb, nil
}

// numeric compares in floating point at sample points, with a tight tolerance.
func (c *comparer) numeric(a, b *node) (bool, string) {
	names := map[string]bool{}
	a.vars(names)
	b.vars(names)
	delete(names, "e")
	vars := sortedNames(names)
	trials := 1
	if len(vars) > 0 {
		trials = numPoints
	}
	for k := 0; k < trials; k++ {
		env := map[string]complex128{}
		for j, v := range vars {
			f, _ := samplePoint(j, k).Float64()
			env[v] = complex(f, 0)
		}
		fa, err1 := evalFloat(a, env)
		fb, err2 := evalFloat(b, env)
		if err1 != nil || err2 != nil || !closeEnough(fa, fb, 1e-12) {
			return false, ""
		}
	}
	return true, "equal numerically"
}

// release applies the rStar2-Agent release's numeric leniency: 1e-4 relative error, or off by a
// factor of 100 either way.
func release(a, b *node) (bool, string) {
	if a.hasVars() || b.hasVars() {
		return false, ""
	}
	fa, err1 := evalFloat(a, nil)
	fb, err2 := evalFloat(b, nil)
	if err1 != nil || err2 != nil || imag(fa) != 0 || imag(fb) != 0 {
		return false, ""
	}
	switch {
	case closeEnough(fa, fb, 1e-4):
		return true, "rstar2: within 1e-4 relative"
	case closeEnough(fa*100, fb, 1e-4):
		return true, "rstar2: equal after ×100"
	case closeEnough(fa, fb*100, 1e-4):
		return true, "rstar2: equal after ÷100"
	}
	return false, ""
}

func (c *comparer) relations(a, b *answer) (bool, string) {
	if len(a.rels) != len(b.rels) {
		return false, "different relations"
	}
	ok, why := c.sameRelations(a.sides, a.rels, b.sides, b.rels)
	if !ok && len(a.rels) == 1 { // 3 < x against x > 3
		flipped := map[string]string{"<": ">", ">": "<", "≤": "≥", "≥": "≤", "=": "=", "≠": "≠"}[a.rels[0]]
		if ok2, why2 := c.sameRelations([]*node{a.sides[1], a.sides[0]}, []string{flipped}, b.sides, b.rels); ok2 {
			return true, why2
		}
	}
	return ok, why
}

// sameRelations checks that each relation of a is a positive (or, for = and ≠, nonzero) rational
// multiple of the matching relation of b: x+y=1 is 2x+2y=2.
func (c *comparer) sameRelations(as []*node, arels []string, bs []*node, brels []string) (bool, string) {
	for i := range arels {
		if arels[i] != brels[i] {
			return false, "different relations"
		}
		ok, why, err := c.sameRelation(arels[i], as[i], as[i+1], bs[i], bs[i+1])
		if err != nil {
			// Past the bounds (i^{304} = 1): the relation holds as written when each side
			// equals its counterpart, compared as scalars are (exactly, else numerically).
			if isTooBig(err) && c.sameSides(as[i], as[i+1], bs[i], bs[i+1]) {
				continue
			}
			return false, "cannot evaluate: " + err.Error()
		}
		if !ok {
			return false, why
		}
	}
	return true, "equivalent relations"
}

// sameSides reports whether l = L and r = R, each compared as a scalar.
func (c *comparer) sameSides(l, r, L, R *node) bool {
	okL, _ := c.scalar(l, L)
	okR, _ := c.scalar(r, R)
	return okL && okR
}

// sameRelation checks that l rel r is a positive (or, for = and ≠, nonzero) rational multiple of
// L rel R; err is set when the sides cannot be evaluated.
func (c *comparer) sameRelation(rel string, l, r, L, R *node) (bool, string, error) {
	ev := &evaluator{bud: c.bud}
	da, err := sideDifference(ev, l, r)
	if err != nil {
		return false, "", err
	}
	db, err := sideDifference(ev, L, R)
	if err != nil {
		return false, "", err
	}
	p, err := da.numer().mul(db.denom(), ev.bud)
	if err != nil {
		return false, "", err
	}
	q, err := db.numer().mul(da.denom(), ev.bud)
	if err != nil {
		return false, "", err
	}
	if len(p) == 0 || len(q) == 0 {
		if len(p) != len(q) {
			return false, "different equations", nil
		}
		return true, "", nil
	}
	lead := p.sortedKeys()[0]
	qt, ok := q[lead]
	if !ok {
		return false, "different equations", nil
	}
	k := new(big.Rat).Quo(p[lead].coef, qt.coef)
	if len(p.add(q.scale(k), -1)) != 0 {
		return false, "different equations", nil
	}
	if rel != "=" && rel != "≠" {
		// Only a positive multiple keeps an inequality, and the sign of a non-constant
		// denominator is unknown.
		_, ca := da.denom().constant()
		_, cb := db.denom().constant()
		if k.Sign() < 0 || !ca || !cb {
			return false, "different inequalities", nil
		}
	}
	return true, "", nil
}

func sideDifference(ev *evaluator, l, r *node) (value, error) {
	vl, err := ev.eval(l)
	if err != nil {
		return value{}, err
	}
	vr, err := ev.eval(r)
	if err != nil {
		return value{}, err
	}
	return ev.add(vl, vr.neg())
}

func sortedNames(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func itoa(i int) string { return big.NewInt(int64(i)).String() }
