package reward

import (
	"math/big"
	"sort"
	"strconv"
	"strings"
)

// Polynomials over the exact constants: a term is a rational coefficient times a monomial, and a
// monomial is a product of indeterminates (variables, π, opaque atoms such as sin(x)), optionally
// the imaginary unit, and at most one canonical real radical. Products are reduced (i² = −1,
// radicals combined), so equal polynomials have equal term maps.

type factorPow struct {
	name string
	exp  int
}

type monomial struct {
	vars []factorPow // sorted by name, exp ≥ 1
	imag bool
	root radical
}

type term struct {
	mono monomial
	coef *big.Rat
}

type poly map[string]term

const (
	maxTerms   = 400
	maxVarExp  = 10000
	maxCoefBit = 20000
)

func (m monomial) key() string {
	var b strings.Builder
	for i, f := range m.vars {
		if i > 0 {
			b.WriteByte('*')
		}
		b.WriteString(f.name)
		if f.exp != 1 {
			b.WriteByte('^')
			b.WriteString(strconv.Itoa(f.exp))
		}
	}
	if m.imag {
		b.WriteString("|i")
	}
	if m.root.n != 0 {
		b.WriteByte('|')
		b.WriteString(m.root.key())
	}
	return b.String()
}

func constPoly(q *big.Rat) poly {
	p := poly{}
	if q.Sign() != 0 {
		p[""] = term{coef: new(big.Rat).Set(q)}
	}
	return p
}

func monoPoly(m monomial, coef *big.Rat) poly {
	if coef.Sign() == 0 {
		return poly{}
	}
	return poly{m.key(): term{mono: m, coef: coef}}
}

func varPoly(name string) poly {
	return monoPoly(monomial{vars: []factorPow{{name, 1}}}, big.NewRat(1, 1))
}

// constant returns the polynomial's value when it is a plain rational.
func (p poly) constant() (*big.Rat, bool) {
	switch len(p) {
	case 0:
		return new(big.Rat), true
	case 1:
		if t, ok := p[""]; ok {
			return t.coef, true
		}
	}
	return nil, false
}

func (p poly) add(q poly, sign int) poly {
	out := make(poly, len(p)+len(q))
	for k, t := range p {
		out[k] = t
	}
	for k, t := range q {
		c := t.coef
		if sign < 0 {
			c = new(big.Rat).Neg(c)
		}
		if old, ok := out[k]; ok {
			s := new(big.Rat).Add(old.coef, c)
			if s.Sign() == 0 {
				delete(out, k)
			} else {
				out[k] = term{mono: old.mono, coef: s}
			}
		} else {
			out[k] = term{mono: t.mono, coef: c}
		}
	}
	return out
}

// scale returns q·p. Polynomials are never mutated, so scaling by 1 returns p itself.
func (p poly) scale(q *big.Rat) poly {
	if q.Cmp(ratOne) == 0 {
		return p
	}
	out := make(poly, len(p))
	if q.Sign() == 0 {
		return out
	}
	for k, t := range p {
		out[k] = term{mono: t.mono, coef: new(big.Rat).Mul(t.coef, q)}
	}
	return out
}

func (p poly) mul(q poly, bud *budget) (poly, error) {
	if c, ok := q.constant(); ok {
		return p.scale(c), nil
	}
	if c, ok := p.constant(); ok {
		return q.scale(c), nil
	}
	out := poly{}
	for _, a := range p {
		for _, b := range q {
			cost := 1 + (a.coef.Num().BitLen()+b.coef.Num().BitLen())/256
			if a.mono.root.n != 0 && b.mono.root.n != 0 {
				cost += 4 // combining radicals factors and allocates
			}
			if err := bud.spend(cost); err != nil {
				return nil, err
			}
			m, neg, extra, err := mulMonomials(a.mono, b.mono)
			if err != nil {
				return nil, err
			}
			c := new(big.Rat).Mul(a.coef, b.coef)
			if neg {
				c.Neg(c)
			}
			if extra != nil {
				c.Mul(c, new(big.Rat).SetInt(extra))
			}
			if err := checkBits(c); err != nil {
				return nil, err
			}
			k := m.key()
			if old, ok := out[k]; ok {
				c.Add(c, old.coef)
				if c.Sign() == 0 {
					delete(out, k)
					continue
				}
			}
			out[k] = term{mono: m, coef: c}
		}
		if len(out) > maxTerms {
			return nil, errTooBig("polynomial terms")
		}
	}
	return out, nil
}

func checkBits(c *big.Rat) error {
	if c.Num().BitLen() > maxCoefBit || c.Denom().BitLen() > maxCoefBit {
		return errTooBig("coefficient size")
	}
	return nil
}

// mulMonomials returns the reduced product a·b as (−1 if neg) · extra · monomial; extra is nil
// when it is 1, which is the common case and allocates nothing.
func mulMonomials(a, b monomial) (m monomial, neg bool, extra *big.Int, err error) {
	m.vars = make([]factorPow, 0, len(a.vars)+len(b.vars))
	i, j := 0, 0
	for i < len(a.vars) || j < len(b.vars) {
		switch {
		case j == len(b.vars) || i < len(a.vars) && a.vars[i].name < b.vars[j].name:
			m.vars = append(m.vars, a.vars[i])
			i++
		case i == len(a.vars) || b.vars[j].name < a.vars[i].name:
			m.vars = append(m.vars, b.vars[j])
			j++
		default:
			e := a.vars[i].exp + b.vars[j].exp
			if e > maxVarExp {
				return m, false, nil, errTooBig("exponent")
			}
			m.vars = append(m.vars, factorPow{a.vars[i].name, e})
			i++
			j++
		}
	}
	m.imag = a.imag != b.imag
	neg = a.imag && b.imag
	if a.root.n == 0 && b.root.n == 0 {
		return m, neg, nil, nil
	}
	r, out, err := mulRadicals(a.root, b.root)
	if err != nil {
		return m, false, nil, err
	}
	m.root = r
	if out.IsInt64() && out.Int64() == 1 {
		out = nil
	}
	return m, neg, out, nil
}

// sortedKeys returns the term keys in a fixed order; the first is the "leading" term.
func (p poly) sortedKeys() []string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (p poly) String() string {
	if len(p) == 0 {
		return "0"
	}
	var b strings.Builder
	for i, k := range p.sortedKeys() {
		if i > 0 {
			b.WriteString(" + ")
		}
		b.WriteString(p[k].coef.RatString())
		if k != "" {
			b.WriteByte('*')
			b.WriteString(k)
		}
	}
	return b.String()
}

// budget counts coefficient multiplications so that no grade does unbounded work.
type budget struct{ left int }

func newBudget(ops int) *budget { return &budget{left: ops} }

func (b *budget) spend(n int) error {
	b.left -= n
	if b.left < 0 {
		return errTooBig("work budget")
	}
	return nil
}
