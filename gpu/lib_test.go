package gpu

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gorstar/internal/testenv"
)

// useSearch points the loader at dir only (no system names, no fallbacks) for one test.
func useSearch(t *testing.T, dir string) {
	t.Helper()
	reset := func() {
		for i := range loadStates {
			loadStates[i] = loadState{}
		}
	}
	reset()
	searchFor = func(Vendor) Search { return Search{Dirs: []string{dir}} }
	t.Cleanup(func() { searchFor = DefaultSearch; reset() })
}

// tableNames reads the symbols of one of shim.h's lists (GK_CUDA_SYMS, ...).
func tableNames(t *testing.T, list string) []string {
	t.Helper()
	b, err := os.ReadFile("shim.h")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "#define "+list+"(X)")
	if i < 0 {
		t.Fatalf("shim.h has no %s", list)
	}
	s = s[i:]
	s = s[:strings.Index(s, "\n\n")]
	var names []string
	for _, m := range regexp.MustCompile(`X\([^,]+, (\w+),`).FindAllStringSubmatch(s, -1) {
		names = append(names, m[1])
	}
	return names
}

// fakeLibrary compiles a shared library named file into dir that defines names (each returning
// 0, unless bodies gives its definition), as the real library's soname would be found.
func fakeLibrary(t *testing.T, dir, file string, names []string, bodies map[string]string) {
	t.Helper()
	testenv.Command(t, "gcc", "apt-get install gcc")
	var src strings.Builder
	src.WriteString("#include <stdlib.h>\n")
	for _, n := range names {
		body, ok := bodies[n]
		switch {
		case body == "-":
		case ok:
			src.WriteString(body + "\n")
		default:
			src.WriteString("int " + n + "() { return 0; }\n")
		}
	}
	c := filepath.Join(dir, file+".c")
	if err := os.WriteFile(c, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", filepath.Join(dir, file), c).CombinedOutput()
	if err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
}

func TestLibraryAbsent(t *testing.T) {
	dir := t.TempDir()
	useSearch(t, dir)
	_, err := Load(CUDA)
	want := "gpu: libcuda not found (tried " + dir + "/libcuda.so.1, " + dir + "/libcuda.so; set GORSTAR_CUDA_LIBS to its directory)"
	if err == nil || err.Error() != want {
		t.Fatalf("Load(CUDA) = %v\nwant %s", err, want)
	}
	if _, err := Probe(VendorROCm); err == nil || !strings.HasPrefix(err.Error(), "gpu: HIP not found (tried "+dir+"/libamdhip64.so.6") {
		t.Fatalf("Probe(rocm) = %v", err)
	}
}

func TestLibrarySymbolMissing(t *testing.T) {
	dir := t.TempDir()
	useSearch(t, dir)
	names := tableNames(t, "GK_CUDA_SYMS")
	fakeLibrary(t, dir, "libcuda.so.1", names, map[string]string{"cuMemAlloc_v2": "-"})
	_, err := Load(CUDA)
	want := "gpu: libcuda: " + dir + "/libcuda.so.1 has no symbol cuMemAlloc_v2 (not a usable libcuda library)"
	if err == nil || err.Error() != want {
		t.Fatalf("Load(CUDA) = %v\nwant %s", err, want)
	}
}

func TestLibraryNotLoadable(t *testing.T) {
	dir := t.TempDir()
	useSearch(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "libcuda.so.1"), []byte("not an ELF file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(CUDA)
	prefix := "gpu: libcuda: " + dir + "/libcuda.so.1 cannot be loaded: "
	if err == nil || !strings.HasPrefix(err.Error(), prefix) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Load(CUDA) = %v\nwant %s...", err, prefix)
	}
}

// A driver library that loads but finds no GPU: cuInit's error, by its name and text.
func TestProbeNoDevice(t *testing.T) {
	names := tableNames(t, "GK_CUDA_SYMS")
	errorNames := `int cuGetErrorName(int e, const char **s) { *s = e == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN"; return 0; }
int cuGetErrorString(int e, const char **s) { *s = e == 100 ? "no CUDA-capable device is detected" : "unknown error"; return 0; }`
	t.Run("cuInit fails", func(t *testing.T) {
		dir := t.TempDir()
		useSearch(t, dir)
		fakeLibrary(t, dir, "libcuda.so.1", names, map[string]string{
			"cuInit":           "int cuInit(unsigned f) { return 100; }",
			"cuGetErrorName":   errorNames,
			"cuGetErrorString": "",
		})
		_, err := Probe(VendorCUDA)
		want := "gpu: cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"
		if err == nil || err.Error() != want {
			t.Fatalf("Probe = %v\nwant %s", err, want)
		}
	})
	t.Run("zero devices", func(t *testing.T) {
		dir := t.TempDir()
		useSearch(t, dir)
		t.Setenv("CUDA_VISIBLE_DEVICES", "")
		fakeLibrary(t, dir, "libcuda.so.1", names, map[string]string{
			"cuDeviceGetCount": "int cuDeviceGetCount(int *n) { *n = 0; return 0; }",
		})
		_, err := Probe(VendorCUDA)
		want := `gpu: no CUDA device (the driver sees none; CUDA_VISIBLE_DEVICES="")`
		if err == nil || err.Error() != want {
			t.Fatalf("Probe = %v\nwant %s", err, want)
		}
	})
	t.Run("two devices", func(t *testing.T) {
		dir := t.TempDir()
		useSearch(t, dir)
		fakeLibrary(t, dir, "libcuda.so.1", names, map[string]string{
			"cuDeviceGetCount":     "int cuDeviceGetCount(int *n) { *n = 2; return 0; }",
			"cuDriverGetVersion":   "int cuDriverGetVersion(int *v) { *v = 12040; return 0; }",
			"cuDeviceGet":          "int cuDeviceGet(int *d, int i) { *d = i; return 0; }",
			"cuDeviceGetAttribute": "int cuDeviceGetAttribute(int *v, int a, int d) { *v = a == 75 ? 9 : 0; return 0; }",
			"cuDeviceGetName":      `int cuDeviceGetName(char *s, int n, int d) { s[0] = 'G'; s[1] = '0' + d; s[2] = 0; return 0; }`,
		})
		rt, err := Probe(VendorCUDA)
		if err != nil {
			t.Fatal(err)
		}
		if rt.Driver != "CUDA 12.4" || len(rt.Devices) != 2 || rt.Devices[1].Name != "G1" || rt.Devices[1].Arch != "sm_90" {
			t.Fatalf("Probe = %+v", rt)
		}
	})
}

// The real HIP runtime where it is installed (Debian's hipcc brings libamdhip64): without an AMD
// GPU, initializing it is a one-line error.
func TestProbeHIPWithoutGPU(t *testing.T) {
	if _, err := os.Stat("/dev/kfd"); err == nil {
		t.Skip("this machine has an AMD GPU driver (/dev/kfd)")
	}
	rt, err := Probe(VendorROCm)
	if err != nil && strings.Contains(err.Error(), "HIP not found") {
		testenv.Skip(t, "libamdhip64", "not installed", "apt-get install hipcc")
	}
	if err == nil {
		t.Fatalf("Probe(rocm) without /dev/kfd found %+v", rt)
	}
	if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "gpu: ") {
		t.Fatalf("error is not one line: %q", err)
	}
	t.Logf("%s (%s)", err, rt.Library)
}

func TestGfxName(t *testing.T) {
	for v, want := range map[int]string{90010: "gfx90a", 90402: "gfx942", 110000: "gfx1100", 90008: "gfx908", 100300: "gfx1030"} {
		if got := GfxName(v); got != want {
			t.Errorf("GfxName(%d) = %s, want %s", v, got, want)
		}
	}
}

// pip's CUDA wheels: each library is looked for in its own wheel's lib directory (NVRTC in
// nvidia/cuda_nvrtc/lib, not in nvidia/cublas/lib), after the environment's directories.
func TestSearchWheelDirs(t *testing.T) {
	site := t.TempDir()
	cublas := filepath.Join(site, "nvidia", "cublas", "lib")
	nvrtc := filepath.Join(site, "nvidia", "cuda_nvrtc", "lib")
	for _, d := range []string{cublas, nvrtc} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := Search{Dirs: []string{"/env"}, Fallback: []string{cublas, nvrtc, "/usr/local/cuda/lib64"}}
	got := s.candidates(NVRTC)
	if got[0] != "/env/libnvrtc.so.13" || slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, cublas) }) ||
		!slices.Contains(got, filepath.Join(nvrtc, "libnvrtc.so.12")) || !slices.Contains(got, "/usr/local/cuda/lib64/libnvrtc.so.12") {
		t.Fatalf("NVRTC candidates %v", got)
	}
	fakeLibrary(t, cublas, "libcublas.so.12", tableNames(t, "GK_CUBLAS_SYMS"), nil)
	reset := func() {
		for i := range loadStates {
			loadStates[i] = loadState{}
		}
	}
	reset()
	searchFor = func(Vendor) Search { return Search{Fallback: []string{nvrtc, cublas}} }
	t.Cleanup(func() { searchFor = DefaultSearch; reset() })
	l, err := Load(CUBLAS)
	if err != nil || l.Path != filepath.Join(cublas, "libcublas.so.12") {
		t.Fatalf("Load(cuBLAS) = %+v, %v", l, err)
	}
	t.Setenv(EnvCUDA, "/a:/b")
	if d := DefaultSearch(VendorCUDA); !slices.Equal(d.Dirs, []string{"/a", "/b"}) || !d.System {
		t.Fatalf("DefaultSearch: %+v", d)
	}
}
