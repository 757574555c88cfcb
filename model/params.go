package model

import (
	"math/rand/v2"

	"gorstar/kernels"
)

// Tensor is one named parameter: a view into a parameter set's single buffer.
type Tensor struct {
	Name   string
	Shape  []int
	Offset int // in floats, from the start of the set's buffer
	Size   int
	Decay  bool // AdamW applies weight decay (matrices yes, norms and biases no)
	Buf    kernels.Buf
}

// ParamSet holds every tensor of a model in one device buffer, in the order of Config.tensorSpecs
// (decayed matrices first). Parameters, gradients and the two AdamW moments are all ParamSets with
// the same layout, so clipping, zeroing and the optimizer run over whole ranges in one call.
type ParamSet struct {
	All     kernels.Buf
	Size    int // total floats
	Decayed int // floats in the decayed prefix [0, Decayed)
	Tensors []Tensor
	index   map[string]int
}

func newParamSet(c Config) *ParamSet {
	p := paramLayout(c)
	all := kernels.Alloc(p.Size)
	p.All = all
	all.Zero()
	for i := range p.Tensors {
		t := &p.Tensors[i]
		t.Buf = all.Slice(t.Offset, t.Size)
	}
	return p
}

// Tensor returns the tensor called name, or nil.
func (p *ParamSet) Tensor(name string) *Tensor {
	i, ok := p.index[name]
	if !ok {
		return nil
	}
	return &p.Tensors[i]
}

// buf is the buffer of a tensor the layout guarantees, or the zero Buf for an absent optional one.
func (p *ParamSet) buf(name string) kernels.Buf {
	if t := p.Tensor(name); t != nil {
		return t.Buf
	}
	return kernels.Buf{}
}

// Free releases the buffer.
func (p *ParamSet) Free() {
	if p != nil {
		p.All.Free()
		p.All = kernels.Buf{}
	}
}

// layerWeights are the buffers of one decoder layer (the zero Buf where the architecture has none).
type layerWeights struct {
	inNorm, q, k, v, o, qb, kb, vb, ob, qNorm, kNorm, postNorm, gate, up, down kernels.Buf
}

// weights are named views of a ParamSet, for parameters and gradients alike.
type weights struct {
	embed, finalNorm, lmHead kernels.Buf
	layers                   []layerWeights
}

func (p *ParamSet) views(c Config) weights {
	w := weights{embed: p.buf(nameEmbed), finalNorm: p.buf(nameFinalNorm), lmHead: p.buf(nameLMHead)}
	if c.TieWordEmbeddings {
		w.lmHead = w.embed
	}
	for i := 0; i < c.NumHiddenLayers; i++ {
		b := func(n string) kernels.Buf { return p.buf(layerName(i, n)) }
		w.layers = append(w.layers, layerWeights{
			inNorm: b(nameInputNorm), q: b(nameQ), k: b(nameK), v: b(nameV), o: b(nameO),
			qb: b(nameQBias), kb: b(nameKBias), vb: b(nameVBias), ob: b(nameOBias), qNorm: b(nameQNorm), kNorm: b(nameKNorm),
			postNorm: b(namePostNorm), gate: b(nameGate), up: b(nameUp), down: b(nameDown),
		})
	}
	return w
}

// initRandom fills matrices with normal(0, std) from a PCG stream seeded by seed, norm weights with
// 1 and biases with 0, the way transformers initializes Qwen models. The values depend only on the
// seed and the config.
func (p *ParamSet) initRandom(seed uint64, std float64) {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	host := make([]float32, p.Size)
	for _, t := range p.Tensors {
		dst := host[t.Offset : t.Offset+t.Size]
		switch {
		case t.Decay:
			for i := range dst {
				dst[i] = float32(rng.NormFloat64() * std)
			}
		case isNorm(t.Name):
			for i := range dst {
				dst[i] = 1
			}
		}
	}
	p.All.CopyFrom(host)
}

func isNorm(name string) bool {
	n := len(name)
	return n >= len("norm.weight") && name[n-len("norm.weight"):] == "norm.weight"
}

// paramLayout is c's tensors laid out in one buffer (names, shapes, offsets; decayed matrices
// first), with no memory allocated.
func paramLayout(c Config) *ParamSet {
	specs := c.tensorSpecs()
	p := &ParamSet{index: make(map[string]int, len(specs))}
	for _, s := range specs {
		p.index[s.name] = len(p.Tensors)
		p.Tensors = append(p.Tensors, Tensor{Name: s.name, Shape: s.shape, Offset: p.Size, Size: s.size(), Decay: s.decay})
		if s.decay {
			p.Decayed = p.Size + s.size()
		}
		p.Size += s.size()
	}
	return p
}
