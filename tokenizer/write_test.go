package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestByteLevelJSONRoundTrip(t *testing.T) {
	data, err := ByteLevelJSON(ChatSpecials)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(data) {
		t.Fatal("ByteLevelJSON wrote invalid JSON")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok.VocabSize(), 256+len(ChatSpecials); got != want {
		t.Fatalf("VocabSize = %d, want %d", got, want)
	}
	for i, s := range ChatSpecials {
		id, ok := tok.TokenToID(s)
		if !ok || id != int32(256+i) {
			t.Errorf("TokenToID(%q) = %d, %v; want %d", s, id, ok, 256+i)
		}
		if got := tok.IsSpecial(id); got != controlTokens[s] {
			t.Errorf("IsSpecial(%q) = %v", s, got)
		}
	}
	text := "<|im_start|>user\nπ ≈ 3.14 😀\t<tool_call>x</tool_call><|im_end|>"
	ids := tok.Encode(text)
	want := []int32{257}
	for _, b := range []byte("user\nπ ≈ 3.14 😀\t") {
		want = append(want, int32(b))
	}
	want = append(want, 259, 'x', 260, 258)
	if !slices.Equal(ids, want) {
		t.Fatalf("Encode = %v\nwant %v", ids, want)
	}
	if got := tok.Decode(ids); got != text {
		t.Fatalf("Decode = %q, want %q", got, text)
	}
	plain := tok.EncodeWithSpecials("<|im_end|><answer>", false)
	if len(plain) != len("<|im_end|>")+1 || plain[len(plain)-1] != 265 {
		t.Fatalf("EncodeWithSpecials(false) = %v: want <|im_end|> as bytes and <answer> as 265", plain)
	}
}

func TestByteLevelJSONRejectsBadSpecials(t *testing.T) {
	for _, specials := range [][]string{{""}, {"<a>", "<a>"}} {
		if _, err := ByteLevelJSON(specials); err == nil {
			t.Errorf("ByteLevelJSON(%q): want an error", specials)
		}
	}
}
