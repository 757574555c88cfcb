package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Hand-written matchers for the pre-tokenizer regexes of GPT-2 and of Qwen/GPT-4 style models.
// Go's regexp lacks the lookahead `\s+(?!\S)` these patterns use, so each pattern's leftmost-first
// alternation is spelled out: at every position exactly one alternative wins, and its greedy length
// (with the backtracking the lookahead forces) is the piece's length.

const (
	classOther = iota
	classLetter
	classNumber
	classSpace
)

var asciiClass = buildASCIIClass()

func buildASCIIClass() [utf8.RuneSelf]uint8 {
	var t [utf8.RuneSelf]uint8
	for r := rune(0); r < utf8.RuneSelf; r++ {
		t[r] = slowClass(r)
	}
	return t
}

// slowClass classifies a rune as \p{L}, \p{N}, \s (Unicode White_Space) or anything else.
func slowClass(r rune) uint8 {
	switch {
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsNumber(r):
		return classNumber
	case unicode.IsSpace(r): // White_Space, including U+0085 and U+00A0
		return classSpace
	}
	return classOther
}

// runeAt decodes the rune at byte offset i and returns it with its class and width.
func runeAt(s string, i int) (rune, uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), asciiClass[c], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	return r, slowClass(r), w
}

// runOf returns the end of the run of runes of class cls starting at i.
func runOf(s string, i int, cls uint8) int {
	for i < len(s) {
		_, c, w := runeAt(s, i)
		if c != cls {
			break
		}
		i += w
	}
	return i
}

// runOfOther returns the end of the run of runes that are neither letters, numbers nor spaces.
func runOfOther(s string, i int) int { return runOf(s, i, classOther) }

// contraction matches 's 't 're 've 'm 'll 'd after an apostrophe at s[0]; foldCase accepts any
// case (and ſ, which folds to s), as the pattern's (?i:…) group does. It returns the byte length
// including the apostrophe, or 0.
func contraction(s string, foldCase bool) int {
	if len(s) < 2 || s[0] != '\'' {
		return 0
	}
	lower := func(c byte) byte {
		if foldCase && c >= 'A' && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	switch lower(s[1]) {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if len(s) >= 3 && lower(s[2]) == 'e' {
			return 3
		}
	case 'l':
		if len(s) >= 3 && lower(s[2]) == 'l' {
			return 3
		}
	}
	if foldCase && len(s) >= 3 && s[1] == 0xC5 && s[2] == 0xBF { // U+017F LATIN SMALL LETTER LONG S
		return 3
	}
	return 0
}

// spaceRun matches the three whitespace alternatives shared by both patterns, starting at a space
// at i: `\s*[\r\n]+` (only when withNewlines), then `\s+(?!\S)`, then `\s+`.
func spaceRun(s string, i int, withNewlines bool) int {
	end, lastNL, lastStart := i, -1, i
	for end < len(s) {
		r, c, w := runeAt(s, end)
		if c != classSpace {
			break
		}
		if r == '\r' || r == '\n' {
			lastNL = end + w
		}
		lastStart = end
		end += w
	}
	if withNewlines && lastNL >= 0 {
		return lastNL - i
	}
	if end == len(s) || lastStart == i {
		// At the end of the text the lookahead holds for the whole run; a single space before a
		// non-space falls through to the plain `\s+`.
		return end - i
	}
	// Leave the run's last space to prefix the next word.
	return lastStart - i
}

// splitQwen splits by `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,maxDigits}|
// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+` (Qwen2/Qwen3 with maxDigits 1, Llama 3 with 3).
func splitQwen(s string, maxDigits int, emit func(string)) {
	for i := 0; i < len(s); {
		n := matchQwen(s, i, maxDigits)
		emit(s[i : i+n])
		i += n
	}
}

func matchQwen(s string, i, maxDigits int) int {
	r, cls, w := runeAt(s, i)
	if r == '\'' {
		if n := contraction(s[i:], true); n > 0 {
			return n
		}
	}
	switch cls {
	case classLetter:
		return runOf(s, i+w, classLetter) - i
	case classNumber:
		j := i + w
		for d := 1; d < maxDigits && j < len(s); d++ {
			_, c, w2 := runeAt(s, j)
			if c != classNumber {
				break
			}
			j += w2
		}
		return j - i
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+ with the optional prefix (any space but \r or \n, or punctuation).
	if r != '\r' && r != '\n' && i+w < len(s) {
		if _, c2, w2 := runeAt(s, i+w); c2 == classLetter {
			return runOf(s, i+w+w2, classLetter) - i
		}
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	j := i
	if r == ' ' {
		j++
	}
	if k := runOfOther(s, j); k > j {
		for k < len(s) && (s[k] == '\r' || s[k] == '\n') {
			k++
		}
		return k - i
	}
	if cls == classSpace {
		return spaceRun(s, i, true)
	}
	return w // not reached: every rune is a letter, number, space or other
}

// splitGPT2 splits by GPT-2's `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`.
func splitGPT2(s string, emit func(string)) {
	for i := 0; i < len(s); {
		n := matchGPT2(s, i)
		emit(s[i : i+n])
		i += n
	}
}

func matchGPT2(s string, i int) int {
	r, cls, _ := runeAt(s, i)
	if r == '\'' {
		if n := contraction(s[i:], false); n > 0 {
			return n
		}
	}
	j := i
	if r == ' ' && i+1 < len(s) {
		j = i + 1
		_, cls, _ = runeAt(s, j)
	}
	switch cls {
	case classLetter, classNumber:
		return runOf(s, j, cls) - i
	case classOther:
		return runOfOther(s, j) - i
	}
	return spaceRun(s, i, false)
}
