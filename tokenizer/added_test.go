package tokenizer

import (
	"slices"
	"testing"
)

func TestAddedTokenMatching(t *testing.T) {
	added := []AddedToken{
		{Content: "<s>", Special: true},
		{Content: "<s><s>", Special: true}, // longest match wins
		{Content: "[L]", LStrip: true},
		{Content: "[R]", RStrip: true},
		{Content: "word", SingleWord: true},
		{Content: "<tag>"},
	}
	tok := testTokenizer(t, nil, added)
	id := func(s string) string { return "#" + s }
	render := func(text string, withSpecial bool) []string {
		var out []string
		tok.matcher.split(text, withSpecial, func(seg segment) {
			if seg.added >= 0 {
				out = append(out, id(tok.tokens[seg.added]))
			} else {
				out = append(out, seg.text)
			}
		})
		return out
	}
	cases := []struct {
		in          string
		withSpecial bool
		want        []string
	}{
		{"a<s>b", true, []string{"a", "#<s>", "b"}},
		{"<s><s><s>", true, []string{"#<s><s>", "#<s>"}},
		{"a<s>b", false, []string{"a<s>b"}},
		{"a<tag>b", false, []string{"a", "#<tag>", "b"}},
		{"x  [L]  y", true, []string{"x", "#[L]", "  y"}},
		{"x  [R]  y", true, []string{"x  ", "#[R]", "y"}},
		{"a word here", true, []string{"a ", "#word", " here"}},
		{"swordfish", true, []string{"swordfish"}},
		{"<ta<tag>", true, []string{"<ta", "#<tag>"}},
		{"", true, nil},
	}
	for _, c := range cases {
		if got := render(c.in, c.withSpecial); !slices.Equal(got, c.want) {
			t.Errorf("split(%q, %v) = %q, want %q", c.in, c.withSpecial, got, c.want)
		}
	}
}

func TestEncodeSegments(t *testing.T) {
	tok := testTokenizer(t, [][2]string{{"Ġ", "Ġ"}, {"Ċ", "Ċ"}, {"h", "i"}}, []AddedToken{
		{Content: "<|im_start|>", Special: true}, {Content: "<tool_call>"},
	})
	start := tok.MustID("<|im_start|>")
	call := tok.MustID("<tool_call>")
	cases := []struct {
		segs []Segment
		want []int32
	}{
		// Text joins across segments: "\n" + "\nhi" encodes like "\n\nhi".
		{[]Segment{{"<|im_start|>\n", true}, {"\nhi", false}}, append([]int32{start}, tok.Encode("\n\nhi")...)},
		// A control token in a plain segment is text; a non-special added token still matches.
		{[]Segment{{"<|im_start|>", false}, {"<tool_call>", false}}, append(tok.EncodeWithSpecials("<|im_start|>", false), call)},
		{nil, nil},
	}
	for _, c := range cases {
		if got := tok.EncodeSegments(c.segs); !slices.Equal(got, c.want) {
			t.Errorf("EncodeSegments(%+v) = %v, want %v", c.segs, got, c.want)
		}
	}
}
