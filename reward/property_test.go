package reward

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
)

// randomExpr builds a random arithmetic expression, rendered in LaTeX and in plain text, with its
// exact value computed independently of the parser (big.Rat on the tree).
func randomExpr(r *rand.Rand, depth int) (latex, plain string, v *big.Rat) {
	if depth == 0 || r.IntN(3) == 0 {
		n := int64(r.IntN(20) + 1)
		return fmt.Sprint(n), fmt.Sprint(n), big.NewRat(n, 1)
	}
	la, pa, va := randomExpr(r, depth-1)
	lb, pb, vb := randomExpr(r, depth-1)
	switch r.IntN(6) {
	case 0:
		return "(" + la + "+" + lb + ")", "(" + pa + "+" + pb + ")", new(big.Rat).Add(va, vb)
	case 1:
		return "(" + la + "-" + lb + ")", "(" + pa + "-" + pb + ")", new(big.Rat).Sub(va, vb)
	case 2:
		return la + `\cdot ` + lb, "(" + pa + ")*(" + pb + ")", new(big.Rat).Mul(va, vb)
	case 3:
		if vb.Sign() == 0 {
			return la, pa, va
		}
		return `\frac{` + la + "}{" + lb + "}", "(" + pa + ")/(" + pb + ")", new(big.Rat).Quo(va, vb)
	case 4:
		k := int64(r.IntN(4))
		p := new(big.Rat).SetFrac(new(big.Int).Exp(va.Num(), big.NewInt(k), nil), new(big.Int).Exp(va.Denom(), big.NewInt(k), nil))
		return "{(" + la + ")}^{" + fmt.Sprint(k) + "}", "(" + pa + ")^" + fmt.Sprint(k), p
	default:
		return `\left(-` + la + `\right)`, "(-(" + pa + "))", new(big.Rat).Neg(va)
	}
}

func TestRandomArithmeticMatchesIndependentValue(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 400; i++ {
		latex, plain, v := randomExpr(r, 4)
		want := v.RatString()
		for _, s := range []string{latex, plain} {
			if ok, why := equivalent(s, want, Options{}); !ok {
				t.Fatalf("%s should equal %s: %s", s, want, why)
			}
			other := new(big.Rat).Add(v, big.NewRat(1, 7)).RatString()
			if ok, _ := equivalent(s, other, Options{}); ok {
				t.Fatalf("%s should not equal %s", s, other)
			}
		}
		if k := Canonical(latex); k != want {
			t.Fatalf("Canonical(%s) = %q, want %q", latex, k, want)
		}
	}
}

// Expanding a product of random linear factors in any order gives the same polynomial; changing
// one coefficient does not.
func TestRandomPolynomialIdentities(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vars := []string{"a", "b", "c", "x"}
	for i := 0; i < 100; i++ {
		n := r.IntN(4) + 2
		factors := make([]string, n)
		for j := range factors {
			factors[j] = fmt.Sprintf("(%d%s+%d%s-%d)", r.IntN(5)+1, vars[r.IntN(4)], r.IntN(5)+1, vars[r.IntN(4)], r.IntN(9))
		}
		a, b := "", ""
		for j := range factors {
			a += factors[j]
			b = factors[j] + b
		}
		if ok, why := equivalent(a, b, Options{}); !ok {
			t.Fatalf("%s = %s: %s", a, b, why)
		}
		if ok, _ := equivalent(a, b+"+1", Options{}); ok {
			t.Fatalf("%s ≠ %s+1", a, b)
		}
	}
}
