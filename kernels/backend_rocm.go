//go:build rocm

package kernels

// The ROCm backend: the same header implemented in HIP under rocm/, built into a static library by
// rocm/build.sh (run it before `go build -tags rocm`). Debian's hipcc puts libamdhip64 on the
// default library path; an upstream ROCm install has it in /opt/rocm/lib.

/*
#cgo LDFLAGS: ${SRCDIR}/rocm/build/libgorstar_kernels_rocm.a -L/opt/rocm/lib -Wl,-rpath,/opt/rocm/lib -lamdhip64 -lstdc++ -lm
*/
import "C"

// Floats is nil on the ROCm backend: buffers live in GPU memory; use CopyTo and CopyFrom.
func (b Buf) Floats() []float32 { return nil }

// Int32s is nil on the ROCm backend.
func (b Buf) Int32s() []int32 { return nil }

// The ROCm backend has one SGEMM; these keep the shared tests building.
func sgemmKernels() []string { return []string{""} }

func useSGEMMKernel(name string) error { return nil }

// decodeKeyTiles: the HIP decode kernel reads each cache's key rows directly (one wavefront per
// query), so callers keep no key tiles.
const decodeKeyTiles = false
