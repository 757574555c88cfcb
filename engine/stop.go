package engine

import (
	"slices"
	"strings"

	"gorstar/tokenizer"
)

// textMatcher decodes a sequence's generated tokens as they come and finds stop and pause strings
// in the text. Matching runs on whole UTF-8 characters (the streaming decoder holds back a split
// character), and only where a match would end in the new text.
type textMatcher struct {
	dec    *tokenizer.StreamDecoder
	text   strings.Builder
	stops  []string
	pauses []string
}

func newTextMatcher(tok *tokenizer.Tokenizer, stops, pauses []string) *textMatcher {
	m := &textMatcher{dec: tok.NewStreamDecoder(false), stops: stops, pauses: pauses}
	return m
}

// add takes the next generated token and reports the first stop or pause string that the text now
// contains and did not before.
func (m *textMatcher) add(id int32) (match string, pause bool) {
	piece := m.dec.Add(id)
	if piece == "" {
		return "", false
	}
	before := m.text.Len()
	m.text.WriteString(piece)
	all := m.text.String()
	// A string starting at or after before-len+1 ends in the new text; earlier ones matched already.
	bestEnd, best, bestPause := -1, "", false
	check := func(list []string, isPause bool) {
		for _, s := range list {
			from := max(0, before-len(s)+1)
			if i := strings.Index(all[from:], s); i >= 0 {
				if end := from + i + len(s); bestEnd < 0 || end < bestEnd {
					bestEnd, best, bestPause = end, s, isPause
				}
			}
		}
	}
	check(m.stops, false)
	check(m.pauses, true)
	return best, bestPause
}

// resetWindow forgets the text so far for matching, so that a string matched before a pause does not
// match again after the appended tokens (which are not decoded here).
func (m *textMatcher) resetWindow() {
	m.dec.Flush()
	m.text.Reset()
}

func containsToken(list []int32, id int32) bool { return slices.Contains(list, id) }
