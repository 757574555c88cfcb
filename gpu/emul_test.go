package gpu

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gorstar/internal/testenv"
	"gorstar/kernels"
)

// emulatedDevice compiles the embedded kernels for the CPU with gpu/emul (g++, C++20: every thread
// of a block an OS thread, __syncthreads a barrier) and returns a Device whose launches run them
// on host memory, with vendor v's wave width (32 or 64 lanes).
func emulatedDevice(t *testing.T, v Vendor) *Device {
	t.Helper()
	testenv.Command(t, "g++", "apt-get install g++")
	dir := t.TempDir()
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	files, _ := filepath.Glob(filepath.Join(here, "kernels", "*.cu"))
	for _, f := range files {
		fmt.Fprintf(&src, "#include %q\n", f)
	}
	fmt.Fprintf(&src, "#include %q\nconst gk_entry gk_table[] = {\n", filepath.Join(here, "emul", "launch.cpp"))
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range kernelSignatures() {
			if !yield(k) {
				return
			}
		}
	})
	for _, n := range names {
		fmt.Fprintf(&src, "    GK_ENTRY(%s),\n", n)
	}
	fmt.Fprintf(&src, "};\nconst int gk_table_len = %d;\n", len(names))
	reg := filepath.Join(dir, "registry.cpp")
	if err := os.WriteFile(reg, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "libgkemul.so")
	cmd := exec.Command("g++", "-std=c++20", "-O1", "-fPIC", "-shared", "-pthread", fmt.Sprintf("-DGK_WAVE=%d", WaveSize(v)),
		"-I", filepath.Join(here, "kernels"), "-include", filepath.Join(here, "emul", "emul.h"), reg, "-o", lib)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	d, err := openEmulator(lib)
	if err != nil {
		t.Fatal(err)
	}
	d.Vendor = v
	if err := kernels.Init(0, 0); err != nil {
		t.Fatal(err)
	}
	return d
}

// The embedded kernels themselves, run by the emulator through the device backend's launches,
// against the CPU backend: the same checks as TestDeviceMatchesCPU on small shapes, with waves of
// 32 lanes (NVIDIA) and 64 (AMD).
func TestEmulatedKernelsMatchCPU(t *testing.T) {
	testenv.Short(t, "compiles the kernels for the CPU emulator and runs them (two minutes)")
	for _, v := range []Vendor{VendorCUDA, VendorROCm} {
		t.Run(string(v), func(t *testing.T) {
			compareOps(t, emulatedDevice(t, v), opSizes{
				gemm: []struct{ M, N, K int }{{5, 70, 33}, {1, 40, 64}, {70, 9, 17}},
				T:    6, C: 40, V: 50, nh: 4, nkv: 2, hd: 16, B: 2, L: 20, docs: []int{8, 5, 7},
				capacity: 12, lens: []int32{3, 12, 7}, Vx: 300, adamN: 5000,
			})
		})
	}
}
