package reward

import (
	"math/big"
	"strconv"
	"strings"
)

// radical is the real number (Π p^e)^(1/n) in canonical form: 0 < e < n for every prime, and
// gcd(n, e…) = 1. Distinct canonical radicals are linearly independent over the rationals, which
// is what makes a polynomial over them zero exactly when its coefficients are.
type radical struct {
	n      int // 0: no radical (the number 1)
	primes []primePow
}

type primePow struct {
	p uint64
	e int
}

const (
	maxRootIndex = 64
	maxFactor    = 1e10 // radicands are factored by trial division, so they must stay small
)

func (r radical) key() string {
	if r.n == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("root")
	b.WriteString(strconv.Itoa(r.n))
	b.WriteByte('(')
	for i, pp := range r.primes {
		if i > 0 {
			b.WriteByte('*')
		}
		b.WriteString(strconv.FormatUint(pp.p, 10))
		if pp.e > 1 {
			b.WriteByte('^')
			b.WriteString(strconv.Itoa(pp.e))
		}
	}
	b.WriteByte(')')
	return b.String()
}

// canonicalRadical builds the radical of index n over prime exponents exps (any size), returning
// the integer that came out of the root: (Π p^exps)^(1/n) = out · radical.
func canonicalRadical(n int, exps map[uint64]int) (radical, *big.Int) {
	out := big.NewInt(1)
	var primes []primePow
	for p, e := range exps {
		if q := e / n; q > 0 {
			out.Mul(out, new(big.Int).Exp(new(big.Int).SetUint64(p), big.NewInt(int64(q)), nil))
		}
		if e%n != 0 {
			primes = append(primes, primePow{p, e % n})
		}
	}
	if len(primes) == 0 {
		return radical{}, out
	}
	g := n
	for _, pp := range primes {
		g = gcd(g, pp.e)
	}
	for i := range primes {
		primes[i].e /= g
	}
	sortPrimes(primes)
	return radical{n: n / g, primes: primes}, out
}

func sortPrimes(ps []primePow) {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && ps[j].p < ps[j-1].p; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}

// mulRadicals multiplies two canonical radicals: r1·r2 = out · r.
func mulRadicals(r1, r2 radical) (radical, *big.Int, error) {
	if r1.n == 0 {
		return r2, big.NewInt(1), nil
	}
	if r2.n == 0 {
		return r1, big.NewInt(1), nil
	}
	l := r1.n / gcd(r1.n, r2.n) * r2.n
	if l > maxRootIndex {
		return radical{}, nil, errTooBig("root index")
	}
	exps := map[uint64]int{}
	for _, pp := range r1.primes {
		exps[pp.p] += pp.e * (l / r1.n)
	}
	for _, pp := range r2.primes {
		exps[pp.p] += pp.e * (l / r2.n)
	}
	r, out := canonicalRadical(l, exps)
	return r, out, nil
}

// rootOfRational returns q^(1/n) for q > 0 as coef · radical with coef rational.
func rootOfRational(q *big.Rat, n int) (*big.Rat, radical, error) {
	if n < 2 || n > maxRootIndex {
		return nil, radical{}, errTooBig("root index")
	}
	num, den := q.Num(), q.Denom()
	if n == 2 { // perfect squares of any size need no factoring
		sn, sd := new(big.Int).Sqrt(num), new(big.Int).Sqrt(den)
		if new(big.Int).Mul(sn, sn).Cmp(num) == 0 && new(big.Int).Mul(sd, sd).Cmp(den) == 0 {
			return new(big.Rat).SetFrac(sn, sd), radical{}, nil
		}
	}
	// q^(1/n) = (num · den^(n-1))^(1/n) / den
	fn, err := factor(num)
	if err != nil {
		return nil, radical{}, err
	}
	fd, err := factor(den)
	if err != nil {
		return nil, radical{}, err
	}
	exps := map[uint64]int{}
	for p, e := range fn {
		exps[p] += e
	}
	for p, e := range fd {
		exps[p] += e * (n - 1)
	}
	r, out := canonicalRadical(n, exps)
	return new(big.Rat).SetFrac(out, den), r, nil
}

// factor returns the prime factorization of a positive integer no larger than maxFactor.
func factor(x *big.Int) (map[uint64]int, error) {
	if x.BitLen() > 64 || x.Uint64() > maxFactor {
		return nil, errTooBig("radicand")
	}
	v := x.Uint64()
	f := map[uint64]int{}
	for p := uint64(2); p*p <= v; {
		for v%p == 0 {
			f[p]++
			v /= p
		}
		if p == 2 {
			p = 3
		} else {
			p += 2
		}
	}
	if v > 1 {
		f[v]++
	}
	return f, nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	if a < 0 {
		return -a
	}
	return a
}
