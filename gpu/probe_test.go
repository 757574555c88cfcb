package gpu

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestMain makes the test binary its own child probe: ProbeChild runs it with
// GORSTAR_GPU_PROBE_CHILD set (gorstar runs its hidden gpu-probe command instead).
func TestMain(m *testing.M) {
	if v := os.Getenv("GORSTAR_GPU_PROBE_CHILD"); v != "" {
		if err := ServeProbe(v, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func childProbe(t *testing.T, v Vendor, libDir string) VendorReport {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GORSTAR_GPU_PROBE_CHILD", string(v))
	t.Setenv(EnvCUDA, libDir)
	return ProbeChild(v, exe, "-test.run=^$")
}

// A driver that crashes in cuInit ends the child; the parent reports it in one line.
func TestProbeChildCrash(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"int cuInit(unsigned f) { abort(); }", "gpu: probing cuda crashed the probe process (SIGABRT: abort)"},
		{"int cuInit(unsigned f) { *(volatile int *)8 = 1; return 0; }", "gpu: probing cuda crashed the probe process (SIGSEGV: segmentation violation)"},
	} {
		dir := t.TempDir()
		fakeLibrary(t, dir, "libcuda.so.1", tableNames(t, "GK_CUDA_SYMS"), map[string]string{"cuInit": c.body})
		rep := childProbe(t, VendorCUDA, dir)
		if !strings.HasPrefix(rep.Error, c.want) || strings.Contains(rep.Error, "\n") || rep.Usable() {
			t.Fatalf("ProbeChild: %q\nwant %q...", rep.Error, c.want)
		}
	}
}

// A driver without devices: the child's report comes back whole, libraries included.
func TestProbeChildReport(t *testing.T) {
	dir := t.TempDir()
	fakeLibrary(t, dir, "libcuda.so.1", tableNames(t, "GK_CUDA_SYMS"), map[string]string{
		"cuDeviceGetCount": "int cuDeviceGetCount(int *n) { *n = 0; return 0; }",
	})
	fakeLibrary(t, dir, "libnvrtc.so.12", tableNames(t, "GK_NVRTC_SYMS"), map[string]string{
		"nvrtcVersion": "int nvrtcVersion(int *a, int *b) { *a = 12; *b = 4; return 0; }",
	})
	rep := childProbe(t, VendorCUDA, dir)
	if rep.Usable() || !strings.HasPrefix(rep.Error, "gpu: no CUDA device") {
		t.Fatalf("report error %q", rep.Error)
	}
	b, _ := json.Marshal(rep)
	if len(rep.Libraries) != 5 || !rep.Libraries[0].Found || rep.Libraries[0].Path != dir+"/libcuda.so.1" ||
		!rep.Libraries[1].Found || rep.Libraries[1].Version != "12.4" || rep.Libraries[2].Found {
		t.Fatalf("report %s", b)
	}
	if !strings.HasPrefix(rep.Libraries[2].Error, "gpu: cuBLAS not found (tried "+dir+"/libcublas.so.13") {
		t.Fatalf("cuBLAS: %q", rep.Libraries[2].Error)
	}
}
