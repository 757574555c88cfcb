package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The on-disk shape of tokenizer.json. Only the parts gorstar reads are typed; the rest is kept
// raw so that unknown components can be named in errors.

type fileJSON struct {
	Version       string          `json:"version"`
	Truncation    json.RawMessage `json:"truncation"`
	Padding       json.RawMessage `json:"padding"`
	AddedTokens   []AddedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         modelJSON       `json:"model"`
}

type modelJSON struct {
	Type                    string   `json:"type"`
	Dropout                 *float64 `json:"dropout"`
	UnkToken                *string  `json:"unk_token"`
	ContinuingSubwordPrefix *string  `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string  `json:"end_of_word_suffix"`
	FuseUnk                 bool     `json:"fuse_unk"`
	ByteFallback            bool     `json:"byte_fallback"`
	IgnoreMerges            bool     `json:"ignore_merges"`
	// Vocab (an object of token → id) and Merges (a mergeList) are decoded in parallel by Parse.
	Vocab  json.RawMessage `json:"vocab"`
	Merges json.RawMessage `json:"merges"`
}

// AddedToken is one entry of tokenizer.json's added_tokens: a string matched in the text before
// BPE runs. Special tokens (control tokens such as <|im_end|>) can be excluded from matching with
// EncodeWithSpecials.
type AddedToken struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// componentJSON is any normalizer, pre-tokenizer or decoder entry: a type plus its fields.
type componentJSON struct {
	Type string `json:"type"`
	// Sequence members.
	Normalizers   []json.RawMessage `json:"normalizers"`
	PreTokenizers []json.RawMessage `json:"pretokenizers"`
	Decoders      []json.RawMessage `json:"decoders"`
	// Split.
	Pattern  *patternJSON `json:"pattern"`
	Behavior string       `json:"behavior"`
	Invert   bool         `json:"invert"`
	// ByteLevel.
	AddPrefixSpace bool  `json:"add_prefix_space"`
	UseRegex       *bool `json:"use_regex"`
}

type patternJSON struct {
	Regex  *string `json:"Regex"`
	String *string `json:"String"`
}

// mergeList reads both spellings of merges: ["a b", …] (older files) and [["a", "b"], …].
type mergeList [][2]string

func (m *mergeList) UnmarshalJSON(data []byte) error {
	var pairs [][]string
	if err := json.Unmarshal(data, &pairs); err == nil {
		*m = make(mergeList, len(pairs))
		for i, p := range pairs {
			if len(p) != 2 {
				return fmt.Errorf("merges[%d]: want a pair of tokens, got %q", i, p)
			}
			(*m)[i] = [2]string{p[0], p[1]}
		}
		return nil
	}
	var joined []string
	if err := json.Unmarshal(data, &joined); err != nil {
		return fmt.Errorf("merges: want [\"a b\", …] or [[\"a\", \"b\"], …]: %w", err)
	}
	*m = make(mergeList, len(joined))
	for i, s := range joined {
		left, right, ok := strings.Cut(s, " ")
		if !ok || strings.Contains(right, " ") {
			return fmt.Errorf("merges[%d]: want two tokens separated by one space, got %q", i, s)
		}
		(*m)[i] = [2]string{left, right}
	}
	return nil
}
