package tokenizer

import "encoding/json"

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
	Type                    string            `json:"type"`
	Dropout                 *float64          `json:"dropout"`
	UnkToken                *string           `json:"unk_token"`
	ContinuingSubwordPrefix *string           `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string           `json:"end_of_word_suffix"`
	FuseUnk                 bool              `json:"fuse_unk"`
	ByteFallback            bool              `json:"byte_fallback"`
	IgnoreMerges            bool              `json:"ignore_merges"`
	Vocab                   map[string]int32  `json:"vocab"`
	Merges                  []json.RawMessage `json:"merges"`
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
