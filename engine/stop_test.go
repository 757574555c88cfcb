package engine

import (
	"testing"

	"gorstar/internal/testmodel"
)

func TestTextMatcher(t *testing.T) {
	tok := testmodel.Tokenizer(t)
	for _, tc := range []struct {
		text          string
		stops, pauses []string
		at            int // byte index of the token that completes the match, -1 none
		match         string
		pause         bool
	}{
		{"hello world", []string{"wor"}, nil, 8, "wor", false},
		{"abcabc", []string{"ca"}, nil, 3, "ca", false},
		{"x</tool_call>y", nil, []string{"</tool_call>"}, 1, "</tool_call>", true}, // a special token
		{"no match here", []string{"zz"}, []string{"qq"}, -1, "", false},
		{"é!", []string{"é"}, nil, 1, "é", false},       // two bytes: matched when the character completes
		{"ab", []string{"b", "ab"}, nil, 1, "b", false}, // same end: the first listed
	} {
		m := newTextMatcher(tok, tc.stops, tc.pauses)
		at, match, pause := -1, "", false
		for i, id := range tok.Encode(tc.text) {
			if s, p := m.add(id); s != "" {
				at, match, pause = i, s, p
				break
			}
		}
		if at != tc.at || match != tc.match || pause != tc.pause {
			t.Errorf("%q stops %q pauses %q: token %d %q pause %v; want %d %q %v",
				tc.text, tc.stops, tc.pauses, at, match, pause, tc.at, tc.match, tc.pause)
		}
	}
}
