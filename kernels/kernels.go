// Package kernels is gorstar's bridge to its numeric kernels: one C header (gorstar_kernels.h)
// implemented for the CPU (C + OpenMP), and a run-time Device backend (a GPU, package gpu) that
// every op dispatches to once UseDevice installed it.
//
// Go owns the buffers and decides the order of calls; every CPU op is one plain C function over
// raw pointers and sizes, and C never calls back into Go. Buffers live on the backend's device
// (host memory on the CPU). Conventions follow the header: row-major, weights [out, in] as in Hugging
// Face, backward functions ADD into the gradient buffers they are given, a zero Buf is a NULL
// pointer where the header allows one.
//
// Size checks: every function panics when a buffer is shorter than the sizes passed need, or has
// the wrong dtype. Longer buffers are fine (a workspace sized for the largest batch can be reused);
// Slice makes an exact view. A panic here is a programming error, not a user error.
//
// Threads: Init sets the thread count of every later call. The results are deterministic for a
// fixed thread count; most ops give the same bits for any thread count.
package kernels

/*
#include <stdlib.h>
#include "gorstar_kernels.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// DType is the element type of a Buf.
type DType uint8

const (
	F32  DType = iota // float32
	I32               // int32 (token ids, positions, targets)
	BF16              // bfloat16: the top 16 bits of a float32 (weights, GEMM operands)
)

func (d DType) String() string {
	switch d {
	case I32:
		return "int32"
	case BF16:
		return "bfloat16"
	}
	return "float32"
}

// Size is the bytes of one element.
func (d DType) Size() int {
	if d == BF16 {
		return 2
	}
	return 4
}

// Buf is a buffer on the backend's device: a pointer, a length in elements and a dtype. The zero
// value is the NULL pointer that optional arguments accept. Slice returns views that share memory;
// only a Buf returned by Alloc or AllocI32 may be freed.
type Buf struct {
	p    unsafe.Pointer // host memory (the CPU backend)
	d    uint64         // a Device's address (p is nil then)
	n    int
	dt   DType
	view bool
}

var threadCount = 1

// Init sets up the CPU kernels (device must be 0) and the thread count (≤ 0: all cores). Call it
// once, before any other function; a GPU is a Device installed with UseDevice.
func Init(device, threads int) error {
	if C.gk_init(C.int(device), C.int(threads)) != 0 {
		return fmt.Errorf("init kernels device %d: %s", device, C.GoString(C.gk_last_error()))
	}
	threadCount = threads
	if threads <= 0 {
		threadCount = int(C.gk_threads())
	}
	return nil
}

// Backend names the implementation in use, e.g. "cpu-avx2", or the installed Device's name
// ("cuda-sm_90", "rocm-gfx942").
func Backend() string {
	if dev != nil {
		return dev.Name()
	}
	return C.GoString(C.gk_backend_name())
}

// Threads returns the thread count set by Init.
func Threads() int { return threadCount }

func alloc(n int, dt DType) Buf {
	if n < 0 {
		panic(fmt.Sprintf("kernels: alloc of %d elements", n))
	}
	if dev != nil {
		b := dev.Alloc(n, dt)
		if b.d == 0 {
			deviceErr(fmt.Sprintf("alloc of %d %s elements", n, dt), dev.Synchronize())
			panic(fmt.Sprintf("kernels: alloc of %d %s elements on %s failed", n, dt, dev.Name()))
		}
		return b
	}
	p := C.gk_alloc(C.size_t(n) * C.size_t(dt.Size()))
	if p == nil {
		panic(fmt.Sprintf("kernels: alloc of %d elements (%d bytes): %s", n, dt.Size()*n, C.GoString(C.gk_last_error())))
	}
	return Buf{p: p, n: n, dt: dt}
}

// Alloc returns an uninitialized float32 buffer of n elements.
func Alloc(n int) Buf { return alloc(n, F32) }

// AllocI32 returns an uninitialized int32 buffer of n elements.
func AllocI32(n int) Buf { return alloc(n, I32) }

// Free releases a buffer from Alloc or AllocI32. Freeing the zero Buf does nothing; freeing a view panics.
func (b Buf) Free() {
	if b.IsNil() {
		return
	}
	if b.view {
		panic("kernels: Free of a view made by Slice")
	}
	if b.d != 0 {
		dev.Free(b)
		return
	}
	C.gk_free(b.p)
}

// Len is the length in elements.
func (b Buf) Len() int { return b.n }

// DType is the element type.
func (b Buf) DType() DType { return b.dt }

// IsNil reports whether b is the zero (NULL) buffer.
func (b Buf) IsNil() bool { return b.p == nil && b.d == 0 }

// Slice returns the view of n elements starting at off.
func (b Buf) Slice(off, n int) Buf {
	if off < 0 || n < 0 || off+n > b.n {
		panic(fmt.Sprintf("kernels: Slice(%d, %d) of a buffer of %d elements", off, n, b.n))
	}
	if b.d != 0 {
		return Buf{d: b.d + uint64(b.dt.Size()*off), n: n, dt: b.dt, view: true}
	}
	return Buf{p: unsafe.Add(b.p, b.dt.Size()*off), n: n, dt: b.dt, view: true}
}

// Zero sets every element to zero.
func (b Buf) Zero() {
	if b.d != 0 {
		dev.Zero(b)
		return
	}
	if b.n > 0 {
		C.gk_memset_zero(b.p, C.size_t(b.dt.Size()*b.n))
	}
}

func (b Buf) mustHost(op string, n int, dt DType) {
	if b.dt != dt {
		panic(fmt.Sprintf("kernels: %s on a %s buffer, want %s", op, b.dt, dt))
	}
	if n > b.n {
		panic(fmt.Sprintf("kernels: %s of %d elements into a buffer of %d", op, n, b.n))
	}
}

// CopyFrom copies src from host memory into the first len(src) elements.
func (b Buf) CopyFrom(src []float32) {
	b.mustHost("CopyFrom", len(src), F32)
	if b.d != 0 {
		dev.CopyFromF32(b, src)
		return
	}
	if len(src) > 0 {
		C.gk_copy_to_device(b.p, unsafe.Pointer(&src[0]), C.size_t(4*len(src)))
	}
}

// CopyTo copies the first len(dst) elements to host memory.
func (b Buf) CopyTo(dst []float32) {
	b.mustHost("CopyTo", len(dst), F32)
	if b.d != 0 {
		dev.CopyToF32(dst, b)
		return
	}
	if len(dst) > 0 {
		C.gk_copy_to_host(unsafe.Pointer(&dst[0]), b.p, C.size_t(4*len(dst)))
	}
}

// CopyFromI32 copies src from host memory into the first len(src) elements.
func (b Buf) CopyFromI32(src []int32) {
	b.mustHost("CopyFromI32", len(src), I32)
	if b.d != 0 {
		dev.CopyFromI32(b, src)
		return
	}
	if len(src) > 0 {
		C.gk_copy_to_device(b.p, unsafe.Pointer(&src[0]), C.size_t(4*len(src)))
	}
}

// CopyToI32 copies the first len(dst) elements to host memory.
func (b Buf) CopyToI32(dst []int32) {
	b.mustHost("CopyToI32", len(dst), I32)
	if b.d != 0 {
		dev.CopyToI32(dst, b)
		return
	}
	if len(dst) > 0 {
		C.gk_copy_to_host(unsafe.Pointer(&dst[0]), b.p, C.size_t(4*len(dst)))
	}
}

// Copy copies all of src into the start of dst, on the device.
func Copy(dst, src Buf) {
	if dst.n < src.n || dst.dt != src.dt {
		panic(fmt.Sprintf("kernels: Copy of %d %s into %d %s", src.n, src.dt, dst.n, dst.dt))
	}
	if dst.d != 0 || src.d != 0 {
		dev.Copy(dst, src)
		return
	}
	if src.n > 0 {
		C.gk_copy_device(dst.p, src.p, C.size_t(src.dt.Size()*src.n))
	}
}

// Synchronize waits for the device to finish queued work (a no-op on the CPU).
// A device's failure panics here.
func Synchronize() {
	if dev != nil {
		deviceErr("Synchronize", dev.Synchronize())
		return
	}
	C.gk_synchronize()
}
