package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"gorstar/internal/plainjson"
)

// ChatSpecials are the added tokens of gorstar's chat format, in the order (and so with the ids)
// that ByteLevelJSON gives them. The first three are control tokens (special=true); the tags are
// ordinary added tokens, as in Qwen3.
var ChatSpecials = []string{
	"<|endoftext|>", "<|im_start|>", "<|im_end|>",
	"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
	"<reason>", "</reason>", "<answer>", "</answer>", "<think>", "</think>",
}

// controlTokens are marked special=true when written.
var controlTokens = map[string]bool{"<|endoftext|>": true, "<|im_start|>": true, "<|im_end|>": true}

// qwenSplitPattern is the pre-tokenizer regex of Qwen2/Qwen3 (also GPT-4's cl100k, with single digits).
const qwenSplitPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// ChatRoleWords are the role names of the chat format. Qwen3's vocabulary holds each as one token
// (`<|im_start|>assistant\n` is three tokens there), while a byte-level tokenizer spells them byte by
// byte, which makes every tool turn's scaffolding half again as long as Qwen3's (27 tokens against
// 18 for a one-character tool result). Benchmarks of the turn loop pass them to ByteLevelJSON.
var ChatRoleWords = []string{"system", "user", "assistant"}

// ByteLevelJSON returns a tokenizer.json for a byte-level BPE: ids 0–255 are the bytes in byte
// order (in GPT-2's byte-to-character alphabet), then, for each of words, the merges that build it
// from its bytes left to right (one token per new prefix of two or more bytes, in order), then the
// given added tokens. Without words there are no merges and the added tokens sit at ids 256, 257, ….
// It uses the Qwen pipeline (NFC, Qwen split regex, ByteLevel), so the file loads in Hugging Face
// tokenizers and the merges behave as Qwen's. Tokens in ChatSpecials' control set are special=true,
// the others special=false.
func ByteLevelJSON(specials []string, words ...string) ([]byte, error) {
	merges, err := wordMerges(words)
	if err != nil {
		return nil, err
	}
	first := 256 + len(merges) // one new token per merge
	seen := map[string]bool{}
	added := make([]AddedToken, 0, len(specials))
	for i, s := range specials {
		if s == "" {
			return nil, fmt.Errorf("byte-level tokenizer: added token %d is empty", i)
		}
		if seen[s] {
			return nil, fmt.Errorf("byte-level tokenizer: added token %q listed twice", s)
		}
		seen[s] = true
		added = append(added, AddedToken{ID: int32(first + i), Content: s, Special: controlTokens[s]})
	}
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}
	file := struct {
		Version       string          `json:"version"`
		Truncation    any             `json:"truncation"`
		Padding       any             `json:"padding"`
		AddedTokens   []AddedToken    `json:"added_tokens"`
		Normalizer    any             `json:"normalizer"`
		PreTokenizer  any             `json:"pre_tokenizer"`
		PostProcessor any             `json:"post_processor"`
		Decoder       any             `json:"decoder"`
		Model         json.RawMessage `json:"model"`
	}{
		Version:     "1.0",
		AddedTokens: added,
		Normalizer:  map[string]any{"type": "NFC"},
		PreTokenizer: map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": qwenSplitPattern}, "behavior": "Isolated", "invert": false},
			byteLevel,
		}},
		PostProcessor: byteLevel,
		Decoder:       byteLevel,
		Model:         byteModelJSON(merges),
	}
	var buf bytes.Buffer
	enc := plainjson.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(file); err != nil {
		return nil, fmt.Errorf("byte-level tokenizer: %w", err)
	}
	return buf.Bytes(), nil
}

// wordMerges lists the merges that build each word from its bytes, left to right: one per prefix
// of two or more bytes not made before (the token it makes), in the byte-level alphabet. Merges
// apply within a pre-token, so a word the split regex cuts (a space inside, letters and digits
// mixed) does not become one token.
func wordMerges(words []string) (merges [][2]string, err error) {
	made, listed := map[string]bool{}, map[string]bool{} // prefixes made (raw bytes), words seen
	for i, w := range words {
		if len(w) < 2 {
			return nil, fmt.Errorf("byte-level tokenizer: word %d (%q) needs two or more bytes", i, w)
		}
		if listed[w] {
			return nil, fmt.Errorf("byte-level tokenizer: word %q listed twice", w)
		}
		listed[w] = true
		for n := 2; n <= len(w); n++ {
			if !made[w[:n]] {
				made[w[:n]] = true
				merges = append(merges, [2]string{byteLevelString(w[:n-1]), ByteToken(w[n-1])})
			}
		}
	}
	return merges, nil
}

// byteModelJSON writes the BPE model with the vocabulary in id order (a Go map would sort it by
// string, which is valid but hard to read): the 256 bytes, then the token each merge makes.
func byteModelJSON(merges [][2]string) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":null,` +
		`"end_of_word_suffix":null,"fuse_unk":false,"byte_fallback":false,"ignore_merges":false,"vocab":{`)
	for i := 0; i < 256; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(ByteToken(byte(i)))
		fmt.Fprintf(&b, "%s:%d", key, i)
	}
	for i, m := range merges {
		key, _ := json.Marshal(m[0] + m[1])
		fmt.Fprintf(&b, ",%s:%d", key, 256+i)
	}
	list, _ := json.Marshal(merges)
	if len(merges) == 0 {
		list = []byte("[]")
	}
	fmt.Fprintf(&b, `},"merges":%s}`, list)
	return b.Bytes()
}

// ByteLevelChat is the tokenizer ByteLevelJSON(ChatSpecials) describes: the one `model init`
// writes for the byte-level presets.
func ByteLevelChat() (*Tokenizer, error) {
	data, err := ByteLevelJSON(ChatSpecials)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}
