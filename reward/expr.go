package reward

import (
	"errors"
	"math/big"
)

// nodeKind is the operation at one node of a parsed expression.
type nodeKind int

const (
	nNum   nodeKind = iota // num
	nVar                   // name: x, a_1, \pi, \theta, \infty, i (the imaginary unit), e
	nAdd                   // args summed
	nMul                   // args multiplied
	nNeg                   // -args[0]
	nDiv                   // args[0] / args[1]
	nPow                   // args[0] ^ args[1]
	nFact                  // args[0]!
	nRoot                  // args[0] ^ (1/args[1]); \sqrt has args[1] = 2
	nBinom                 // binomial(args[0], args[1])
	nFunc                  // name(args[0]): sin, log, … (log base in args[1] when given)
	nAbs                   // |args[0]|
)

type node struct {
	kind nodeKind
	num  *big.Rat
	name string
	args []*node
}

// tooBigError marks input past a work bound: the caller may fall back to a cheaper comparison.
type tooBigError struct{ what string }

func (e *tooBigError) Error() string { return "too big: " + e.what }

func errTooBig(what string) error { return &tooBigError{what} }

func isTooBig(err error) bool {
	var t *tooBigError
	return errors.As(err, &t)
}

// hasVars reports whether the expression contains a variable other than the constants π and i.
func (n *node) hasVars() bool {
	if n.kind == nVar {
		return n.name != `\pi` && n.name != "i"
	}
	for _, a := range n.args {
		if a.hasVars() {
			return true
		}
	}
	return false
}

// vars collects the variable names in n.
func (n *node) vars(into map[string]bool) {
	if n.kind == nVar && n.name != `\pi` && n.name != "i" {
		into[n.name] = true
	}
	for _, a := range n.args {
		a.vars(into)
	}
}

// hasFunc reports whether the expression applies a function gorstar keeps opaque (sin, log, …).
func (n *node) hasFunc() bool {
	if n.kind == nFunc || n.kind == nAbs {
		return true
	}
	for _, a := range n.args {
		if a.hasFunc() {
			return true
		}
	}
	return false
}

// hasVarRoot reports whether the expression takes a root or a non-integer power of something in
// variables (\sqrt{x}, x^{1/3}, e^x): exact algebra keeps those opaque, so (\sqrt{x})^2 and x
// differ there and only a numeric check can tell them equal.
func (n *node) hasVarRoot() bool {
	switch {
	case n.kind == nRoot && n.args[0].hasVars():
		return true
	case n.kind == nPow && n.args[0].hasVars() && !n.args[1].isIntLiteral():
		return true
	}
	for _, a := range n.args {
		if a.hasVarRoot() {
			return true
		}
	}
	return false
}

// isIntLiteral reports whether n is an integer written as a literal, possibly negated.
func (n *node) isIntLiteral() bool {
	switch n.kind {
	case nNum:
		return n.num.IsInt()
	case nNeg:
		return n.args[0].isIntLiteral()
	}
	return false
}

// literalDecimal reports whether a number literal was written with a decimal point.
func (n *node) literalDecimal() bool {
	switch n.kind {
	case nNum:
		return n.name == "decimal"
	case nNeg:
		return n.args[0].literalDecimal()
	}
	return false
}
