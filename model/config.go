package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"gorstar/internal/usererr"
)

// Config is the architecture of a Qwen2/Qwen3 model, read from and written to a Hugging Face
// config.json with the field names transformers uses.
type Config struct {
	ModelType             string   `json:"model_type"`
	Architectures         []string `json:"architectures,omitempty"`
	VocabSize             int      `json:"vocab_size"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	NumKeyValueHeads      int      `json:"num_key_value_heads"`
	HeadDim               int      `json:"head_dim"`
	RopeTheta             float64  `json:"rope_theta"`
	RMSNormEps            float64  `json:"rms_norm_eps"`
	TieWordEmbeddings     bool     `json:"tie_word_embeddings"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	TorchDtype            string   `json:"torch_dtype,omitempty"`
	BOSTokenID            *int     `json:"bos_token_id,omitempty"`
	EOSTokenID            *int     `json:"eos_token_id,omitempty"`
	HiddenAct             string   `json:"hidden_act,omitempty"`
	AttentionBias         bool     `json:"attention_bias"`
	InitializerRange      float64  `json:"initializer_range,omitempty"`
}

// QKNorm reports whether attention applies per-head RMSNorm to queries and keys (Qwen3).
func (c Config) QKNorm() bool { return c.ModelType == "qwen3" }

// QKVBias reports whether the q/k/v projections carry a bias (always for Qwen2, optional for Qwen3).
func (c Config) QKVBias() bool { return c.ModelType == "qwen2" || c.AttentionBias }

// OBias reports whether the output projection carries a bias: in transformers' Qwen3,
// attention_bias applies to o_proj as well; Qwen2's o_proj never has one.
func (c Config) OBias() bool { return c.ModelType == "qwen3" && c.AttentionBias }

// QDim and KVDim are the widths of the query and of the key/value projections.
func (c Config) QDim() int  { return c.NumAttentionHeads * c.HeadDim }
func (c Config) KVDim() int { return c.NumKeyValueHeads * c.HeadDim }

// Presets are the random-init architectures `gorstar model init` offers.
var presetNames = []string{"tiny", "small"}

// Preset returns a named architecture: "tiny" (byte-level vocab, ~1M parameters, for tests and the
// laptop quickstart) or "small" (32k vocab, ~42M parameters).
func Preset(name string, vocab int) (Config, error) {
	c := Config{
		ModelType:             "qwen3",
		Architectures:         []string{"Qwen3ForCausalLM"},
		HiddenAct:             "silu",
		TorchDtype:            "float32",
		MaxPositionEmbeddings: 4096,
		InitializerRange:      0.02,
	}
	switch name {
	case "tiny":
		c.VocabSize, c.HiddenSize, c.NumHiddenLayers = 384, 128, 4
		c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, c.IntermediateSize = 4, 2, 32, 384
		c.TieWordEmbeddings, c.RopeTheta, c.RMSNormEps = true, 1e4, 1e-6
	case "small":
		c.VocabSize, c.HiddenSize, c.NumHiddenLayers = 32000, 512, 8
		c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, c.IntermediateSize = 8, 4, 64, 1536
		c.TieWordEmbeddings, c.RopeTheta, c.RMSNormEps = false, 1e6, 1e-6
	default:
		return Config{}, usererr.New("unknown model preset %q (want one of %v)", name, presetNames)
	}
	if vocab > c.VocabSize {
		c.VocabSize = vocab
	}
	return c, nil
}

// LoadConfig reads and validates dir/config.json.
func LoadConfig(dir string) (Config, error) {
	path := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return Config{}, usererr.New("%s: not found (want a Hugging Face model directory)", path)
		}
		return Config{}, fmt.Errorf("read %s: %w", path, err)
	}
	return ParseConfig(path, data)
}

// ParseConfig decodes a config.json (path names it in errors), fills defaults the way transformers
// does (head_dim 128 for qwen3 and hidden_size / num_attention_heads for qwen2, num_key_value_heads =
// num_attention_heads, untied embeddings) and
// validates it.
func ParseConfig(path string, data []byte) (Config, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return Config{}, usererr.New("%s: invalid JSON: %v", path, err)
	}
	c := Config{RopeTheta: 10000, RMSNormEps: 1e-6}
	if err := json.Unmarshal(data, &c); err != nil {
		if te, ok := err.(*json.UnmarshalTypeError); ok {
			return Config{}, usererr.New("%s: field %s: want %s, got a JSON %s", path, te.Field, te.Type, te.Value)
		}
		return Config{}, usererr.New("%s: %v", path, err)
	}
	if v, ok := raw["rope_scaling"]; ok && string(v) != "null" {
		return Config{}, usererr.New("%s: field rope_scaling: not supported (want null)", path)
	}
	if v, ok := raw["use_sliding_window"]; ok && string(v) == "true" {
		return Config{}, usererr.New("%s: field use_sliding_window: sliding-window attention is not supported", path)
	}
	// transformers' Qwen2Config and Qwen3Config default to untied embeddings and Qwen3Config to a
	// head_dim of 128, whatever hidden_size / num_attention_heads is.
	if _, ok := raw["head_dim"]; !ok && c.ModelType == "qwen3" {
		c.HeadDim = 128
	}
	if c.NumKeyValueHeads == 0 {
		c.NumKeyValueHeads = c.NumAttentionHeads
	}
	if c.HeadDim == 0 && c.NumAttentionHeads > 0 {
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	if err := c.Validate(); err != nil {
		return Config{}, usererr.New("%s: %v", path, err)
	}
	return c, nil
}

// Validate checks that the architecture is one gorstar implements and that the sizes fit together.
// Errors name the config.json field.
func (c Config) Validate() error {
	switch c.ModelType {
	case "qwen3", "qwen2":
	case "":
		return fmt.Errorf("field model_type: missing (want \"qwen3\" or \"qwen2\")")
	default:
		return fmt.Errorf("field model_type: unsupported architecture %q (want \"qwen3\" or \"qwen2\")", c.ModelType)
	}
	if c.HiddenAct != "" && c.HiddenAct != "silu" {
		return fmt.Errorf("field hidden_act: unsupported activation %q (want \"silu\")", c.HiddenAct)
	}
	positive := []struct {
		name string
		v    int
	}{
		{"vocab_size", c.VocabSize}, {"hidden_size", c.HiddenSize}, {"intermediate_size", c.IntermediateSize},
		{"num_hidden_layers", c.NumHiddenLayers}, {"num_attention_heads", c.NumAttentionHeads},
		{"num_key_value_heads", c.NumKeyValueHeads}, {"head_dim", c.HeadDim},
	}
	for _, f := range positive {
		if f.v <= 0 {
			return fmt.Errorf("field %s: must be > 0, got %d", f.name, f.v)
		}
	}
	if c.NumAttentionHeads%c.NumKeyValueHeads != 0 {
		return fmt.Errorf("field num_key_value_heads: %d does not divide num_attention_heads %d",
			c.NumKeyValueHeads, c.NumAttentionHeads)
	}
	if c.HeadDim%2 != 0 {
		return fmt.Errorf("field head_dim: must be even for rotary embeddings, got %d", c.HeadDim)
	}
	if !(c.RopeTheta > 0) {
		return fmt.Errorf("field rope_theta: must be > 0, got %g", c.RopeTheta)
	}
	if !(c.RMSNormEps > 0) {
		return fmt.Errorf("field rms_norm_eps: must be > 0, got %g", c.RMSNormEps)
	}
	return nil
}

// JSON renders the config as transformers writes it.
func (c Config) JSON() ([]byte, error) {
	if len(c.Architectures) == 0 {
		if c.ModelType == "qwen2" {
			c.Architectures = []string{"Qwen2ForCausalLM"}
		} else {
			c.Architectures = []string{"Qwen3ForCausalLM"}
		}
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// NumParams is the number of trainable parameters (lm_head counted once when tied).
func (c Config) NumParams() int64 {
	var n int64
	for _, t := range c.tensorSpecs() {
		n += int64(t.size())
	}
	return n
}
