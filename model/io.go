package model

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"gorstar/internal/atomicfile"
	"gorstar/internal/usererr"
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
func Load(dir string) (*Model, error) {
	c, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer set.Close()
	m := newEmpty(c)
	if err := m.Params.read(set, dir); err != nil {
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

// tensorSource is what ParamSet.read needs of a safetensors file or shard set.
type tensorSource interface {
	Has(name string) bool
	Info(name string) (safetensors.Info, error)
	ReadFloat32(name string, dst []float32) error
}

// read fills every tensor of p from src, checking names and shapes. where names the directory or
// file in errors.
func (p *ParamSet) read(src tensorSource, where string) error {
	var host []float32
	for _, t := range p.Tensors {
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
		host = slices.Grow(host[:0], t.Size)[:t.Size]
		if err := src.ReadFloat32(t.Name, host); err != nil {
			return err
		}
		t.Buf.CopyFrom(host)
	}
	return nil
}

// tensors copies every tensor of p to the host for writing.
func (p *ParamSet) tensors() []safetensors.Tensor {
	out := make([]safetensors.Tensor, 0, len(p.Tensors))
	for _, t := range p.Tensors {
		data := make([]float32, t.Size)
		t.Buf.CopyTo(data)
		out = append(out, safetensors.Tensor{Name: t.Name, DType: safetensors.F32, Shape: t.Shape, Data: data})
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
	tensors := m.Params.tensors()
	for i := range tensors {
		tensors[i].DType = dtype
	}
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
