package reward

import (
	"fmt"
	"math"
	"math/big"
)

// value is an exact quotient of polynomials. The denominator is never zero; a constant
// denominator is folded into the numerator. A rational value is held as q alone, which keeps the
// common case (plain numbers) free of maps.
type value struct {
	q        *big.Rat // when non-nil, the value is q and num, den are unused; never mutated
	num, den poly
}

func constValue(q *big.Rat) value { return value{q: q} }

func polyValue(num poly) value { return value{num: num, den: constPoly(ratOne)} }

func (v value) numer() poly {
	if v.q != nil {
		return constPoly(v.q)
	}
	return v.num
}

func (v value) denom() poly {
	if v.q != nil {
		return constPoly(ratOne)
	}
	return v.den
}

func (v value) neg() value {
	if v.q != nil {
		return constValue(new(big.Rat).Neg(v.q))
	}
	return value{num: v.num.scale(big.NewRat(-1, 1)), den: v.den}
}

func (v value) rational() (*big.Rat, bool) {
	if v.q != nil {
		return v.q, true
	}
	n, ok1 := v.num.constant()
	d, ok2 := v.den.constant()
	if !ok1 || !ok2 {
		return nil, false
	}
	return new(big.Rat).Quo(n, d), true
}

func makeValue(num, den poly) (value, error) {
	if len(den) == 0 {
		return value{}, fmt.Errorf("division by zero")
	}
	if c, ok := den.constant(); ok {
		if n, ok := num.constant(); ok {
			return constValue(new(big.Rat).Quo(n, c)), nil
		}
		if c.Cmp(ratOne) == 0 {
			return value{num: num, den: den}, nil
		}
		return polyValue(num.scale(new(big.Rat).Inv(c))), nil
	}
	return value{num: num, den: den}, nil
}

// ratOne is read-only: constPoly copies it.
var ratOne = big.NewRat(1, 1)

// key is a canonical-ish text of the value, used to name opaque atoms such as sin(key).
func (v value) key() string {
	if c, ok := v.denom().constant(); ok && c.Cmp(big.NewRat(1, 1)) == 0 {
		return v.numer().String()
	}
	lead := v.denom()[v.denom().sortedKeys()[0]].coef
	inv := new(big.Rat).Inv(lead)
	return "(" + v.numer().scale(inv).String() + ")/(" + v.denom().scale(inv).String() + ")"
}

// evaluator computes exact values. With env set, variables take those rational values.
type evaluator struct {
	bud *budget
	env map[string]*big.Rat
}

func (ev *evaluator) eval(n *node) (value, error) {
	switch n.kind {
	case nNum:
		return constValue(n.num), nil
	case nVar:
		switch n.name {
		case "i":
			return polyValue(monoPoly(monomial{imag: true}, big.NewRat(1, 1))), nil
		}
		if q, ok := ev.env[n.name]; ok {
			return constValue(q), nil
		}
		return polyValue(varPoly(n.name)), nil
	case nNeg:
		a, err := ev.eval(n.args[0])
		if err != nil {
			return value{}, err
		}
		return a.neg(), nil
	case nAdd:
		return ev.fold(n.args, ev.add)
	case nMul:
		return ev.fold(n.args, ev.mul)
	case nDiv:
		a, b, err := ev.evalPair(n)
		if err != nil {
			return value{}, err
		}
		return ev.div(a, b)
	case nPow:
		return ev.pow(n)
	case nRoot:
		return ev.root(n)
	case nFact:
		return ev.factorial(n)
	case nBinom:
		return ev.binom(n)
	case nFunc:
		return ev.function(n)
	case nAbs:
		return ev.abs(n)
	}
	return value{}, fmt.Errorf("unknown node")
}

// evalPair evaluates a binary node's two operands.
func (ev *evaluator) evalPair(n *node) (a, b value, err error) {
	if a, err = ev.eval(n.args[0]); err != nil {
		return value{}, value{}, err
	}
	if b, err = ev.eval(n.args[1]); err != nil {
		return value{}, value{}, err
	}
	return a, b, nil
}

// fold evaluates args left to right and combines them with op.
func (ev *evaluator) fold(args []*node, op func(a, b value) (value, error)) (value, error) {
	acc, err := ev.eval(args[0])
	if err != nil {
		return value{}, err
	}
	for _, arg := range args[1:] {
		b, err := ev.eval(arg)
		if err != nil {
			return value{}, err
		}
		if acc, err = op(acc, b); err != nil {
			return value{}, err
		}
	}
	return acc, nil
}

func (ev *evaluator) add(a, b value) (value, error) {
	if x, ok := a.rational(); ok {
		if y, ok := b.rational(); ok {
			r := new(big.Rat).Add(x, y)
			if err := checkBits(r); err != nil {
				return value{}, err
			}
			return constValue(r), nil
		}
	}
	if a.denom().String() == b.denom().String() {
		return makeValue(a.numer().add(b.numer(), 1), a.denom())
	}
	ad, err := a.numer().mul(b.denom(), ev.bud)
	if err != nil {
		return value{}, err
	}
	bc, err := b.numer().mul(a.denom(), ev.bud)
	if err != nil {
		return value{}, err
	}
	dd, err := a.denom().mul(b.denom(), ev.bud)
	if err != nil {
		return value{}, err
	}
	return makeValue(ad.add(bc, 1), dd)
}

func (ev *evaluator) mul(a, b value) (value, error) {
	if x, ok := a.rational(); ok {
		if y, ok := b.rational(); ok {
			r := new(big.Rat).Mul(x, y)
			if err := checkBits(r); err != nil {
				return value{}, err
			}
			return constValue(r), nil
		}
	}
	nn, err := a.numer().mul(b.numer(), ev.bud)
	if err != nil {
		return value{}, err
	}
	if len(nn) == 0 {
		return constValue(new(big.Rat)), nil
	}
	dd, err := a.denom().mul(b.denom(), ev.bud)
	if err != nil {
		return value{}, err
	}
	return makeValue(nn, dd)
}

func (ev *evaluator) div(a, b value) (value, error) {
	if len(b.numer()) == 0 {
		return value{}, fmt.Errorf("division by zero")
	}
	return ev.mul(a, value{num: b.denom(), den: b.numer()})
}

// opaque wraps something gorstar does not simplify (sin x, x^y, √x) as an indeterminate named by
// its canonical text, so equal inputs still compare equal.
func opaque(name string) value {
	return polyValue(varPoly("⟨" + name + "⟩"))
}

func (ev *evaluator) pow(n *node) (value, error) {
	base, exp, err := ev.evalPair(n)
	if err != nil {
		return value{}, err
	}
	q, ok := exp.rational()
	if !ok {
		return opaque("pow(" + base.key() + "," + exp.key() + ")"), nil
	}
	if q.IsInt() {
		return ev.intPow(base, q.Num())
	}
	if c, ok := base.rational(); ok {
		// c^(p/r) = (c^p)^(1/r)
		if q.Denom().BitLen() > 7 {
			return value{}, errTooBig("root index")
		}
		cp, err := ev.intPow(constValue(c), q.Num())
		if err != nil {
			return value{}, err
		}
		cpq, _ := cp.rational()
		return ev.rootOfConst(cpq, int(q.Denom().Int64()))
	}
	return opaque("pow(" + base.key() + "," + q.RatString() + ")"), nil
}

func (ev *evaluator) intPow(base value, k *big.Int) (value, error) {
	if k.Sign() == 0 {
		return constValue(big.NewRat(1, 1)), nil
	}
	if k.Sign() < 0 {
		if len(base.numer()) == 0 {
			return value{}, fmt.Errorf("division by zero")
		}
		base = value{num: base.denom(), den: base.numer()}
		k = new(big.Int).Neg(k)
	}
	if c, ok := base.rational(); ok {
		bits := c.Num().BitLen() + c.Denom().BitLen()
		if !k.IsInt64() || bits > 1 && k.Int64()*int64(bits-1) > maxCoefBit || k.Int64() > 1<<20 {
			if c.Cmp(big.NewRat(1, 1)) == 0 || c.Sign() == 0 {
				return constValue(c), nil
			}
			if c.Cmp(big.NewRat(-1, 1)) == 0 {
				return constValue(big.NewRat(int64(1-2*int(k.Bit(0))), 1)), nil
			}
			return value{}, errTooBig("power")
		}
		if err := ev.bud.spend(1 + int(k.Int64())*bits/4096); err != nil {
			return value{}, err
		}
		num := new(big.Int).Exp(c.Num(), k, nil)
		den := new(big.Int).Exp(c.Denom(), k, nil)
		return constValue(new(big.Rat).SetFrac(num, den)), nil
	}
	if !k.IsInt64() || k.Int64() > 256 {
		return value{}, errTooBig("power of an expression")
	}
	result := constValue(big.NewRat(1, 1))
	sq := base
	for e := k.Int64(); ; {
		var err error
		if e&1 == 1 {
			if result, err = ev.mul(result, sq); err != nil {
				return value{}, err
			}
		}
		e >>= 1
		if e == 0 {
			return result, nil
		}
		if sq, err = ev.mul(sq, sq); err != nil {
			return value{}, err
		}
	}
}

func (ev *evaluator) root(n *node) (value, error) {
	x, idx, err := ev.evalPair(n)
	if err != nil {
		return value{}, err
	}
	k, ok := idx.rational()
	if !ok || !k.IsInt() || k.Num().Cmp(big.NewInt(2)) < 0 || k.Num().Cmp(big.NewInt(maxRootIndex)) > 0 {
		return opaque("pow(" + x.key() + ",1/(" + idx.key() + "))"), nil
	}
	r := int(k.Num().Int64())
	if c, ok := x.rational(); ok {
		return ev.rootOfConst(c, r)
	}
	return opaque("pow(" + x.key() + ",1/" + k.RatString() + ")"), nil
}

// rootOfConst is the principal real root for odd r and for c ≥ 0, and i·√|c| for a negative c
// under a square root.
func (ev *evaluator) rootOfConst(c *big.Rat, r int) (value, error) {
	if c.Sign() == 0 {
		return constValue(c), nil
	}
	neg := c.Sign() < 0
	if neg && r%2 == 0 && r != 2 {
		return opaque("pow(" + c.RatString() + ",1/" + fmt.Sprint(r) + ")"), nil
	}
	coef, rad, err := rootOfRational(new(big.Rat).Abs(c), r)
	if err != nil {
		return value{}, err
	}
	m := monomial{root: rad}
	if neg {
		if r == 2 {
			m.imag = true
		} else {
			coef.Neg(coef)
		}
	}
	return polyValue(monoPoly(m, coef)), nil
}

const (
	maxFactorial = 2000
	maxBinomN    = 1_000_000
	maxBinomK    = 2000
)

func (ev *evaluator) factorial(n *node) (value, error) {
	x, err := ev.eval(n.args[0])
	if err != nil {
		return value{}, err
	}
	c, ok := x.rational()
	if !ok {
		return opaque("fact(" + x.key() + ")"), nil
	}
	if !c.IsInt() || c.Sign() < 0 {
		return value{}, fmt.Errorf("factorial of %s", c.RatString())
	}
	if c.Num().Cmp(big.NewInt(maxFactorial)) > 0 {
		return value{}, errTooBig("factorial")
	}
	k := c.Num().Int64()
	if err := ev.bud.spend(int(k) / 4); err != nil {
		return value{}, err
	}
	return constValue(new(big.Rat).SetInt(new(big.Int).MulRange(1, k))), nil
}

func (ev *evaluator) binom(n *node) (value, error) {
	a, b, err := ev.evalPair(n)
	if err != nil {
		return value{}, err
	}
	nn, ok1 := a.rational()
	kk, ok2 := b.rational()
	if !ok1 || !ok2 || !nn.IsInt() || !kk.IsInt() {
		return opaque("binom(" + a.key() + "," + b.key() + ")"), nil
	}
	if nn.Sign() < 0 || nn.Num().Cmp(big.NewInt(maxBinomN)) > 0 {
		return value{}, errTooBig("binomial")
	}
	N, K := nn.Num().Int64(), kk.Num().Int64()
	if K < 0 || K > N {
		return constValue(new(big.Rat)), nil
	}
	if K > N-K {
		K = N - K
	}
	if K > maxBinomK {
		return value{}, errTooBig("binomial")
	}
	if err := ev.bud.spend(int(K) / 4); err != nil {
		return value{}, err
	}
	return constValue(new(big.Rat).SetInt(new(big.Int).Binomial(N, K))), nil
}

// function evaluates the few exact cases (log_b of a power of b, ln 1, exp 0, sin 0, cos 0) and
// keeps the rest opaque; numeric comparison takes over for those.
func (ev *evaluator) function(n *node) (value, error) {
	x, err := ev.eval(n.args[0])
	if err != nil {
		return value{}, err
	}
	name := n.name
	var base value
	if len(n.args) > 1 {
		if base, err = ev.eval(n.args[1]); err != nil {
			return value{}, err
		}
		name += "_" + base.key()
	}
	if c, ok := x.rational(); ok {
		switch {
		case c.Sign() == 0 && (n.name == "sin" || n.name == "tan" || n.name == "arcsin" || n.name == "arctan" || n.name == "sinh" || n.name == "tanh"):
			return constValue(new(big.Rat)), nil
		case c.Sign() == 0 && (n.name == "cos" || n.name == "exp" || n.name == "cosh"):
			return constValue(big.NewRat(1, 1)), nil
		case c.Cmp(big.NewRat(1, 1)) == 0 && (n.name == "ln" || n.name == "log" || n.name == "log10"):
			return constValue(new(big.Rat)), nil
		}
		if b, ok := logBase(n, base); ok {
			if t, ok := exactLog(b, c); ok {
				return constValue(t), nil
			}
		}
	}
	return opaque(name + "(" + x.key() + ")"), nil
}

func logBase(n *node, base value) (*big.Rat, bool) {
	switch {
	case n.name == "log10":
		return big.NewRat(10, 1), true
	case n.name == "log" && len(n.args) > 1:
		return base.rational()
	}
	return nil, false
}

// exactLog finds an integer t with b^t = x (|t| ≤ 64).
func exactLog(b, x *big.Rat) (*big.Rat, bool) {
	if b.Sign() <= 0 || x.Sign() <= 0 || b.Cmp(big.NewRat(1, 1)) == 0 {
		return nil, false
	}
	p := big.NewRat(1, 1)
	inv := new(big.Rat).Inv(b)
	for t := int64(0); t <= 64; t++ {
		if p.Cmp(x) == 0 {
			return big.NewRat(t, 1), true
		}
		if p.Num().BitLen() > 4096 {
			break
		}
		p.Mul(p, b)
	}
	p = big.NewRat(1, 1)
	for t := int64(0); t <= 64; t++ {
		if p.Cmp(x) == 0 {
			return big.NewRat(-t, 1), true
		}
		if p.Denom().BitLen() > 4096 {
			break
		}
		p.Mul(p, inv)
	}
	return nil, false
}

func (ev *evaluator) abs(n *node) (value, error) {
	x, err := ev.eval(n.args[0])
	if err != nil {
		return value{}, err
	}
	if c, ok := x.rational(); ok {
		return constValue(new(big.Rat).Abs(c)), nil
	}
	if f, err := evalFloat(n.args[0], nil); err == nil && imag(f) == 0 && !n.args[0].hasVars() && math.Abs(real(f)) > 1e-9 {
		if real(f) < 0 {
			return x.neg(), nil
		}
		return x, nil
	}
	return opaque("abs(" + x.key() + ")"), nil
}
