package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gorstar/internal/usererr"
	"gorstar/safetensors"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	for _, c := range []Config{microConfig("qwen3", true), microConfig("qwen2", false)} {
		m, err := New(c, 5)
		if err != nil {
			t.Fatal(err)
		}
		m.Files["tokenizer.json"] = []byte(`{"kept": true}`)
		dir := filepath.Join(t.TempDir(), "model")
		if err := m.Save(dir); err != nil {
			t.Fatal(err)
		}
		got, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(paramsOf(got), paramsOf(m)) {
			t.Errorf("%s: parameters changed in a save/load round trip", c.ModelType)
		}
		if string(got.Files["tokenizer.json"]) != `{"kept": true}` || got.Files["generation_config.json"] == nil {
			t.Errorf("%s: auxiliary files not kept: %v", c.ModelType, got.Files)
		}
		if got.Config.TieWordEmbeddings != c.TieWordEmbeddings || got.Config.QKVBias() != c.QKVBias() {
			t.Errorf("%s: config changed: %+v", c.ModelType, got.Config)
		}
		got.Close()
		m.Close()
	}
}

// SaveInto keeps what else is in the directory and leaves no temporary directory behind.
func TestSaveIntoKeepsOtherFiles(t *testing.T) {
	m, err := New(microConfig("qwen3", true), 5)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "checkpoints", "step-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.SaveInto(dir); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if !slices.Equal(paramsOf(got), paramsOf(m)) {
		t.Error("parameters changed in SaveInto/Load")
	}
	for _, name := range []string{"checkpoints/step-1", "metrics.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s was not kept: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".final-model")); !os.IsNotExist(err) {
		t.Errorf("temporary directory left behind: %v", err)
	}
}

func TestSaveBF16(t *testing.T) {
	m, _ := New(microConfig("qwen3", true), 2)
	defer m.Close()
	dir := filepath.Join(t.TempDir(), "bf16")
	if err := m.SaveAs(dir, safetensors.BF16); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	want := paramsOf(m)
	for i, x := range paramsOf(got) {
		if x != safetensors.BF16ToFloat32(safetensors.Float32ToBF16(want[i])) {
			t.Fatalf("param %d: %g after a BF16 round trip of %g", i, x, want[i])
		}
	}
	if got.Config.TorchDtype != "bfloat16" {
		t.Errorf("torch_dtype %q", got.Config.TorchDtype)
	}
}

func TestInitDirPresets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	c, err := InitDir(dir, InitOptions{Preset: "tiny", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.VocabSize != 384 || c.HiddenSize != 128 || c.NumHiddenLayers != 4 || !c.TieWordEmbeddings {
		t.Fatalf("tiny preset: %+v", c)
	}
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if _, err := InitDir(filepath.Join(t.TempDir(), "x"), InitOptions{Preset: "huge"}); !usererr.Is(err) {
		t.Errorf("unknown preset: %v, want a user error", err)
	}
}

// writeBadModel saves a valid model, then lets edit change its files.
func writeBadModel(t *testing.T, edit func(dir string)) string {
	t.Helper()
	m, err := New(microConfig("qwen3", true), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	dir := filepath.Join(t.TempDir(), "m")
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	edit(dir)
	return dir
}

func rewriteTensors(t *testing.T, dir string, edit func([]safetensors.Tensor) []safetensors.Tensor) {
	path := filepath.Join(dir, "model.safetensors")
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for _, name := range f.Names() {
		data, shape, err := f.Float32(name)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, safetensors.Tensor{Name: name, DType: safetensors.F32, Shape: shape, Data: data})
	}
	f.Close()
	if err := safetensors.Write(path, edit(ts), nil); err != nil {
		t.Fatal(err)
	}
}

func editConfig(t *testing.T, dir, old, new string) {
	path := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("config.json has no %q", old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadBadInputs(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, dir string)
		want string
	}{
		{"unknown architecture", func(t *testing.T, d string) { editConfig(t, d, `"qwen3"`, `"llama"`) }, `model_type: unsupported architecture "llama"`},
		{"bad field type", func(t *testing.T, d string) { editConfig(t, d, `"hidden_size": 16`, `"hidden_size": "16"`) }, "hidden_size"},
		{"zero heads", func(t *testing.T, d string) {
			editConfig(t, d, `"num_key_value_heads": 2`, `"num_key_value_heads": 3`)
		}, "num_key_value_heads"},
		{"invalid JSON", func(t *testing.T, d string) { editConfig(t, d, `{`, `[`) }, "config.json: invalid JSON"},
		{"no config", func(t *testing.T, d string) { os.Remove(filepath.Join(d, "config.json")) }, "config.json: not found"},
		{"missing tensor", func(t *testing.T, d string) {
			rewriteTensors(t, d, func(ts []safetensors.Tensor) []safetensors.Tensor {
				return slices.DeleteFunc(ts, func(x safetensors.Tensor) bool { return x.Name == "model.layers.1.self_attn.k_norm.weight" })
			})
		}, "tensor model.layers.1.self_attn.k_norm.weight is missing"},
		{"mis-shaped tensor", func(t *testing.T, d string) {
			rewriteTensors(t, d, func(ts []safetensors.Tensor) []safetensors.Tensor {
				for i := range ts {
					if ts[i].Name == "model.layers.0.mlp.up_proj.weight" {
						ts[i].Shape = []int{16, 24}
					}
				}
				return ts
			})
		}, "tensor model.layers.0.mlp.up_proj.weight has shape [16 24], want [24 16]"},
		{"truncated weights", func(t *testing.T, d string) {
			p := filepath.Join(d, "model.safetensors")
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()-100)
		}, "file truncated"},
		{"no weights", func(t *testing.T, d string) { os.Remove(filepath.Join(d, "model.safetensors")) }, "no model.safetensors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeBadModel(t, func(d string) { tc.edit(t, d) })
			m, err := Load(dir)
			if err == nil {
				m.Close()
				t.Fatal("no error")
			}
			if !usererr.Is(err) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q (user error %v), want one line containing %q", err, usererr.Is(err), tc.want)
			}
		})
	}
}

// A sharded checkpoint (model.safetensors.index.json + shards, as transformers writes big models)
// loads like a single file.
func TestLoadSharded(t *testing.T) {
	m, _ := New(microConfig("qwen2", false), 8)
	defer m.Close()
	dir := filepath.Join(t.TempDir(), "sharded")
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	var shards [2][]safetensors.Tensor
	weightMap := map[string]string{}
	for i, ts := range m.Params.tensors() {
		shards[i%2] = append(shards[i%2], ts)
		weightMap[ts.Name] = fmt.Sprintf("model-%05d-of-00002.safetensors", i%2+1)
	}
	for i, ts := range shards {
		if err := safetensors.Write(filepath.Join(dir, fmt.Sprintf("model-%05d-of-00002.safetensors", i+1)), ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	index, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": weightMap})
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), index, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "model.safetensors"))
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if !slices.Equal(paramsOf(got), paramsOf(m)) {
		t.Fatal("sharded load changed the parameters")
	}
}
