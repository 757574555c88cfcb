//go:build !rocm

package kernels

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"gorstar/internal/testenv"
)

// TestROCmBuild proves the HIP backend compiles and links where hipcc is installed (no GPU is
// needed): it runs rocm/build.sh, then builds this package's test binary with -tags rocm.
func TestROCmBuild(t *testing.T) {
	testenv.Short(t, "builds the HIP kernels (about a minute)")
	testenv.Command(t, "hipcc", "apt-get install hipcc")
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
