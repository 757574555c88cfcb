package safetensors

import (
	"encoding/json"
	"math"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"gorstar/internal/testenv"
)

// torchPython is Debian's interpreter with python3-torch; bench/qwen3_torch.py has its own
// safetensors reader and writer, written independently of this package.
const torchPython = "/usr/bin/python3"

func needTorch(t *testing.T) string {
	t.Helper()
	testenv.PythonModule(t, torchPython, "torch", "python3-torch")
	script, _ := filepath.Abs("../bench/qwen3_torch.py")
	return script
}

// Files this package writes read back identically in the independent PyTorch reader.
func TestTorchReadsOurFiles(t *testing.T) {
	testenv.Short(t, "compares with PyTorch")
	script := needTorch(t)
	vals := []float32{0, -0.5, 1, 3.14159, 1e-8, float32(math.Ldexp(1, -24)), 65504, 1.00390625, float32(math.Inf(-1))}
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := Write(path, []Tensor{
		{Name: "f32", DType: F32, Shape: []int{3, 3}, Data: vals},
		{Name: "bf16", DType: BF16, Shape: []int{9}, Data: vals},
		{Name: "f16", DType: F16, Shape: []int{9, 1}, Data: vals},
	}, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(torchPython, script, "tensors", "--file", path).Output()
	if err != nil {
		t.Fatalf("qwen3_torch.py tensors: %v", err)
	}
	var dump struct {
		Metadata map[string]string
		Tensors  map[string]struct {
			Shape   []int
			F32bits []uint32
		}
	}
	if err := json.Unmarshal(out, &dump); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if dump.Metadata["format"] != "pt" {
		t.Errorf("torch saw metadata %v", dump.Metadata)
	}
	for _, name := range f.Names() {
		ours, shape, err := f.Float32(name)
		if err != nil {
			t.Fatal(err)
		}
		theirs := dump.Tensors[name]
		if !reflect.DeepEqual(shape, theirs.Shape) {
			t.Errorf("%s: torch shape %v, ours %v", name, theirs.Shape, shape)
		}
		for i, v := range ours {
			if math.Float32bits(v) != theirs.F32bits[i] {
				t.Errorf("%s[%d]: torch %g, ours %g", name, i, math.Float32frombits(theirs.F32bits[i]), v)
			}
		}
	}
}

// writeWithTorch has the PyTorch script's own writer (its own BF16 rounding) store the same
// random values as F32, BF16 and F16 files in dir, and returns the float32 bit patterns it meant.
const writeWithTorch = `
import json, sys
sys.path.insert(0, sys.argv[1])
import torch, qwen3_torch as q
g = torch.Generator().manual_seed(0)
ts = {"w": torch.randn(5, 7, generator=g) * 10.0 ** torch.randint(-9, 6, (5, 7), generator=g),
      "b": torch.tensor([0.0, -0.0, 1e-40, 2.0 ** -24, float("inf"), 1.00390625])}
out = {}
for dt in ["F32", "BF16", "F16"]:
    q.write_safetensors(sys.argv[2] + "/" + dt + ".safetensors", ts, {"format": "pt"}, dt)
    back, _ = q.read_safetensors(sys.argv[2] + "/" + dt + ".safetensors")
    out[dt] = {k: [x & 0xFFFFFFFF for x in v.reshape(-1).view(torch.int32).tolist()] for k, v in back.items()}
print(json.dumps(out))
`

// Files the PyTorch script writes open here with the values its own reader sees.
func TestWeReadTorchFiles(t *testing.T) {
	testenv.Short(t, "compares with PyTorch")
	script := needTorch(t)
	dir := t.TempDir()
	out, err := exec.Command(torchPython, "-c", writeWithTorch, filepath.Dir(script), dir).Output()
	if err != nil {
		t.Fatalf("write with torch: %v", err)
	}
	var want map[string]map[string][]uint32
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for _, dtype := range []DType{F32, BF16, F16} {
		f, err := Open(filepath.Join(dir, string(dtype)+".safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"w", "b"} {
			if in, _ := f.Info(name); in.DType != dtype {
				t.Errorf("%s: tensor %s has dtype %s", dtype, name, in.DType)
			}
			ours, _, err := f.Float32(name)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range ours {
				if math.Float32bits(v) != want[string(dtype)][name][i] {
					t.Errorf("%s %s[%d]: torch %g, ours %g", dtype, name, i, math.Float32frombits(want[string(dtype)][name][i]), v)
				}
			}
		}
		// Our own rounding of the float32 values agrees with the PyTorch writer's, bit for bit.
		if dtype != F32 {
			f32, _ := Open(filepath.Join(dir, "F32.safetensors"))
			full, _, _ := f32.Float32("w")
			f32.Close()
			low, _, _ := f.Float32("w")
			for i, v := range full {
				var r float32
				if dtype == BF16 {
					r = BF16ToFloat32(Float32ToBF16(v))
				} else {
					r = F16ToFloat32(Float32ToF16(v))
				}
				if math.Float32bits(r) != math.Float32bits(low[i]) {
					t.Errorf("%s rounding of %g: ours %g, torch %g", dtype, v, r, low[i])
				}
			}
		}
		f.Close()
	}
}
