package safetensors

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gorstar/internal/usererr"
)

func writeIndex(t *testing.T, dir, js string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, IndexFile), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOpenDirSharded(t *testing.T) {
	dir := t.TempDir()
	w := func(name string, tensors ...Tensor) {
		if err := Write(filepath.Join(dir, name), tensors, map[string]string{"format": "pt"}); err != nil {
			t.Fatal(err)
		}
	}
	w("model-00001-of-00002.safetensors",
		Tensor{Name: "model.embed_tokens.weight", DType: BF16, Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}},
		Tensor{Name: "stray", DType: F32, Shape: []int{1}, Data: []float32{9}})
	w("model-00002-of-00002.safetensors",
		Tensor{Name: "model.norm.weight", DType: F32, Shape: []int{2}, Data: []float32{5, 6}})
	writeIndex(t, dir, `{"metadata":{"total_size":16},"weight_map":{
		"model.embed_tokens.weight":"model-00001-of-00002.safetensors",
		"model.norm.weight":"model-00002-of-00002.safetensors"}}`)
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := s.Names(), []string{"model.embed_tokens.weight", "model.norm.weight"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
	if len(s.Files()) != 2 {
		t.Errorf("%d files open, want 2", len(s.Files()))
	}
	v, shape, err := s.Float32("model.embed_tokens.weight")
	if err != nil || !reflect.DeepEqual(v, []float32{1, 2, 3, 4}) || !reflect.DeepEqual(shape, []int{2, 2}) {
		t.Errorf("embed = %v %v %v", v, shape, err)
	}
	dst := make([]float32, 2)
	if err := s.ReadFloat32("model.norm.weight", dst); err != nil || dst[1] != 6 {
		t.Errorf("norm = %v %v", dst, err)
	}
	if in, err := s.Info("model.norm.weight"); err != nil || in.DType != F32 {
		t.Errorf("Info = %+v %v", in, err)
	}
	_, _, err = s.Float32("stray")
	if want := filepath.Join(dir, IndexFile) + `: tensor "stray" not found`; err == nil || err.Error() != want {
		t.Errorf("unmapped tensor: %v, want %q", err, want)
	}
}

func TestOpenDirSingle(t *testing.T) {
	dir := t.TempDir()
	if err := Write(filepath.Join(dir, SingleFile), []Tensor{{Name: "w", DType: F16, Shape: []int{1}, Data: []float32{0.5}}}, nil); err != nil {
		t.Fatal(err)
	}
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, _, err := s.Float32("w"); err != nil || v[0] != 0.5 {
		t.Errorf("w = %v %v", v, err)
	}
	_, err = s.Info("model.layers.3.mlp.up_proj.weight")
	if want := filepath.Join(dir, SingleFile) + `: tensor "model.layers.3.mlp.up_proj.weight" not found`; err == nil || err.Error() != want {
		t.Errorf("missing tensor: %v, want %q", err, want)
	}
}

func TestOpenDirBad(t *testing.T) {
	shard := "model-00001-of-00001.safetensors"
	for _, c := range []struct {
		name, index, want string
	}{
		{"no files", "", "no model.safetensors or model.safetensors.index.json"},
		{"bad json", `{"weight_map":`, "model.safetensors.index.json: invalid JSON"},
		{"no map", `{"metadata":{}}`, `model.safetensors.index.json: missing or empty "weight_map"`},
		{"escape", `{"weight_map":{"a":"../x.safetensors"}}`, `weight_map["a"]: want a file name in the same directory, got "../x.safetensors"`},
		{"null shard", `{"weight_map":{"a":null}}`, `weight_map["a"]: want a file name in the same directory, got null`},
		{"missing shard", `{"weight_map":{"a":"gone.safetensors"}}`, `gone.safetensors: no such file`},
		{"tensor not in shard", `{"weight_map":{"model.layers.3.mlp.up_proj.weight":"` + shard + `"}}`, shard + `: tensor "model.layers.3.mlp.up_proj.weight" not found (weight_map in model.safetensors.index.json points here)`},
	} {
		dir := t.TempDir()
		if err := Write(filepath.Join(dir, shard), []Tensor{{Name: "a", DType: F32, Shape: []int{1}, Data: []float32{1}}}, nil); err != nil {
			t.Fatal(err)
		}
		if c.index != "" {
			writeIndex(t, dir, c.index)
		}
		s, err := OpenDir(dir)
		if err == nil {
			s.Close()
			t.Errorf("%s: opened", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !usererr.Is(err) {
			t.Errorf("%s: error %q (user error %v), want %q", c.name, err, usererr.Is(err), c.want)
		}
	}
}
