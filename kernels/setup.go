package kernels

import (
	"fmt"
	"strings"

	"gorstar/internal/usererr"
)

// Setup initializes the kernels for a run on a device of kind "cpu", "cuda" or "rocm" with threads
// host threads (≤ 0: all cores). It is Init plus the check every command and stage needs first: a
// GPU kind needs its Device installed (UseDevice; the command opens it with package gpu), the CPU
// none. A mismatch or a failed Init is a user error.
func Setup(kind string, index, threads int) error {
	switch {
	case kind != "cpu" && kind != "cuda" && kind != "rocm":
		return fmt.Errorf("kernels: unknown device kind %q (cpu, cuda or rocm)", kind)
	case kind == "cpu" && dev != nil:
		return usererr.New("device cpu, but the kernels run on %s", dev.Name())
	case kind != "cpu" && (dev == nil || !strings.HasPrefix(dev.Name(), kind+"-")):
		return usererr.New("device %s:%d is not open: the kernels run on %s", kind, index, Backend())
	}
	if err := Init(0, threads); err != nil {
		return usererr.New("%v", err)
	}
	return nil
}
