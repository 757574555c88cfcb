package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// ByteLevelJSON returns a tokenizer.json for a byte-level BPE without merges: ids 0–255 are the
// bytes in byte order (in GPT-2's byte-to-character alphabet), followed by the given added tokens
// at ids 256, 257, …. It uses the Qwen pipeline (NFC, Qwen split regex, ByteLevel), so the file
// loads in Hugging Face tokenizers and a later merges list would behave as Qwen's. Tokens in
// ChatSpecials' control set are special=true, the others special=false.
func ByteLevelJSON(specials []string) ([]byte, error) {
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
		added = append(added, AddedToken{ID: int32(256 + i), Content: s, Special: controlTokens[s]})
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
		Model:         byteModelJSON(),
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(file); err != nil {
		return nil, fmt.Errorf("byte-level tokenizer: %w", err)
	}
	return buf.Bytes(), nil
}

// byteModelJSON writes the BPE model with the vocabulary in id order (a Go map would sort it by
// string, which is valid but hard to read).
func byteModelJSON() json.RawMessage {
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
	b.WriteString(`},"merges":[]}`)
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
