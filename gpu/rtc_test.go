package gpu

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gorstar/internal/testenv"
)

// Every kernel name the backend launches (the "gk_..." strings of device_ops.go) is a kernel of
// the embedded source.
func TestKernelNamesInSource(t *testing.T) {
	program, compat := KernelSource()
	if !strings.Contains(compat, "GK_SHFL_XOR") {
		t.Fatal("compat header missing")
	}
	ops, err := os.ReadFile("device_ops.go")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`"(gk_[a-z0-9_]+)"`).FindAllStringSubmatch(string(ops), -1)
	if len(names) < 20 {
		t.Fatalf("found %d kernel names in device_ops.go", len(names))
	}
	for _, m := range names {
		name := m[1]
		if !strings.Contains(program, "GK_KERNEL") || !regexp.MustCompile(`(GK_KERNEL (__launch_bounds__\(\w+\) )?void |GK_GEMM\()`+name+`\b`).MatchString(program) {
			t.Errorf("kernel %s is not in kernels/*.cu", name)
		}
	}
}

// hipRTC compiles for any architecture without a GPU: the embedded kernels through the run-time
// path gorstar uses on an AMD GPU, then again from the cache.
func TestCompileHipRTC(t *testing.T) {
	testenv.Short(t, "compiles the kernels with hipRTC (about a minute)")
	if _, err := Load(HIPRTC); err != nil {
		testenv.Skip(t, "hipRTC", "not installed", "apt-get install hipcc")
	}
	t.Setenv(EnvCache, t.TempDir())
	c, err := Compile(VendorROCm, "gfx90a")
	if err != nil {
		t.Fatal(err)
	}
	if c.FromCache || len(c.Code) < 1000 || !bytes.HasPrefix(c.Code, []byte("\x7fELF")) && !bytes.HasPrefix(c.Code, []byte("__CLANG_OFFLOAD_BUNDLE__")) {
		t.Fatalf("compiled %d bytes, from cache %v, starting %q", len(c.Code), c.FromCache, c.Code[:min(len(c.Code), 24)])
	}
	again, err := Compile(VendorROCm, "gfx90a")
	if err != nil || !again.FromCache || !bytes.Equal(again.Code, c.Code) || again.CachePath != c.CachePath {
		t.Fatalf("second compile: from cache %v, err %v", again.FromCache, err)
	}
	if !strings.Contains(filepath.Base(c.CachePath), "rocm-gfx90a-") {
		t.Fatalf("cache file %s", c.CachePath)
	}
}

// offline compiles every kernel file with a vendor compiler: hipcc for gfx90a (Debian's hipcc
// package) and nvcc for sm_80 where installed, through the same compatibility header.
func offline(t *testing.T, compiler string, args ...string) {
	testenv.Short(t, "compiles the kernels with "+compiler)
	testenv.Command(t, compiler, map[string]string{"hipcc": "apt-get install hipcc", "nvcc": "install the CUDA toolkit"}[compiler])
	files, _ := filepath.Glob(filepath.Join("kernels", "*.cu"))
	dir := t.TempDir()
	for _, f := range files {
		cmd := exec.Command(compiler, append(args, "-c", f, "-o", filepath.Join(dir, filepath.Base(f)+".o"))...)
		cmd.Env = append(os.Environ(), "TMPDIR="+dir)
		if out, err := cmd.CombinedOutput(); err != nil || bytes.Contains(out, []byte("warning")) {
			t.Errorf("%s %s: %v\n%s", compiler, f, err, out)
		}
	}
}

func TestKernelsCompileHipcc(t *testing.T) {
	offline(t, "hipcc", "--offload-arch=gfx90a", "-O3", "-std=c++17", "-Wall", "-x", "hip")
}

func TestKernelsCompileNvcc(t *testing.T) {
	offline(t, "nvcc", "-arch=sm_80", "-O3", "-std=c++17", "-x", "cu")
}
