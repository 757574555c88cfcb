package kernels

/*
#cgo !darwin CFLAGS: -O3 -fopenmp
#cgo !darwin LDFLAGS: -fopenmp -lm
#cgo darwin CFLAGS: -O3
#cgo darwin LDFLAGS: -lm
*/
import "C"

// On macOS the kernels build with Apple's clang, which has no OpenMP: they run on one thread (cpu.h).
// For threads, give the compiler libomp through the environment (kernels/README.md, "macOS").

import "unsafe"

// Floats returns the buffer's float32 elements as a Go slice over the same memory on the CPU
// backend (nil on device backends, and for the zero or an int32 Buf). Writes through it are writes
// to the buffer.
func (b Buf) Floats() []float32 {
	if b.p == nil || b.dt != F32 {
		return nil
	}
	return unsafe.Slice((*float32)(b.p), b.n)
}

// Int32s is Floats for int32 buffers.
func (b Buf) Int32s() []int32 {
	if b.p == nil || b.dt != I32 {
		return nil
	}
	return unsafe.Slice((*int32)(b.p), b.n)
}

// decodeKeyTiles: the CPU decode kernel multiplies 8 keys at a time from transposed blocks, which
// a cache's key tiles hold ready instead of each step transposing every tile again.
const decodeKeyTiles = true
