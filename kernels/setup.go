package kernels

import (
	"fmt"
	"strings"

	"gorstar/internal/usererr"
)

// Setup initializes the kernels for a run on a device of kind "cpu" or "rocm" (index: the GPU
// among HIP_VISIBLE_DEVICES; 0 on the CPU) with threads threads (≤ 0: all cores). It is Init plus
// the check every command and stage needs first: the device kind must be the one this binary's
// kernels were built for (-tags rocm or not). A mismatch or a failed Init is a user error.
func Setup(kind string, index, threads int) error {
	onGPU := strings.HasPrefix(Backend(), "rocm")
	switch {
	case kind == "rocm" && !onGPU:
		return usererr.New("this binary's kernels are %s; build with `go build -tags rocm` (see kernels/README.md)", Backend())
	case kind == "cpu" && onGPU:
		return usererr.New("this binary was built with -tags rocm; use a rocm[:N] device or a build without the tag")
	case kind != "cpu" && kind != "rocm":
		return fmt.Errorf("kernels: unknown device kind %q (cpu or rocm)", kind)
	}
	if err := Init(index, threads); err != nil {
		return usererr.New("%v", err)
	}
	return nil
}
