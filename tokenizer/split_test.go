package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func collect(split func(string, func(string)), s string) []string {
	var pieces []string
	split(s, func(p string) { pieces = append(pieces, p) })
	return pieces
}

func TestSplitQwen(t *testing.T) {
	qwen := func(s string, emit func(string)) { splitQwen(s, 1, emit) }
	llama := func(s string, emit func(string)) { splitQwen(s, 3, emit) }
	cases := []struct {
		name  string
		split func(string, func(string))
		in    string
		want  []string
	}{
		{"words take the space before them", qwen, "Hello world", []string{"Hello", " world"}},
		{"contractions in any case", qwen, "I'M don'T we'Ll", []string{"I", "'M", " don", "'T", " we", "'Ll"}},
		{"long s folds to s", qwen, "it'ſ", []string{"it", "'ſ"}},
		{"apostrophe without contraction prefixes a word", qwen, "'hello", []string{"'hello"}},
		{"single digits", qwen, "x=12345", []string{"x", "=", "1", "2", "3", "4", "5"}},
		{"digits in threes (Llama 3)", llama, "12345", []string{"123", "45"}},
		{"punctuation takes one space and trailing newlines", qwen, "a !!\n\nb", []string{"a", " !!\n\n", "b"}},
		{"newline runs end at the last newline", qwen, "a \n \n  b", []string{"a", " \n \n", " ", " b"}},
		{"spaces before a word leave one for it", qwen, "a    b", []string{"a", "   ", " b"}},
		{"trailing spaces stay together", qwen, "a   ", []string{"a", "   "}},
		{"a tab prefixes a word", qwen, "\tfoo", []string{"\tfoo"}},
		{"a newline does not prefix a word", qwen, "\nfoo", []string{"\n", "foo"}},
		{"a lone space before punctuation joins it", qwen, "a ,", []string{"a", " ,"}},
		{"two spaces before punctuation", qwen, "a  ,", []string{"a", " ", " ,"}},
		{"punctuation prefixes a CJK word", qwen, "你好，世界", []string{"你好", "，世界"}},
		{"emoji are punctuation-like", qwen, "hi 😀😀!", []string{"hi", " 😀😀!"}},
		{"combining marks are not letters", qwen, "e\u0301x", []string{"e", "\u0301x"}},
		{"NBSP is whitespace", qwen, "a\u00a0\u00a0b", []string{"a", "\u00a0", "\u00a0b"}},
		{"empty", qwen, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := collect(c.split, c.in); !slices.Equal(got, c.want) {
				t.Errorf("split(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestSplitGPT2(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"Hello world", []string{"Hello", " world"}},
		{"I'm DON'T", []string{"I", "'m", " DON", "'", "T"}},
		{"x=12345 y", []string{"x", "=", "12345", " y"}},
		{"a    b", []string{"a", "   ", " b"}},
		{"a\n\nb", []string{"a", "\n", "\n", "b"}},
		{"a \n b", []string{"a", " \n", " b"}},
		{"end   ", []string{"end", "   "}},
		{"\tfoo", []string{"\t", "foo"}},
		{"a !!", []string{"a", " !!"}},
	}
	for _, c := range cases {
		if got := collect(splitGPT2, c.in); !slices.Equal(got, c.want) {
			t.Errorf("splitGPT2(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Whatever the input, the pieces cover it exactly and none is empty.
func TestSplitCoversInput(t *testing.T) {
	alphabet := []string{" ", "  ", "\n", "\r", "\t", "\u00a0", "\u3000", "a", "Z", "é", "中", "1", "²",
		".", "'", "s", "ll", "😀", "\u0301", "\xff", "\xe2\x82"}
	rng := rand.New(rand.NewPCG(1, 2))
	splitters := map[string]func(string, func(string)){
		"qwen":  func(s string, emit func(string)) { splitQwen(s, 1, emit) },
		"llama": func(s string, emit func(string)) { splitQwen(s, 3, emit) },
		"gpt2":  splitGPT2,
	}
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for n := rng.IntN(20); n >= 0; n-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		s := b.String()
		for name, split := range splitters {
			pieces := collect(split, s)
			if strings.Join(pieces, "") != s || slices.Contains(pieces, "") {
				t.Fatalf("%s split %q into %q", name, s, pieces)
			}
		}
	}
}
