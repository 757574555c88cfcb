package reward

import (
	"fmt"
	"strings"
)

type tokenKind int

const (
	tokEnd   tokenKind = iota
	tokNum             // 12, 0.5, .5, 1.5e3
	tokIdent           // one letter variable: x, a, A, α (Greek arrives as a command)
	tokCmd             // \frac, \pi, \sqrt, \sin, …; also plain function words: sin, sqrt, pi
	tokOp              // one of + - * / ^ _ ! ( ) [ ] { } \{ \} , | = < > ≤ ≥ ≠ & \\ ;
)

type token struct {
	kind tokenKind
	text string
	pos  int
}

// plainWords are function and constant names read without a backslash ("sqrt(2)", "pi").
var plainWords = map[string]string{
	"sqrt": `\sqrt`, "pi": `\pi`, "sin": `\sin`, "cos": `\cos`, "tan": `\tan`, "cot": `\cot`,
	"sec": `\sec`, "csc": `\csc`, "log": `\log`, "ln": `\ln`, "exp": `\exp`, "arcsin": `\arcsin`,
	"arccos": `\arccos`, "arctan": `\arctan`, "sinh": `\sinh`, "cosh": `\cosh`, "tanh": `\tanh`,
	"inf": `\infty`, "infty": `\infty`, "infinity": `\infty`, "oo": `\infty`, "or": "or", "and": "and",
}

// maxTokens bounds the parser's input.
const maxTokens = 1500

func lex(s string) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		if len(toks) > maxTokens {
			return nil, errTooBig("too many tokens")
		}
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '~':
			i++
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j < len(s) && s[j] == '.' && (j+1 == len(s) || s[j+1] >= '0' && s[j+1] <= '9' || s[j+1] == ' ' || s[j+1] == ')') {
				j++
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
			}
			// Scientific notation: 1.5e3, 2E-4 (but 2e alone is 2·e).
			if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
				k := j + 1
				if k < len(s) && (s[k] == '+' || s[k] == '-') {
					k++
				}
				if k < len(s) && s[k] >= '0' && s[k] <= '9' {
					for k < len(s) && s[k] >= '0' && s[k] <= '9' {
						k++
					}
					j = k
				}
			}
			toks = append(toks, token{tokNum, s[i:j], i})
			i = j
		case c == '\\':
			j := i + 1
			for j < len(s) && isASCIILetter(s[j]) {
				j++
			}
			if j == i+1 {
				if j == len(s) {
					return nil, fmt.Errorf("dangling backslash")
				}
				j++
				switch s[i:j] {
				case `\{`, `\}`, `\\`:
					toks = append(toks, token{tokOp, s[i:j], i})
				case `\|`:
					toks = append(toks, token{tokOp, "|", i})
				default:
					return nil, fmt.Errorf("unknown command %s", s[i:j])
				}
				i = j
				continue
			}
			toks = append(toks, token{tokCmd, s[i:j], i})
			i = j
		case isASCIILetter(c):
			j := i
			for j < len(s) && isASCIILetter(s[j]) {
				j++
			}
			word := s[i:j]
			if rep, ok := plainWords[strings.ToLower(word)]; ok && len(word) > 1 {
				toks = append(toks, token{tokCmd, rep, i})
				i = j
				continue
			}
			// A run of letters is a product of one-letter variables, unless it starts with a
			// function name (sinx).
			for k := 0; k < len(word); k++ {
				matched := false
				for _, fn := range []string{"sqrt", "sin", "cos", "tan", "log", "ln", "pi"} {
					if k+len(fn) <= len(word) && word[k:k+len(fn)] == fn && (k > 0 || len(word) > len(fn)) {
						toks = append(toks, token{tokCmd, `\` + fn, i + k})
						k += len(fn) - 1
						matched = true
						break
					}
				}
				if !matched {
					toks = append(toks, token{tokIdent, word[k : k+1], i + k})
				}
			}
			i = j
		default:
			for _, op := range []string{"≤", "≥", "≠", "<=", ">=", "!=", "=<", "=>", "**", "·"} {
				if strings.HasPrefix(s[i:], op) {
					t := map[string]string{"<=": "≤", "=<": "≤", ">=": "≥", "=>": "≥", "!=": "≠", "**": "^", "·": "*"}[op]
					if t == "" {
						t = op
					}
					toks = append(toks, token{tokOp, t, i})
					i += len(op)
					goto next
				}
			}
			if strings.ContainsRune("+-*/^_!()[]{},|=<>&;:'", rune(c)) {
				toks = append(toks, token{tokOp, string(c), i})
				i++
				continue
			}
			return nil, fmt.Errorf("unexpected character %q", s[i:])
		next:
		}
	}
	return toks, nil
}
