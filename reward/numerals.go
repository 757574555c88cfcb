package reward

import (
	"math/big"
	"regexp"
	"strings"
)

// Number notations that are more than a literal: plain mixed numbers ("2 1/2") and repeating
// decimals ("0.\overline{3}"). Both are rewritten into what the parser reads as one number.

// mixedRE matches a whole number (spaced thousands allowed), spaces, and a simple fraction. Its
// surroundings are checked by hand (RE2 has no lookaround).
var mixedRE = regexp.MustCompile(`(\d{1,3}(?: \d{3})+|\d+) +(\d+)/(\d+)`)

// mixedNumbers rewrites each plain mixed number "W N/D" as W\frac{N}{D}, which the parser reads as
// W + N/D (with a leading sign applying to the whole: -4 4/9 is -40/9). A whole number followed by
// a space and a fraction is a mixed number only when the fraction is proper (N < D); "11 6/6" and
// "4 4/0" are neither a mixed number nor a product, so ok is false and the answer is compared as
// text only.
func mixedNumbers(s string) (out string, ok bool) {
	if !strings.Contains(s, "/") || !strings.Contains(s, " ") {
		return s, true
	}
	ok = true
	var b strings.Builder
	last := 0
	for _, m := range mixedRE.FindAllStringSubmatchIndex(s, -1) {
		start, end := m[0], m[1]
		if !mixedBoundary(s, start-1, `./^_!}])|\`) || !mixedBoundary(s, end, `./^_!(\`) {
			continue
		}
		whole := strings.ReplaceAll(s[m[2]:m[3]], " ", "")
		num, den := s[m[4]:m[5]], s[m[6]:m[7]]
		n, _ := new(big.Int).SetString(num, 10)
		d, _ := new(big.Int).SetString(den, 10)
		if d.Sign() == 0 || n.Cmp(d) >= 0 {
			ok = false
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(whole + `\frac{` + num + "}{" + den + "}")
		last = end
	}
	b.WriteString(s[last:])
	return b.String(), ok
}

// mixedBoundary reports whether the byte at i (i = -1 or len(s): the ends) may border a mixed
// number: no digit, letter or one of the bytes in not, so that it is not part of a longer number,
// a word, a power, a subscript or another fraction: "11/10 4/9", "11.0 4/9", "(11) 4/9",
// "x^2 1/2" and "2 1/2x" are left as they are.
func mixedBoundary(s string, i int, not string) bool {
	if i < 0 || i >= len(s) {
		return true
	}
	c := s[i]
	return !(c >= '0' && c <= '9' || isASCIILetter(c) || strings.IndexByte(not, c) >= 0)
}

// repeatingRE matches a decimal with a repeating block: 0.\overline{3}, 1.2\overline{45},
// .\overline{6}.
var repeatingRE = regexp.MustCompile(`(\d*)\.(\d*)\s*\\overline\s*\{\s*(\d+)\s*\}`)

// maxRepeatDigits bounds the digits of a repeating decimal that is turned into a fraction.
const maxRepeatDigits = 200

// repeatingDecimals rewrites each repeating decimal as the exact fraction it names, in
// parentheses: 0.1\overline{6} becomes (1/6).
func repeatingDecimals(s string) string {
	if !strings.Contains(s, `\overline`) {
		return s
	}
	return repeatingRE.ReplaceAllStringFunc(s, func(m string) string {
		g := repeatingRE.FindStringSubmatch(m)
		whole, fixed, rep := g[1], g[2], g[3]
		if len(whole)+len(fixed)+len(rep) > maxRepeatDigits {
			return m
		}
		return "(" + repeatingValue(whole, fixed, rep).RatString() + ")"
	})
}

// repeatingValue is whole.fixed(rep)(rep)… as a fraction: the digits fixed·rep less fixed, over
// 10^len(fixed) · (10^len(rep) − 1), plus the whole part.
func repeatingValue(whole, fixed, rep string) *big.Rat {
	ten := big.NewInt(10)
	pow := func(n int) *big.Int { return new(big.Int).Exp(ten, big.NewInt(int64(n)), nil) }
	digits := func(s string) *big.Int {
		v, ok := new(big.Int).SetString("0"+s, 10)
		if !ok {
			return new(big.Int)
		}
		return v
	}
	num := new(big.Int).Sub(digits(fixed+rep), digits(fixed))
	den := new(big.Int).Mul(pow(len(fixed)), new(big.Int).Sub(pow(len(rep)), big.NewInt(1)))
	v := new(big.Rat).SetFrac(num, den)
	return v.Add(v, new(big.Rat).SetInt(digits(whole)))
}
