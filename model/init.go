package model

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"gorstar/internal/usererr"
	"gorstar/tokenizer"
)

// InitOptions describe a random-init model directory.
type InitOptions struct {
	Preset string // "tiny" or "small"
	// Tokenizer is "byte" (the default: 256 byte tokens + the chat special tokens) or a path to a
	// tokenizer.json or to a directory holding one (its tokenizer_config.json and
	// special_tokens_map.json are copied too). The vocabulary grows to fit the tokenizer.
	Tokenizer string
	Seed      uint64
	// Copy.Steps > 0 runs CopyWarmup on the new model before it is saved (its seed is Seed): a
	// random-init model cannot copy from its context, a pretrained one can.
	Copy CopyWarmupOptions
}

// InitDir writes a freshly initialized model as a Hugging Face directory at out, atomically.
func InitDir(out string, opts InitOptions) (Config, error) {
	files := map[string][]byte{}
	var tokJSON []byte
	var err error
	switch opts.Tokenizer {
	case "", "byte":
		if tokJSON, err = tokenizer.ByteLevelJSON(tokenizer.ChatSpecials); err != nil {
			return Config{}, err
		}
		files["tokenizer_config.json"] = byteTokenizerConfig
	default:
		path := opts.Tokenizer
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			for _, name := range []string{"tokenizer_config.json", "special_tokens_map.json"} {
				data, err := os.ReadFile(filepath.Join(path, name))
				if err == nil {
					files[name] = data
				} else if !errors.Is(err, os.ErrNotExist) {
					return Config{}, fmt.Errorf("read tokenizer files: %w", err)
				}
			}
			path = filepath.Join(path, "tokenizer.json")
		}
		if tokJSON, err = os.ReadFile(path); err != nil {
			return Config{}, usererr.New("--tokenizer %s: %v", opts.Tokenizer, err)
		}
	}
	tok, err := tokenizer.Parse(tokJSON)
	if err != nil {
		return Config{}, usererr.New("--tokenizer %s: %v", opts.Tokenizer, err)
	}
	files["tokenizer.json"] = tokJSON
	c, err := Preset(opts.Preset, tok.VocabSize())
	if err != nil {
		return Config{}, err
	}
	if id, ok := tok.TokenToID("<|endoftext|>"); ok {
		c.BOSTokenID = intPtr(int(id))
		c.EOSTokenID = intPtr(int(id))
	}
	if id, ok := tok.TokenToID("<|im_end|>"); ok {
		c.EOSTokenID = intPtr(int(id))
	}
	m, err := New(c, opts.Seed)
	if err != nil {
		return Config{}, err
	}
	defer m.Close()
	if opts.Copy.Steps > 0 {
		opts.Copy.Seed = opts.Seed
		if _, _, err := CopyWarmup(m, tok, opts.Copy); err != nil {
			return Config{}, err
		}
	}
	m.Files = files
	if err := m.Save(out); err != nil {
		return Config{}, err
	}
	return c, nil
}

func intPtr(v int) *int { return &v }

// byteTokenizerConfig is the tokenizer_config.json written beside the byte-level tokenizer, so
// transformers' AutoTokenizer loads it as a fast tokenizer with the chat format's end tokens.
var byteTokenizerConfig = []byte(`{
  "tokenizer_class": "PreTrainedTokenizerFast",
  "bos_token": null,
  "eos_token": "<|im_end|>",
  "pad_token": "<|endoftext|>",
  "model_max_length": 4096,
  "clean_up_tokenization_spaces": false
}
`)
