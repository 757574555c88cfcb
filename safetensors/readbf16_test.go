package safetensors

import (
	"math"
	"path/filepath"
	"testing"
)

// ReadBF16 copies BF16 tensors bit for bit and rounds F32 and F16 ones to nearest even, as
// Float32ToBF16 does; the released pages read back the same afterwards.
func TestReadBF16(t *testing.T) {
	vals := []float32{0, -0.5, 1, 3.14159, 1e-8, float32(math.Ldexp(1, -24)), 65504, 1.00390625, float32(math.Inf(-1)), -2.5e-3}
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := Write(path, []Tensor{
		{Name: "f32", DType: F32, Shape: []int{2, 5}, Data: vals},
		{Name: "bf16", DType: BF16, Shape: []int{10}, Data: vals},
		{Name: "f16", DType: F16, Shape: []int{10}, Data: vals},
	}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, name := range []string{"f32", "bf16", "f16"} {
		wide, _, err := f.Float32(name)
		if err != nil {
			t.Fatal(err)
		}
		for pass := 0; pass < 2; pass++ { // the second read comes after release
			got := make([]uint16, len(vals))
			if err := f.ReadBF16(name, got); err != nil {
				t.Fatal(err)
			}
			for i, b := range got {
				if want := Float32ToBF16(wide[i]); b != want {
					t.Errorf("%s[%d] pass %d: %#04x, want %#04x (from %g)", name, i, pass, b, want, wide[i])
				}
			}
		}
	}
	if err := f.ReadBF16("f32", make([]uint16, 3)); err == nil {
		t.Error("ReadBF16 into 3 elements of a 10-element tensor: no error")
	}
}
