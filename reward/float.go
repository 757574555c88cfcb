package reward

import (
	"fmt"
	"math"
	"math/big"
	"math/cmplx"
)

// evalFloat evaluates an expression in complex floating point: the fallback for expressions past
// the exact bounds and for opaque functions (sin, log). env gives variables their values; e is
// Euler's number unless env names it.
func evalFloat(n *node, env map[string]complex128) (complex128, error) {
	switch n.kind {
	case nNum:
		f, _ := n.num.Float64()
		return complex(f, 0), nil
	case nVar:
		if v, ok := env[n.name]; ok {
			return v, nil
		}
		switch n.name {
		case "i":
			return 1i, nil
		case `\pi`:
			return math.Pi, nil
		case "e":
			return math.E, nil
		case `\infty`:
			return complex(math.Inf(1), 0), nil
		}
		return 0, fmt.Errorf("free variable %s", n.name)
	}
	args := make([]complex128, len(n.args))
	for i, a := range n.args {
		v, err := evalFloat(a, env)
		if err != nil {
			return 0, err
		}
		args[i] = v
	}
	switch n.kind {
	case nNeg:
		return complex(-real(args[0]), -imag(args[0])+0), nil
	case nAdd:
		var s complex128
		for _, a := range args {
			s += a
		}
		return s, nil
	case nMul:
		p := complex(1, 0)
		for _, a := range args {
			p *= a
		}
		return p, nil
	case nDiv:
		if args[1] == 0 {
			return 0, fmt.Errorf("division by zero")
		}
		return args[0] / args[1], nil
	case nPow:
		if imag(args[1]) == 0 && real(args[1]) == math.Trunc(real(args[1])) && imag(args[0]) == 0 {
			return complex(math.Pow(real(args[0]), real(args[1])), 0), nil
		}
		if v, ok := realPower(args[0], args[1]); ok {
			return v, nil
		}
		return cmplx.Pow(args[0], args[1]), nil
	case nRoot:
		return realRoot(args[0], args[1]), nil
	case nFact:
		x := real(args[0])
		g, _ := math.Lgamma(x + 1)
		return complex(math.Exp(g), 0), nil
	case nBinom:
		n, k := real(args[0]), real(args[1])
		a, _ := math.Lgamma(n + 1)
		b, _ := math.Lgamma(k + 1)
		c, _ := math.Lgamma(n - k + 1)
		return complex(math.Round(math.Exp(a-b-c)), 0), nil
	case nAbs:
		return complex(cmplx.Abs(args[0]), 0), nil
	case nFunc:
		return applyFunc(n.name, args)
	}
	return 0, fmt.Errorf("unknown node")
}

// realRoot is the real root for a real radicand when one exists (∛−8 = −2), else the principal one.
func realRoot(x, idx complex128) complex128 {
	r := real(idx)
	if imag(x) == 0 && imag(idx) == 0 && r == math.Trunc(r) {
		if real(x) >= 0 {
			return complex(math.Pow(real(x), 1/r), 0)
		}
		if int64(r)%2 == 1 {
			return complex(-math.Pow(-real(x), 1/r), 0)
		}
	}
	return cmplx.Pow(x, 1/idx)
}

// realPower is x^(p/q) for a negative real x and an odd q as the real number (∛x)^p, as exact
// evaluation and \sqrt[3]{x} have it: (x^{1/3})^2 and x^{2/3} then agree at every sample point.
func realPower(x, e complex128) (complex128, bool) {
	if imag(x) != 0 || imag(e) != 0 || real(x) >= 0 {
		return 0, false
	}
	for q := 3.0; q <= maxRootIndex; q += 2 {
		p := real(e) * q
		if math.Abs(p-math.Round(p)) > 1e-9 {
			continue
		}
		v := math.Pow(-real(x), real(e))
		if int64(math.Round(p))%2 != 0 {
			v = -v
		}
		return complex(v, 0), true
	}
	return 0, false
}

func applyFunc(name string, args []complex128) (complex128, error) {
	x := args[0]
	switch name {
	case "sin":
		return cmplx.Sin(x), nil
	case "cos":
		return cmplx.Cos(x), nil
	case "tan":
		return cmplx.Tan(x), nil
	case "cot":
		return 1 / cmplx.Tan(x), nil
	case "sec":
		return 1 / cmplx.Cos(x), nil
	case "csc":
		return 1 / cmplx.Sin(x), nil
	case "arcsin":
		return cmplx.Asin(x), nil
	case "arccos":
		return cmplx.Acos(x), nil
	case "arctan":
		return cmplx.Atan(x), nil
	case "sinh":
		return cmplx.Sinh(x), nil
	case "cosh":
		return cmplx.Cosh(x), nil
	case "tanh":
		return cmplx.Tanh(x), nil
	case "exp":
		return cmplx.Exp(x), nil
	case "ln":
		return cmplx.Log(x), nil
	case "log10":
		return cmplx.Log10(x), nil
	case "log":
		if len(args) > 1 {
			return cmplx.Log(x) / cmplx.Log(args[1]), nil
		}
		return cmplx.Log(x), nil // log without a base: natural, as in most answer keys
	}
	return 0, fmt.Errorf("unknown function %s", name)
}

// closeEnough compares floats with a relative tolerance.
func closeEnough(a, b complex128, rel float64) bool {
	if cmplx.IsNaN(a) || cmplx.IsNaN(b) || cmplx.IsInf(a) || cmplx.IsInf(b) {
		return false
	}
	d := cmplx.Abs(a - b)
	scale := math.Max(cmplx.Abs(a), cmplx.Abs(b))
	return d <= rel*scale || d < 1e-300
}

// samplePoint gives variable number j its value at trial k: fixed, distinct, unremarkable rationals.
func samplePoint(j, k int) *big.Rat {
	num := int64(17 + 7*j + 13*k + 3*j*k)
	den := int64(5 + 3*j + 2*k)
	if (j+k)%2 == 1 {
		num = -num
	}
	return big.NewRat(num, den)
}
