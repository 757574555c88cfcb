//go:build !rocm

package kernels

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestROCmBuild proves the HIP backend compiles and links where hipcc is installed (no GPU is
// needed): it runs rocm/build.sh, then builds this package's test binary with -tags rocm.
func TestROCmBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the HIP kernels (about a minute); skipped with -short")
	}
	if _, err := exec.LookPath("hipcc"); err != nil {
		t.Skip("hipcc not installed (apt-get install hipcc): the rocm backend is not built")
	}
	build := exec.Command("sh", filepath.Join("rocm", "build.sh"))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("rocm/build.sh: %v\n%s", err, out)
	}
	bin := filepath.Join(t.TempDir(), "kernels_rocm.test")
	link := exec.Command("go", "test", "-tags", "rocm", "-c", "-o", bin, ".")
	link.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := link.CombinedOutput(); err != nil {
		t.Fatalf("go test -tags rocm -c: %v\n%s", err, out)
	}
}
