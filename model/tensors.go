package model

import "fmt"

// tensorSpec describes one parameter tensor: its Hugging Face name, shape and whether AdamW applies
// weight decay to it.
type tensorSpec struct {
	name  string
	shape []int
	decay bool
}

func (t tensorSpec) size() int {
	n := 1
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// Names of the per-layer tensors, relative to "model.layers.{i}.".
const (
	nameInputNorm = "input_layernorm.weight"
	nameQ         = "self_attn.q_proj.weight"
	nameK         = "self_attn.k_proj.weight"
	nameV         = "self_attn.v_proj.weight"
	nameO         = "self_attn.o_proj.weight"
	nameQBias     = "self_attn.q_proj.bias"
	nameKBias     = "self_attn.k_proj.bias"
	nameVBias     = "self_attn.v_proj.bias"
	nameOBias     = "self_attn.o_proj.bias"
	nameQNorm     = "self_attn.q_norm.weight"
	nameKNorm     = "self_attn.k_norm.weight"
	namePostNorm  = "post_attention_layernorm.weight"
	nameGate      = "mlp.gate_proj.weight"
	nameUp        = "mlp.up_proj.weight"
	nameDown      = "mlp.down_proj.weight"

	nameEmbed     = "model.embed_tokens.weight"
	nameFinalNorm = "model.norm.weight"
	nameLMHead    = "lm_head.weight"
)

func layerName(i int, name string) string { return fmt.Sprintf("model.layers.%d.%s", i, name) }

// tensorSpecs lists every parameter of the architecture. Matrices (decayed) come first and
// norms/biases (not decayed) last, so each group is one contiguous range of the parameter buffer
// and AdamW runs as two calls.
func (c Config) tensorSpecs() []tensorSpec {
	C, I, Q, KV, V := c.HiddenSize, c.IntermediateSize, c.QDim(), c.KVDim(), c.VocabSize
	var mats, vecs []tensorSpec
	mat := func(name string, shape ...int) { mats = append(mats, tensorSpec{name, shape, true}) }
	vec := func(name string, n int) { vecs = append(vecs, tensorSpec{name, []int{n}, false}) }
	mat(nameEmbed, V, C)
	for i := 0; i < c.NumHiddenLayers; i++ {
		mat(layerName(i, nameQ), Q, C)
		mat(layerName(i, nameK), KV, C)
		mat(layerName(i, nameV), KV, C)
		mat(layerName(i, nameO), C, Q)
		mat(layerName(i, nameGate), I, C)
		mat(layerName(i, nameUp), I, C)
		mat(layerName(i, nameDown), C, I)
		vec(layerName(i, nameInputNorm), C)
		vec(layerName(i, namePostNorm), C)
		if c.QKVBias() {
			vec(layerName(i, nameQBias), Q)
			vec(layerName(i, nameKBias), KV)
			vec(layerName(i, nameVBias), KV)
		}
		if c.OBias() {
			vec(layerName(i, nameOBias), C)
		}
		if c.QKNorm() {
			vec(layerName(i, nameQNorm), c.HeadDim)
			vec(layerName(i, nameKNorm), c.HeadDim)
		}
	}
	if !c.TieWordEmbeddings {
		mat(nameLMHead, V, C)
	}
	vec(nameFinalNorm, C)
	return append(mats, vecs...)
}
