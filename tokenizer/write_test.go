package tokenizer

import (
	"bytes"
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

// With ChatRoleWords the role names are one token each, as in Qwen3, so a tool turn's
// scaffolding has Qwen3's length but for <reason> (an added token here, three tokens there).
func TestByteLevelJSONRoleWords(t *testing.T) {
	data, err := ByteLevelJSON(ChatSpecials, ChatRoleWords...)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	merged := 5 + 3 + 8 // system, user, assistant: one token per prefix of two or more bytes
	if got, want := tok.VocabSize(), 256+merged+len(ChatSpecials); got != want {
		t.Fatalf("VocabSize = %d, want %d", got, want)
	}
	for i, s := range ChatSpecials {
		if id, ok := tok.TokenToID(s); !ok || id != int32(256+merged+i) {
			t.Errorf("TokenToID(%q) = %d, %v; want %d", s, id, ok, 256+merged+i)
		}
	}
	for _, w := range ChatRoleWords {
		if ids := tok.Encode(w); len(ids) != 1 {
			t.Errorf("Encode(%q) = %v: want one token", w, ids)
		}
	}
	turn := "<|im_end|>\n<|im_start|>user\n<tool_response>\n1\n</tool_response><|im_end|>\n<|im_start|>assistant\n<reason>"
	if ids := tok.Encode(turn); len(ids) != 16 {
		t.Errorf("a tool turn is %d tokens, want 16 (Qwen3: 18, <reason> being three there)", len(ids))
	}
	// Merges apply inside longer words and never lose a byte.
	for _, text := range []string{"users assistants asks: systemic use? user", " assistant\n\nuser", "ass sys us"} {
		ids := tok.Encode(text)
		if got := tok.Decode(ids); got != text {
			t.Errorf("Decode(Encode(%q)) = %q", text, got)
		}
	}
	if ids := tok.Encode("users"); len(ids) != 2 {
		t.Errorf(`Encode("users") = %v: want "user" + "s"`, ids)
	}
	plain, err := ByteLevelJSON(ChatSpecials)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ByteLevelJSON(ChatSpecials, []string{}...)
	if err != nil || !bytes.Equal(plain, again) {
		t.Fatalf("ByteLevelJSON with no words differs from without: %v", err)
	}
}

// A word that is a prefix of an earlier one is already a token: listed, not a duplicate.
func TestByteLevelJSONPrefixWord(t *testing.T) {
	data, err := ByteLevelJSON(ChatSpecials, "user", "use")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok.VocabSize(), 256+3+len(ChatSpecials); got != want {
		t.Fatalf("VocabSize = %d, want %d", got, want)
	}
	for _, w := range []string{"use", "user"} {
		if ids := tok.Encode(w); len(ids) != 1 {
			t.Errorf("Encode(%q) = %v: want one token", w, ids)
		}
	}
}

func TestByteLevelJSONRejectsBadWords(t *testing.T) {
	for _, words := range [][]string{{""}, {"a"}, {"user", "user"}} {
		if _, err := ByteLevelJSON(ChatSpecials, words...); err == nil {
			t.Errorf("ByteLevelJSON(words %q): want an error", words)
		}
	}
}
