package model

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"gorstar/safetensors"
)

// bf16 → fp32 → bf16 gives back the same file, and a bf16 model loaded from a bf16 checkpoint
// multiplies with exactly the checkpoint's values (its rounding of the widened master weights is
// the identity).
func TestConvertRoundTrip(t *testing.T) {
	m, _ := New(microConfig("qwen3", false), 4)
	defer m.Close()
	tmp := t.TempDir()
	src, b16, f32, again := filepath.Join(tmp, "src"), filepath.Join(tmp, "b16"), filepath.Join(tmp, "f32"), filepath.Join(tmp, "again")
	if err := m.Save(src); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		in, out string
		dt      safetensors.DType
	}{{src, b16, safetensors.BF16}, {b16, f32, safetensors.F32}, {f32, again, safetensors.BF16}} {
		if err := Convert(step.in, step.out, step.dt); err != nil {
			t.Fatal(err)
		}
	}
	a, err := os.ReadFile(filepath.Join(b16, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(again, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("bf16 → fp32 → bf16 changed model.safetensors")
	}
	low, err := Load(b16)
	if err != nil {
		t.Fatal(err)
	}
	defer low.Close()
	if err := low.SetPrecision(BF16); err != nil {
		t.Fatal(err)
	}
	master := paramsOf(low)
	for i, h := range low.low.all.BF16s() {
		if want := safetensors.Float32ToBF16(master[i]); h != want || safetensors.BF16ToFloat32(h) != master[i] {
			t.Fatalf("param %d: bf16 weight %#04x, checkpoint value %g", i, h, master[i])
		}
	}
	if _, err := ConvertDType("fp8"); err == nil {
		t.Error("ConvertDType(fp8) accepted")
	}
}
