package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func TestDecodeLossy(t *testing.T) {
	cases := []struct {
		in   string
		want string
	}{
		{"plain", "plain"},
		{"\xe2\x82\xac", "€"},
		{"a\xe2\x82b", "a\ufffdb"},             // one U+FFFD for a truncated character
		{"a\xffb", "a\ufffdb"},                 // a byte that never starts a character
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd"}, // a surrogate: each byte is its own invalid subpart
		{"\xf0\x9f\x98", "\ufffd"},             // truncated at the end
		{"\xc0\xaf", "\ufffd\ufffd"},           // overlong
	}
	for _, c := range cases {
		var out strings.Builder
		appendLossy(&out, []byte(c.in), true)
		if out.String() != c.want {
			t.Errorf("lossy(%q) = %q, want %q", c.in, out.String(), c.want)
		}
	}
}

// Streaming gives the same text as Decode, and never releases part of a character.
func TestStreamDecoderMatchesDecode(t *testing.T) {
	data, err := ByteLevelJSON(ChatSpecials)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, tok *Tokenizer, ids []int32) {
		t.Helper()
		d := tok.NewStreamDecoder(false)
		var got strings.Builder
		for _, id := range ids {
			chunk := d.Add(id)
			if !utf8.ValidString(chunk) {
				t.Fatalf("chunk %q is not valid UTF-8", chunk)
			}
			got.WriteString(chunk)
		}
		got.WriteString(d.Flush())
		if want := tok.Decode(ids); got.String() != want {
			t.Fatalf("stream %q, Decode %q", got.String(), want)
		}
	}
	pieces := []string{"a", " ", "é", "中", "😀", "\n", "<|im_end|>", "<answer>", "\xff", "\xe2\x82"}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 500; i++ {
		var b strings.Builder
		for n := rng.IntN(12); n >= 0; n-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		check(t, tok, tok.Encode(b.String()))
	}
	// A character cut by the end of generation comes out as U+FFFD on Flush.
	d := tok.NewStreamDecoder(false)
	if got := d.Add(0xF0) + d.Add(0x9F); got != "" {
		t.Fatalf("half an emoji released: %q", got)
	}
	if got := d.Flush(); got != "\ufffd" {
		t.Fatalf("Flush = %q, want U+FFFD", got)
	}
	// Control tokens can be left out.
	skip := tok.NewStreamDecoder(true)
	if got := skip.Add(tok.MustID("<|im_end|>")) + skip.Add('x') + skip.Add(tok.MustID("<answer>")); got != "x<answer>" {
		t.Fatalf("skipSpecial stream = %q", got)
	}
	if got := tok.DecodeSkipSpecial(tok.Encode("<|im_start|>hi<|im_end|>")); got != "hi" {
		t.Fatalf("DecodeSkipSpecial = %q", got)
	}
	if got := tok.Decode([]int32{-1, 100000}); got != "\ufffd\ufffd" {
		t.Fatalf("Decode of unknown ids = %q", got)
	}

	t.Run("qwen3", func(t *testing.T) {
		q := loadQwen3(t)
		text := "数学 😀👍🏽 naïve <think>x</think> \\frac{1}{2} 🇫🇷"
		check(t, q, q.Encode(text))
	})
}

// Decode(Encode(s)) gives s back (in NFC) for any valid text.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	data, _ := ByteLevelJSON(ChatSpecials)
	byteTok, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	randomText := func() string {
		var b strings.Builder
		for n := rng.IntN(30); n >= 0; n-- {
			switch rng.IntN(4) {
			case 0:
				b.WriteRune(rune(rng.IntN(0x80)))
			case 1:
				b.WriteRune(rune(0x80 + rng.IntN(0x3000)))
			case 2:
				b.WriteRune(rune(0x1F300 + rng.IntN(0x300)))
			default:
				b.WriteString(ChatSpecials[rng.IntN(len(ChatSpecials))])
			}
		}
		return strings.ToValidUTF8(b.String(), "")
	}
	for i := 0; i < 1000; i++ {
		s := randomText()
		if got := byteTok.Decode(byteTok.Encode(s)); got != norm.NFC.String(s) {
			t.Fatalf("byte-level round trip of %q gave %q", s, got)
		}
	}
	t.Run("qwen3", func(t *testing.T) {
		q := loadQwen3(t)
		for i := 0; i < 1000; i++ {
			s := randomText()
			if got := q.Decode(q.Encode(s)); got != norm.NFC.String(s) {
				t.Fatalf("Qwen3 round trip of %q gave %q", s, got)
			}
		}
	})
}

// Encoding never panics on arbitrary bytes, and decoding gives valid UTF-8 back.
func FuzzEncodeDecode(f *testing.F) {
	data, _ := ByteLevelJSON(ChatSpecials)
	tok, err := Parse(data)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"", "hi <|im_end|>", "\xff\xfe", "  \n\n x", "😀'S"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := tok.Decode(tok.Encode(s))
		if !utf8.ValidString(out) {
			t.Fatalf("Decode gave invalid UTF-8 %q", out)
		}
		if utf8.ValidString(s) && out != norm.NFC.String(s) {
			t.Fatalf("round trip of %q gave %q", s, out)
		}
	})
}
