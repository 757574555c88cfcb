package model

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"unsafe"

	"gorstar/internal/atomicfile"
	"gorstar/internal/usererr"
	"gorstar/kernels"
	"gorstar/safetensors"
)

// auxFiles are the files of a Hugging Face model directory besides config.json and the weights
// that Load keeps and Save writes back unchanged (tokenizer and generation settings).
var auxFiles = []string{
	"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
	"vocab.json", "merges.txt", "chat_template.jinja", "generation_config.json",
}

// Load reads a Hugging Face model directory: config.json, then model.safetensors or the shards of
// model.safetensors.index.json (F32, BF16 or F16, converted to float32). Every tensor the
// architecture needs must be present with its exact shape; tensors it does not use are ignored.
func Load(dir string) (*Model, error) { return LoadWith(dir, LoadOptions{}) }

// LoadOptions choose what LoadWith builds.
type LoadOptions struct {
	// Precision is set on the loaded model (SetPrecision); "" is fp32.
	Precision Precision
	// Inference loads a bf16 model for sampling and scoring only (eval, serve, a rollout engine):
	// every weight goes from the file straight into the bfloat16 buffer the products read (BF16
	// tensors copied, F32/F16 rounded), and only the norm gains and biases get a float32 copy — no
	// fp32 master weights, about the file's size in memory for a bf16 checkpoint. Such a model
	// cannot train (ZeroGrads and NewOptimizer panic) and keeps bf16 (SetPrecision to fp32 fails).
	// Without bf16 it changes nothing.
	Inference bool
}

// LoadWith is Load with options. A training model (the default) reads its float32 master weights
// straight into their buffer, from a bf16 file exactly, and rounds its bf16 copy from them once.
func LoadWith(dir string, o LoadOptions) (*Model, error) {
	prec, err := ParsePrecision(string(o.Precision))
	if err != nil {
		return nil, usererr.Wrap(err)
	}
	c, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer set.Close()
	var m *Model
	if o.Inference && prec == BF16 {
		m = newInference(c)
		err = m.readInference(set, dir)
	} else {
		m = newEmpty(c)
		if err = m.Params.read(set, dir); err == nil {
			err = m.SetPrecision(prec)
		}
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	for _, name := range auxFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("load model %s: %w", dir, err)
		}
		m.Files[name] = data
	}
	return m, nil
}

// Inference reports whether the model was loaded for inference only (LoadOptions.Inference).
func (m *Model) Inference() bool { return m.inference }

// newInference is an inference-only bf16 model of c with its buffers allocated: every parameter
// in the bfloat16 buffer (the ParamSet's layout), and a float32 ParamSet holding only the tensors
// that are not matrices (norm gains, biases), whose matrices have no buffer.
func newInference(c Config) *Model {
	p := paramLayout(c)
	p.All = kernels.Alloc(p.Size - p.Decayed) // matrices come first: the rest is one tail
	p.All.Zero()
	for i := range p.Tensors {
		if t := &p.Tensors[i]; !t.Decay {
			t.Buf = p.All.Slice(t.Offset-p.Decayed, t.Size)
		}
	}
	m := &Model{Config: c, Params: p, Files: map[string][]byte{}, inference: true}
	m.low = &lowPrecision{all: kernels.AllocBF16(p.Size), version: 1} // version+1: current, never rounded again
	m.w = m.lowViews()
	m.w.embed = m.low.all.Slice(p.Tensor(nameEmbed).Offset, p.Tensor(nameEmbed).Size)
	return m
}

// readInference fills an inference model from src: every tensor into the bfloat16 buffer, the
// non-matrices also into their float32 buffers (exactly as Load would).
func (m *Model) readInference(src *safetensors.Set, where string) error {
	low := m.low.all.BF16s()
	onDevice := low == nil // a device's memory: read into host memory, then copied
	if onDevice {
		low = make([]uint16, m.Params.Size)
	}
	for _, t := range m.Params.Tensors {
		if err := checkTensor(src, t, where); err != nil {
			return err
		}
		if !t.Decay {
			host := make([]float32, t.Size)
			if err := src.ReadFloat32(t.Name, host); err != nil {
				return err
			}
			t.Buf.CopyFrom(host)
		}
		if err := src.ReadBF16(t.Name, low[t.Offset:t.Offset+t.Size]); err != nil {
			return err
		}
	}
	if onDevice {
		m.low.all.CopyFromBF16(low)
	}
	return nil
}

// checkTensor checks that src holds t with t's shape.
func checkTensor(src tensorSource, t Tensor, where string) error {
	if !src.Has(t.Name) {
		return usererr.New("%s: tensor %s is missing (want shape %v)", where, t.Name, t.Shape)
	}
	info, err := src.Info(t.Name)
	if err != nil {
		return err
	}
	if !slices.Equal(info.Shape, t.Shape) {
		return usererr.New("%s: tensor %s has shape %v, want %v", where, t.Name, info.Shape, t.Shape)
	}
	return nil
}

// tensorSource is what ParamSet.read needs of a safetensors file or shard set.
type tensorSource interface {
	Has(name string) bool
	Info(name string) (safetensors.Info, error)
	ReadFloat32(name string, dst []float32) error
}

// read fills every tensor of p from src, checking names and shapes. where names the directory or
// file in errors. On the CPU each tensor is read straight into its buffer (no host copy).
func (p *ParamSet) read(src tensorSource, where string) error {
	var host []float32
	for _, t := range p.Tensors {
		if err := checkTensor(src, t, where); err != nil {
			return err
		}
		if direct := t.Buf.Floats(); direct != nil {
			if err := src.ReadFloat32(t.Name, direct); err != nil {
				return err
			}
			continue
		}
		host = slices.Grow(host[:0], t.Size)[:t.Size]
		if err := src.ReadFloat32(t.Name, host); err != nil {
			return err
		}
		t.Buf.CopyFrom(host)
	}
	return nil
}

// tensors are every tensor of p for writing: views of the buffers on the CPU, host copies else.
func (p *ParamSet) tensors() []safetensors.Tensor {
	out := make([]safetensors.Tensor, 0, len(p.Tensors))
	for _, t := range p.Tensors {
		data := t.Buf.Floats()
		if data == nil {
			data = make([]float32, t.Size)
			t.Buf.CopyTo(data)
		}
		out = append(out, safetensors.Tensor{Name: t.Name, DType: safetensors.F32, Shape: t.Shape, Data: data})
	}
	return out
}

// hfTensors are the model's weights to write as dtype. An inference-only model writes its
// matrices from the bfloat16 buffer: as they are in BF16 (the loaded file's bits), widened else.
func (m *Model) hfTensors(dtype safetensors.DType) []safetensors.Tensor {
	if !m.inference {
		ts := m.Params.tensors()
		for i := range ts {
			ts[i].DType = dtype
		}
		return ts
	}
	low := m.low.all.BF16s()
	if low == nil { // a device's memory
		low = make([]uint16, m.Params.Size)
		m.low.all.CopyToBF16(low)
	}
	out := make([]safetensors.Tensor, 0, len(m.Params.Tensors))
	for _, t := range m.Params.Tensors {
		st := safetensors.Tensor{Name: t.Name, DType: dtype, Shape: t.Shape}
		bits := low[t.Offset : t.Offset+t.Size]
		switch {
		case !t.Decay:
			st.Data = make([]float32, t.Size)
			t.Buf.CopyTo(st.Data)
		case dtype == safetensors.BF16 && len(bits) > 0:
			st.Raw = unsafe.Slice((*byte)(unsafe.Pointer(&bits[0])), 2*len(bits))
		default:
			st.Data = make([]float32, t.Size)
			for i, b := range bits {
				st.Data[i] = safetensors.BF16ToFloat32(b)
			}
		}
		out = append(out, st)
	}
	return out
}

// Save writes the model as a Hugging Face directory (config.json, model.safetensors in float32,
// generation_config.json and the kept tokenizer files), replacing dir atomically.
func (m *Model) Save(dir string) error { return m.SaveAs(dir, safetensors.F32) }

// SaveAs is Save with the weights stored as dtype: F32 (exact), or BF16 or F16 (rounded to
// nearest even; half the size, what most published Qwen checkpoints use).
func (m *Model) SaveAs(dir string, dtype safetensors.DType) error {
	if !dtype.IsFloat() {
		return fmt.Errorf("save model %s: dtype %s is not a float type", dir, dtype)
	}
	return atomicfile.WriteDir(dir, func(tmp string) error { return m.writeHF(tmp, dtype) })
}

// SaveInto writes the model into dir without replacing the directory, so files already there
// that are not the model's (a training run's checkpoints/ and metrics.jsonl) stay. Each file is
// written whole into a temporary directory inside dir and renamed into place, config.json last,
// so dir is a loadable model only once all its weights are there.
func (m *Model) SaveInto(dir string) error {
	tmp := filepath.Join(dir, ".final-model")
	if err := m.Save(tmp); err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return err
	}
	last := ""
	for _, e := range entries {
		if e.Name() == "config.json" {
			last = e.Name()
			continue
		}
		if err := os.Rename(filepath.Join(tmp, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	if last == "" {
		return errors.New("save final model: no config.json written")
	}
	return os.Rename(filepath.Join(tmp, last), filepath.Join(dir, last))
}

var torchDTypes = map[safetensors.DType]string{safetensors.F32: "float32", safetensors.BF16: "bfloat16", safetensors.F16: "float16"}

// writeHF writes the Hugging Face files of the model into an existing directory.
func (m *Model) writeHF(dir string, dtype safetensors.DType) error {
	c := m.Config
	c.TorchDtype = torchDTypes[dtype]
	js, err := c.JSON()
	if err != nil {
		return fmt.Errorf("save model config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), js, 0o644); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	tensors := m.hfTensors(dtype)
	if err := safetensors.Write(filepath.Join(dir, safetensors.SingleFile), tensors,
		map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("save model weights: %w", err)
	}
	files := m.Files
	if _, ok := files["generation_config.json"]; !ok {
		files = maps.Clone(files)
		files["generation_config.json"] = generationConfig(c)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("save model: %w", err)
		}
	}
	return nil
}

func generationConfig(c Config) []byte {
	s := "{\n"
	if c.BOSTokenID != nil {
		s += fmt.Sprintf("  \"bos_token_id\": %d,\n", *c.BOSTokenID)
	}
	if c.EOSTokenID != nil {
		s += fmt.Sprintf("  \"eos_token_id\": %d,\n", *c.EOSTokenID)
	}
	return []byte(s + "  \"transformers_version\": \"4.51.0\"\n}\n")
}
