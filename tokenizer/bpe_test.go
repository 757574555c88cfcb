package tokenizer

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// testTokenizer builds a byte-level BPE whose vocabulary is the 256 bytes plus the results of merges
// (pairs of byte-level strings), with the given added tokens after them.
func testTokenizer(t testing.TB, merges [][2]string, added []AddedToken) *Tokenizer {
	t.Helper()
	vocab := map[string]int32{}
	for b := 0; b < 256; b++ {
		vocab[ByteToken(byte(b))] = int32(b)
	}
	var mergeList [][2]string
	for _, m := range merges {
		mergeList = append(mergeList, m)
		if _, ok := vocab[m[0]+m[1]]; !ok {
			vocab[m[0]+m[1]] = int32(len(vocab))
		}
	}
	for i := range added {
		added[i].ID = int32(len(vocab) + i)
	}
	file := map[string]any{
		"version":      "1.0",
		"added_tokens": added,
		"normalizer":   map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": qwenSplitPattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
		}},
		"decoder": map[string]any{"type": "ByteLevel"},
		"model":   map[string]any{"type": "BPE", "vocab": vocab, "merges": mergeList},
	}
	data, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func tokensOf(tok *Tokenizer, ids []int32) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i], _ = tok.IDToToken(id)
	}
	return out
}

func TestBPEMergesByRank(t *testing.T) {
	tok := testTokenizer(t, [][2]string{
		{"a", "b"},   // 0
		{"b", "c"},   // 1
		{"ab", "c"},  // 2
		{"c", "c"},   // 3
		{"Ġ", "ab"},  // 4
		{"a", "a"},   // 5
		{"aa", "aa"}, // 6
	}, nil)
	cases := []struct {
		in   string
		want []string
	}{
		{"abc", []string{"abc"}},         // ab (rank 0) before bc (rank 1), then ab+c
		{"bcc", []string{"bc", "c"}},     // bc (1) before cc (3)
		{"ccc", []string{"cc", "c"}},     // leftmost first on a tie
		{"aaaaa", []string{"aaaa", "a"}}, // aa aa a → aaaa a
		{"x ab", []string{"x", "Ġab"}},   // the space joins the word and merges in byte-level form
		{"cab", []string{"c", "ab"}},     // no merge crosses ranks it should not
		{"abcabc", []string{"abc", "abc"}},
	}
	for _, c := range cases {
		if got := tokensOf(tok, tok.Encode(c.in)); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// The heap-based merge used for long pieces must agree with the reference quadratic one.
func TestBPELongAndShortAgree(t *testing.T) {
	letters := "abcd"
	var merges [][2]string
	rng := rand.New(rand.NewPCG(3, 4))
	known := []string{"a", "b", "c", "d"}
	for len(merges) < 60 {
		l, r := known[rng.IntN(len(known))], known[rng.IntN(len(known))]
		if len(l)+len(r) > 8 || slices.Contains(known, l+r) {
			continue
		}
		merges = append(merges, [2]string{l, r})
		known = append(known, l+r)
	}
	tok := testTokenizer(t, merges, nil)
	for i := 0; i < 3000; i++ {
		n := 2 + rng.IntN(maxShortWord+40)
		b := make([]byte, n)
		for j := range b {
			b[j] = letters[rng.IntN(len(letters))]
		}
		word := string(b)
		long := tok.bpe.mergeLong(word)
		if n <= maxShortWord {
			var buf [maxShortWord]int32
			short := tok.bpe.mergeShort(buf[:0], word)
			if !slices.Equal(short, long) {
				t.Fatalf("%q: short %v, long %v", word, short, long)
			}
		}
		var joined strings.Builder
		for _, s := range tokensOf(tok, long) {
			joined.WriteString(s)
		}
		if joined.String() != word {
			t.Fatalf("%q merged into %q", word, tokensOf(tok, long))
		}
	}
}

func TestParseMergeSpellings(t *testing.T) {
	for _, c := range []struct {
		raw     string
		want    mergeList
		wantErr bool
	}{
		{`["a b", "c d"]`, mergeList{{"a", "b"}, {"c", "d"}}, false},
		{`[["a", "b"], ["c d", "e"]]`, mergeList{{"a", "b"}, {"c d", "e"}}, false},
		{`[]`, mergeList{}, false},
		{`["ab"]`, nil, true},
		{`["a b c"]`, nil, true},
		{`[["a"]]`, nil, true},
		{`[3]`, nil, true},
	} {
		var got mergeList
		err := json.Unmarshal([]byte(c.raw), &got)
		if (err != nil) != c.wantErr || (err == nil && !slices.Equal(got, c.want)) {
			t.Errorf("merges %s = %q, %v", c.raw, got, err)
		}
	}
}

func TestParseRejectsBadFiles(t *testing.T) {
	good := func() map[string]any {
		return map[string]any{
			"pre_tokenizer": map[string]any{"type": "ByteLevel"},
			"model":         map[string]any{"type": "BPE", "vocab": map[string]int{"a": 0, "b": 1, "ab": 2}, "merges": []string{"a b"}},
		}
	}
	cases := map[string]func(map[string]any){
		"unigram model":        func(f map[string]any) { f["model"].(map[string]any)["type"] = "Unigram" },
		"merge of unknown":     func(f map[string]any) { f["model"].(map[string]any)["merges"] = []string{"a c"} },
		"no byte level":        func(f map[string]any) { f["pre_tokenizer"] = map[string]any{"type": "Whitespace"} },
		"unknown normalizer":   func(f map[string]any) { f["normalizer"] = map[string]any{"type": "Precompiled"} },
		"lookbehind regex":     func(f map[string]any) { f["pre_tokenizer"] = splitWith(`(?<=a)b`) },
		"unknown unk token":    func(f map[string]any) { f["model"].(map[string]any)["unk_token"] = "<unk>" },
		"empty added token":    func(f map[string]any) { f["added_tokens"] = []map[string]any{{"id": 3, "content": ""}} },
		"dropout":              func(f map[string]any) { f["model"].(map[string]any)["dropout"] = 0.1 },
		"merged-with-previous": func(f map[string]any) { f["pre_tokenizer"] = splitBehavior("MergedWithPrevious") },
		"huge id":              func(f map[string]any) { f["added_tokens"] = []map[string]any{{"id": 1 << 30, "content": "<x>"}} },
	}
	for name, mutate := range cases {
		f := good()
		mutate(f)
		data, _ := json.Marshal(f)
		if _, err := Parse(data); err == nil {
			t.Errorf("%s: Parse accepted %s", name, data)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	if _, err := Parse([]byte(`{"model": `)); err == nil {
		t.Error("Parse accepted truncated JSON")
	}
	data, _ := json.Marshal(good())
	if _, err := Parse(data); err != nil {
		t.Fatalf("the unmutated file should parse: %v", err)
	}
}

func splitWith(pattern string) map[string]any {
	return map[string]any{"type": "Sequence", "pretokenizers": []any{
		map[string]any{"type": "Split", "pattern": map[string]any{"Regex": pattern}, "behavior": "Isolated"},
		map[string]any{"type": "ByteLevel"},
	}}
}

func splitBehavior(behavior string) map[string]any {
	s := splitWith(qwenSplitPattern)
	s["pretokenizers"].([]any)[0].(map[string]any)["behavior"] = behavior
	return s
}

func TestLoadFileErrors(t *testing.T) {
	if _, err := LoadFile("/nonexistent/tokenizer.json"); err == nil || !strings.Contains(err.Error(), "/nonexistent/tokenizer.json") {
		t.Errorf("missing file: %v", err)
	}
	path := t.TempDir() + "/tokenizer.json"
	if err := writeFile(path, `{"model": {"type": "WordPiece"}}`); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFile(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "model.type") {
		t.Errorf("WordPiece: %v", err)
	}
}

// GPT-2's own files declare only a ByteLevel pre-tokenizer with use_regex (GPT-2's pattern) and may
// ask for a prefix space.
func TestGPT2StylePipeline(t *testing.T) {
	vocab := map[string]int32{}
	for b := 0; b < 256; b++ {
		vocab[ByteToken(byte(b))] = int32(b)
	}
	vocab["Ġh"], vocab["Ġhi"], vocab["ĠĠ"] = 256, 257, 258
	file := map[string]any{
		"added_tokens":  []AddedToken{{ID: 259, Content: "<|endoftext|>", Special: true}},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": true, "use_regex": true},
		"decoder":       map[string]any{"type": "ByteLevel"},
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{"Ġ h", "Ġh i", "Ġ Ġ"}},
	}
	data, _ := json.Marshal(file)
	tok, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	// "hi" gets a prefix space; GPT-2's pattern splits "   hi" into "  " and " hi".
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"hi", []string{"Ġhi"}},
		{"hi   hi", []string{"Ġhi", "ĠĠ", "Ġhi"}},
		{"hi<|endoftext|>hi", []string{"Ġhi", "<|endoftext|>", "Ġhi"}},
	} {
		if got := tokensOf(tok, tok.Encode(c.in)); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
