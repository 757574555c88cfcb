package reward

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

const (
	maxNodes  = 2000           // nodes in one parsed expression
	maxDepth  = 100            // nesting of groups
	maxDigits = maxAnswerChars // digits in one number literal
)

var functionNames = map[string]bool{
	`\sin`: true, `\cos`: true, `\tan`: true, `\cot`: true, `\sec`: true, `\csc`: true,
	`\arcsin`: true, `\arccos`: true, `\arctan`: true, `\sinh`: true, `\cosh`: true, `\tanh`: true,
	`\log`: true, `\ln`: true, `\lg`: true, `\exp`: true,
}

// parser reads one scalar expression from tokens.
type parser struct {
	toks  []token
	i     int
	nodes int
	depth int
}

func parseExpr(toks []token) (*node, error) {
	if len(toks) == 0 {
		return nil, fmt.Errorf("empty expression")
	}
	p := &parser{toks: toks}
	n, err := p.sum()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, fmt.Errorf("unexpected %q", p.toks[p.i].text)
	}
	return n, nil
}

func (p *parser) peek() token {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return token{kind: tokEnd}
}

func (p *parser) isOp(s string) bool {
	t := p.peek()
	return t.kind == tokOp && t.text == s
}

func (p *parser) expect(s string) error {
	if !p.isOp(s) {
		return fmt.Errorf("expected %q", s)
	}
	p.i++
	return nil
}

func (p *parser) mk(kind nodeKind, args ...*node) (*node, error) {
	p.nodes++
	if p.nodes > maxNodes {
		return nil, errTooBig("expression size")
	}
	return &node{kind: kind, args: args}, nil
}

func (p *parser) sum() (*node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, errTooBig("nesting depth")
	}
	first, err := p.signed()
	if err != nil {
		return nil, err
	}
	terms := []*node{first}
	for p.isOp("+") || p.isOp("-") {
		neg := p.peek().text == "-"
		p.i++
		t, err := p.signed()
		if err != nil {
			return nil, err
		}
		if neg {
			if t, err = p.mk(nNeg, t); err != nil {
				return nil, err
			}
		}
		terms = append(terms, t)
	}
	if len(terms) == 1 {
		return first, nil
	}
	return p.mk(nAdd, terms...)
}

// signed reads a product with optional leading signs (so "2 - -3" and "a + -b" parse).
func (p *parser) signed() (*node, error) {
	if p.isOp("-") {
		p.i++
		t, err := p.signed()
		if err != nil {
			return nil, err
		}
		return p.mk(nNeg, t)
	}
	if p.isOp("+") {
		p.i++
		return p.signed()
	}
	return p.product()
}

func (p *parser) product() (*node, error) {
	left, err := p.power()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		switch {
		case t.kind == tokOp && (t.text == "*" || t.text == "/"):
			p.i++
			if p.isOp("-") { // 2 * -3
				p.i++
				right, err := p.power()
				if err != nil {
					return nil, err
				}
				if right, err = p.mk(nNeg, right); err != nil {
					return nil, err
				}
				if left, err = p.combine(t.text, left, right); err != nil {
					return nil, err
				}
				continue
			}
			right, err := p.power()
			if err != nil {
				return nil, err
			}
			if left, err = p.combine(t.text, left, right); err != nil {
				return nil, err
			}
		case p.startsAtom():
			right, err := p.power()
			if err != nil {
				return nil, err
			}
			if left, err = p.combine("*", left, right); err != nil {
				return nil, err
			}
		default:
			return left, nil
		}
	}
}

func (p *parser) combine(op string, a, b *node) (*node, error) {
	if op == "/" {
		return p.mk(nDiv, a, b)
	}
	if a.kind == nMul {
		a.args = append(a.args, b)
		return a, nil
	}
	return p.mk(nMul, a, b)
}

// startsAtom reports whether the next token can begin an implicitly multiplied factor.
func (p *parser) startsAtom() bool {
	t := p.peek()
	switch t.kind {
	case tokNum, tokIdent:
		return true
	case tokCmd:
		return t.text != `\cup` && t.text != `\cap` && t.text != "or" && t.text != "and" && t.text != `\in` &&
			t.text != `\pm` && t.text != `\mp` && t.text != `\setminus`
	case tokOp:
		return t.text == "(" || t.text == "{"
	}
	return false
}

func (p *parser) power() (*node, error) {
	base, err := p.postfix()
	if err != nil {
		return nil, err
	}
	if !p.isOp("^") {
		return base, nil
	}
	p.i++
	exp, err := p.exponent()
	if err != nil {
		return nil, err
	}
	n, err := p.mk(nPow, base, exp)
	if err != nil {
		return nil, err
	}
	for p.isOp("!") { // (2^3)! is rare; x^2! reads as (x^2)!
		p.i++
		if n, err = p.mk(nFact, n); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// exponent reads what follows ^: a group, a signed atom, or a whole number ("2^10" is 1024 here,
// unlike TeX, because that is what a model means by it).
func (p *parser) exponent() (*node, error) {
	if p.isOp("-") || p.isOp("+") {
		neg := p.isOp("-")
		p.i++
		e, err := p.exponent()
		if err != nil || !neg {
			return e, err
		}
		return p.mk(nNeg, e)
	}
	return p.power()
}

func (p *parser) postfix() (*node, error) {
	n, err := p.atom()
	if err != nil {
		return nil, err
	}
	for p.isOp("!") {
		p.i++
		if n, err = p.mk(nFact, n); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func (p *parser) group(close string) (*node, error) {
	n, err := p.sum()
	if err != nil {
		return nil, err
	}
	return n, p.expect(close)
}

func (p *parser) atom() (*node, error) {
	t := p.peek()
	switch t.kind {
	case tokEnd:
		return nil, fmt.Errorf("unexpected end")
	case tokNum:
		p.i++
		return p.number(t.text)
	case tokIdent:
		p.i++
		name := t.text
		if p.isOp("_") {
			p.i++
			sub, err := p.rawArg()
			if err != nil {
				return nil, err
			}
			name += "_" + sub
		}
		n, err := p.mk(nVar)
		if err != nil {
			return nil, err
		}
		n.name = name
		return n, nil
	case tokOp:
		switch t.text {
		case "(":
			p.i++
			return p.group(")")
		case "{":
			p.i++
			return p.group("}")
		case "[":
			p.i++
			return p.group("]")
		case "|":
			p.i++
			inner, err := p.sum()
			if err != nil {
				return nil, err
			}
			if err := p.expect("|"); err != nil {
				return nil, err
			}
			return p.mk(nAbs, inner)
		}
		return nil, fmt.Errorf("unexpected %q", t.text)
	}
	p.i++
	return p.command(t.text)
}

// number reads a literal, with a base subscript (1010_2) or a following mixed-number fraction
// (2\frac{1}{2} is 5/2).
func (p *parser) number(text string) (*node, error) {
	if len(text) > maxDigits {
		return nil, errTooBig("number literal")
	}
	n, err := p.mk(nNum)
	if err != nil {
		return nil, err
	}
	if p.isOp("_") && !strings.ContainsAny(text, ".eE") {
		p.i++
		sub, err := p.rawArg()
		if err != nil {
			return nil, err
		}
		base, ok := new(big.Int).SetString(sub, 10)
		if !ok || base.Cmp(big.NewInt(2)) < 0 || base.Cmp(big.NewInt(36)) > 0 {
			return nil, fmt.Errorf("bad base %q", sub)
		}
		v, ok := new(big.Int).SetString(text, int(base.Int64()))
		if !ok {
			return nil, fmt.Errorf("%s is not a base-%s numeral", text, sub)
		}
		n.num = new(big.Rat).SetInt(v)
		return n, nil
	}
	v, ok := parseDecimal(strings.TrimSuffix(text, "."))
	if !ok {
		return nil, fmt.Errorf("bad number %q", text)
	}
	if strings.ContainsAny(text, "eE") {
		// SetString accepts any exponent; bound it before anything multiplies it out.
		if len(v.Num().Bits())+len(v.Denom().Bits()) > 64 {
			return nil, errTooBig("scientific exponent")
		}
	}
	n.num = v
	if strings.Contains(text, ".") {
		n.name = "decimal"
	}
	if t := p.peek(); t.kind == tokCmd && t.text == `\frac` && v.IsInt() && !strings.Contains(text, ".") {
		save := p.i
		p.i++
		frac, err := p.fraction()
		if err == nil && frac.args[0].kind == nNum && frac.args[1].kind == nNum &&
			frac.args[0].num.IsInt() && frac.args[1].num.IsInt() && frac.args[1].num.Sign() > 0 {
			n.num = new(big.Rat).Add(v, new(big.Rat).Quo(frac.args[0].num, frac.args[1].num))
			n.name = ""
			return n, nil
		}
		p.i = save
	}
	return n, nil
}

// parseDecimal reads a literal, with a fast path for short integers.
func parseDecimal(text string) (*big.Rat, bool) {
	if len(text) <= 18 {
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return new(big.Rat).SetInt64(i), true
		}
	}
	return new(big.Rat).SetString(text)
}

// rawArg reads a subscript: one token, or a brace group, as text.
func (p *parser) rawArg() (string, error) {
	if p.isOp("{") {
		p.i++
		var b strings.Builder
		for !p.isOp("}") {
			t := p.peek()
			if t.kind == tokEnd || b.Len() > 40 {
				return "", fmt.Errorf("bad subscript")
			}
			b.WriteString(t.text)
			p.i++
		}
		p.i++
		return b.String(), nil
	}
	t := p.peek()
	if t.kind == tokEnd || t.kind == tokOp {
		return "", fmt.Errorf("bad subscript")
	}
	p.i++
	return t.text, nil
}

// arg reads a command argument: a brace group, or a single character of a number (\frac12), or
// one atom (\sqrt x).
func (p *parser) arg() (*node, error) {
	if p.isOp("{") {
		p.i++
		return p.group("}")
	}
	t := p.peek()
	if t.kind == tokNum && len(t.text) > 1 {
		p.toks[p.i].text = t.text[1:]
		n, err := p.mk(nNum)
		if err != nil {
			return nil, err
		}
		n.num = new(big.Rat).SetInt64(int64(t.text[0] - '0'))
		if t.text[0] == '.' {
			return nil, fmt.Errorf("bad argument")
		}
		return n, nil
	}
	return p.atom()
}

func (p *parser) fraction() (*node, error) {
	num, err := p.arg()
	if err != nil {
		return nil, err
	}
	den, err := p.arg()
	if err != nil {
		return nil, err
	}
	return p.mk(nDiv, num, den)
}

func (p *parser) command(name string) (*node, error) {
	switch name {
	case `\frac`:
		return p.fraction()
	case `\binom`:
		f, err := p.fraction()
		if err != nil {
			return nil, err
		}
		f.kind = nBinom
		return f, nil
	case `\sqrt`:
		var index *node
		if p.isOp("[") {
			p.i++
			var err error
			if index, err = p.group("]"); err != nil {
				return nil, err
			}
		} else {
			var err error
			if index, err = p.mk(nNum); err != nil {
				return nil, err
			}
			index.num = big.NewRat(2, 1)
		}
		radicand, err := p.arg()
		if err != nil {
			return nil, err
		}
		return p.mk(nRoot, radicand, index)
	case `\cup`, `\cap`, "or", "and", `\in`, `\pm`, `\mp`, `\begin`, `\end`, `\varnothing`, `\setminus`:
		return nil, fmt.Errorf("unexpected %s", name)
	}
	if functionNames[name] {
		return p.function(name)
	}
	// Any other command is a named constant or Greek letter (\pi, \theta, \infty). Commands that
	// take a group (\overline{AB}, \hat{x}) read as their argument's text.
	n, err := p.mk(nVar)
	if err != nil {
		return nil, err
	}
	n.name = name
	if p.isOp("{") {
		sub, err := p.rawArg()
		if err != nil {
			return nil, err
		}
		n.name += "{" + sub + "}"
	}
	if p.isOp("_") {
		p.i++
		sub, err := p.rawArg()
		if err != nil {
			return nil, err
		}
		n.name += "_" + sub
	}
	return n, nil
}

// function reads \sin x, \sin^2(x), \log_2 8, \ln(x+1).
func (p *parser) function(name string) (*node, error) {
	var power, base *node
	var err error
	if name == `\log` && p.isOp("_") {
		p.i++
		if t := p.peek(); t.kind == tokNum { // \log_3 \frac19: 3 is no mixed number
			p.i++
			v, ok := new(big.Rat).SetString(t.text)
			if !ok || len(t.text) > maxDigits {
				return nil, fmt.Errorf("bad log base %q", t.text)
			}
			if base, err = p.mk(nNum); err != nil {
				return nil, err
			}
			base.num = v
		} else if base, err = p.arg(); err != nil {
			return nil, err
		}
	}
	if p.isOp("^") {
		p.i++
		if power, err = p.exponent(); err != nil {
			return nil, err
		}
	}
	var x *node
	if p.isOp("(") || p.isOp("{") {
		x, err = p.atom()
	} else {
		x, err = p.power()
	}
	if err != nil {
		return nil, err
	}
	f, err := p.mk(nFunc, x)
	if err != nil {
		return nil, err
	}
	f.name = strings.TrimPrefix(name, `\`)
	if f.name == "lg" {
		f.name = "log10"
	}
	if base != nil {
		f.args = append(f.args, base)
	}
	if power != nil {
		return p.mk(nPow, f, power)
	}
	return f, nil
}
