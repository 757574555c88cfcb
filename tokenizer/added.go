package tokenizer

import (
	"sort"
	"unicode"
	"unicode/utf8"
)

// addedMatcher finds added tokens in raw text, leftmost first and longest at a position, as
// Hugging Face's added vocabulary does.
type addedMatcher struct {
	first  [256]bool    // bytes that can start an added token
	tokens []AddedToken // longest content first
}

func newAddedMatcher(added []AddedToken) addedMatcher {
	m := addedMatcher{tokens: append([]AddedToken(nil), added...)}
	sort.SliceStable(m.tokens, func(i, j int) bool { return len(m.tokens[i].Content) > len(m.tokens[j].Content) })
	for _, a := range m.tokens {
		m.first[a.Content[0]] = true
	}
	return m
}

// segment is a stretch of the input: either plain text for BPE or one added token.
type segment struct {
	text  string
	added int32 // the added token's id, or -1 for text
}

// split cuts text into plain and added-token segments. With withSpecial false, tokens marked
// special are left in the text (Hugging Face's split_special_tokens).
func (m *addedMatcher) split(text string, withSpecial bool, emit func(segment)) {
	if len(m.tokens) == 0 {
		if text != "" {
			emit(segment{text: text, added: -1})
		}
		return
	}
	plainStart := 0
	for i := 0; i < len(text); i++ {
		if !m.first[text[i]] {
			continue
		}
		tok, ok := m.matchAt(text, i, withSpecial)
		if !ok {
			continue
		}
		start, end := i, i+len(tok.Content)
		if tok.LStrip {
			for start > plainStart {
				r, w := utf8.DecodeLastRuneInString(text[plainStart:start])
				if !unicode.IsSpace(r) {
					break
				}
				start -= w
			}
		}
		if tok.RStrip {
			for end < len(text) {
				r, w := utf8.DecodeRuneInString(text[end:])
				if !unicode.IsSpace(r) {
					break
				}
				end += w
			}
		}
		if start > plainStart {
			emit(segment{text: text[plainStart:start], added: -1})
		}
		emit(segment{text: text[start:end], added: tok.ID})
		plainStart = end
		i = end - 1
	}
	if plainStart < len(text) {
		emit(segment{text: text[plainStart:], added: -1})
	}
}

func (m *addedMatcher) matchAt(text string, i int, withSpecial bool) (AddedToken, bool) {
	rest := text[i:]
	for _, a := range m.tokens {
		if len(a.Content) > len(rest) || rest[:len(a.Content)] != a.Content {
			continue
		}
		if a.Special && !withSpecial {
			continue
		}
		if a.SingleWord && !standsAlone(text, i, i+len(a.Content)) {
			continue
		}
		return a, true
	}
	return AddedToken{}, false
}

// standsAlone reports whether text[start:end] is not glued to word characters on either side.
func standsAlone(text string, start, end int) bool {
	if start > 0 {
		if r, _ := utf8.DecodeLastRuneInString(text[:start]); isWordRune(r) {
			return false
		}
	}
	if end < len(text) {
		if r, _ := utf8.DecodeRuneInString(text[end:]); isWordRune(r) {
			return false
		}
	}
	return true
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
