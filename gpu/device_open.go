package gpu

/*
#include <stdlib.h>
#include <string.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"gorstar/kernels"
)

// Device is one GPU with gorstar's kernels loaded on it: buffers in its memory, and the ops of
// kernels/gorstar_kernels.h (the CPU backend's interface) over them. Ops are queued on the default
// stream; the first failure is kept (Err) and later calls do nothing, as gk_last_error on the CPU.
type Device struct {
	Vendor Vendor
	Info   DeviceInfo
	Notes  []string // warnings: vendor GEMM unusable, the kernel cache unwritable, ...
	Kernel Compiled // the code object in use

	ctx    C.gcu_context // CUDA: the device's primary context
	module C.gcu_module
	fnMu   sync.Mutex
	fns    map[string]C.gcu_function
	blas   C.gblas_handle // nil: gorstar's own GEMM only
	gemmMu sync.Mutex
	gemm   map[gemmShape]bool // per shape: true when the vendor GEMM won the probe
	errMu  sync.Mutex
	err    error
	// dry: no GPU behind it (tests): launches are checked against the kernels' signatures and
	// dropped, allocations are addresses that are never used.
	dry         bool
	dryNext     uint64
	dryLaunches []string
	// emu: the tests' CPU emulator of the kernels (gpu/emul) runs the launches; buffers are host
	// memory.
	emu unsafe.Pointer
	// pool: freed buffers kept for the next Alloc of their size class (pool.go).
	pool bufPool
}

// Open initializes device index of vendor v in this process, compiles (or takes from the cache)
// the kernels for its architecture and loads them, and loads the vendor GEMM where present
// (GORSTAR_VENDOR_GEMM=0 keeps gorstar's own). Callers that must survive a broken driver probe
// it in a child first (ProbeIsolated).
func Open(v Vendor, index int) (*Device, error) {
	rt, err := Probe(v)
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= len(rt.Devices) {
		return nil, fmt.Errorf("gpu: %s:%d not found: %d visible", v, index, len(rt.Devices))
	}
	d := &Device{Vendor: v, Info: rt.Devices[index], fns: map[string]C.gcu_function{}, gemm: map[gemmShape]bool{}}
	if d.Info.Arch == "" {
		return nil, fmt.Errorf("gpu: %s:%d: its architecture is unknown (no /sys/class/kfd topology?)", v, index)
	}
	if v == VendorCUDA {
		var dev C.gcu_device
		if r := C.call_cuDeviceGet(&dev, C.int(index)); r != 0 {
			return nil, cuError("cuDeviceGet", r)
		}
		if r := C.call_cuDevicePrimaryCtxRetain(&d.ctx, dev); r != 0 {
			return nil, cuError("cuDevicePrimaryCtxRetain", r)
		}
	}
	if err := d.bind(); err != nil {
		return nil, err
	}
	d.Kernel, err = Compile(v, d.Info.Arch)
	if err != nil {
		return nil, err
	}
	if d.Kernel.CachePath == "" {
		d.Notes = append(d.Notes, "the kernel cache "+CacheDir()+" is not writable: the kernels are compiled on every start")
	}
	image := C.CBytes(d.Kernel.Code)
	defer C.free(image)
	if v == VendorCUDA {
		if r := C.call_cuModuleLoadData(&d.module, image); r != 0 {
			return nil, cuError("cuModuleLoadData", r)
		}
	} else if r := C.call_hipModuleLoadData(&d.module, image); r != 0 {
		return nil, hipError("hipModuleLoadData", r)
	}
	if os.Getenv("GORSTAR_VENDOR_GEMM") != "0" {
		d.openBLAS()
	}
	return d, nil
}

// openBLAS creates a cuBLAS or rocBLAS handle; without one the own GEMM runs, with a note.
func (d *Device) openBLAS() {
	lib := CUBLAS
	if d.Vendor == VendorROCm {
		lib = ROCBLAS
	}
	if d.Vendor == VendorCUDA {
		Load(CUBLASLt) // cuBLAS needs it beside it; loaded first so a wheel directory resolves
	}
	if _, err := Load(lib); err != nil {
		d.Notes = append(d.Notes, err.Error()+": gorstar's own GEMM runs")
		return
	}
	var r C.gcu_result
	if d.Vendor == VendorCUDA {
		r = C.call_cublasCreate_v2(&d.blas)
	} else {
		r = C.call_rocblas_create_handle(&d.blas)
	}
	if r != 0 {
		d.blas = nil
		d.Notes = append(d.Notes, fmt.Sprintf("gpu: %s: creating a handle failed (status %d): gorstar's own GEMM runs", lib, int(r)))
	}
}

// bind makes the device current on the calling OS thread (Go moves goroutines between threads;
// a CUDA context and a HIP device are per thread).
func (d *Device) bind() error {
	if d.dry || d.emu != nil {
		return nil
	}
	if d.Vendor == VendorCUDA {
		if r := C.call_cuCtxSetCurrent(d.ctx); r != 0 {
			return cuError("cuCtxSetCurrent", r)
		}
		return nil
	}
	if r := C.call_hipSetDevice(C.int(d.Info.Index)); r != 0 {
		return hipError("hipSetDevice", r)
	}
	return nil
}

// Name is the backend's name in the style of kernels.Backend: "cuda-sm_90", "rocm-gfx942".
func (d *Device) Name() string { return string(d.Vendor) + "-" + d.Info.Arch }

// Err is the first failure of any call so far (nil if none).
func (d *Device) Err() error {
	d.errMu.Lock()
	defer d.errMu.Unlock()
	return d.err
}

func (d *Device) fail(err error) {
	d.errMu.Lock()
	if d.err == nil {
		d.err = err
	}
	d.errMu.Unlock()
}

func (d *Device) check(call string, r C.gcu_result) bool {
	if r == 0 {
		return true
	}
	if d.Vendor == VendorCUDA {
		d.fail(cuError(call, r))
	} else {
		d.fail(hipError(call, r))
	}
	return false
}

// Synchronize waits for queued work and returns Err.
func (d *Device) Synchronize() error {
	if d.Err() == nil && !d.dry && d.emu == nil && d.bind() == nil {
		if d.Vendor == VendorCUDA {
			d.check("cuCtxSynchronize", C.call_cuCtxSynchronize())
		} else {
			d.check("hipDeviceSynchronize", C.call_hipDeviceSynchronize())
		}
	}
	return d.Err()
}

// Buf is a buffer in the device's memory: an address, a length in elements and a dtype (the
// kernels package's). The zero Buf is the NULL that optional arguments accept.
type Buf struct {
	p  uint64
	n  int
	dt kernels.DType
}

func (b Buf) Len() int               { return b.n }
func (b Buf) DType() kernels.DType   { return b.dt }
func (b Buf) IsNil() bool            { return b.p == 0 }
func (b Buf) bytes(n int) C.size_t   { return C.size_t(n * b.dt.Size()) }
func (b Buf) ptr() unsafe.Pointer    { return C.gk_ptr(C.gcu_ptr(b.p)) }
func (b Buf) cptr() C.gcu_ptr        { return C.gcu_ptr(b.p) }
func (b Buf) at(off int) uint64      { return b.p + uint64(off*b.dt.Size()) }
func devPtr(p unsafe.Pointer) uint64 { return uint64(uintptr(p)) }

// Slice is the view of n elements from off.
func (b Buf) Slice(off, n int) Buf {
	if off < 0 || n < 0 || off+n > b.n {
		panic(fmt.Sprintf("gpu: Slice(%d, %d) of a buffer of %d elements", off, n, b.n))
	}
	return Buf{p: b.at(off), n: n, dt: b.dt}
}

// Alloc returns an uninitialized buffer of n elements of dt, or the zero Buf and Err set. Memory
// comes from the cache of freed buffers when it holds one of the size class (pool.go); when the
// device is out of memory, the cache goes back to the driver and the allocation is tried again.
func (d *Device) Alloc(n int, dt kernels.DType) Buf {
	if d.Err() != nil || d.bind() != nil {
		return Buf{}
	}
	bytes := poolClass(n * dt.Size())
	if d.dry {
		d.dryNext += (uint64(bytes) + 255) / 256 * 256
		return Buf{p: 1<<40 + d.dryNext, n: n, dt: dt}
	}
	if p, ok := d.pool.take(bytes); ok {
		return Buf{p: p, n: n, dt: dt}
	}
	p, r := d.rawAlloc(bytes)
	if r != 0 && d.PoolStats().CachedBytes > 0 {
		d.releaseCached()
		p, r = d.rawAlloc(bytes)
	}
	call := "cuMemAlloc"
	if d.Vendor != VendorCUDA {
		call = "hipMalloc"
	}
	if !d.check(fmt.Sprintf("%s %d bytes", call, bytes), r) {
		return Buf{}
	}
	return Buf{p: p, n: n, dt: dt}
}

// rawAlloc asks the driver (or the emulator's host memory) for bytes.
func (d *Device) rawAlloc(bytes int) (uint64, C.gcu_result) {
	if d.emu != nil {
		p := C.calloc(1, C.size_t(bytes))
		if p == nil {
			return 0, 2 // CUDA_ERROR_OUT_OF_MEMORY
		}
		return devPtr(p), 0
	}
	if d.Vendor == VendorCUDA {
		var p C.gcu_ptr
		r := C.call_cuMemAlloc_v2(&p, C.size_t(bytes))
		return uint64(p), r
	}
	var p unsafe.Pointer
	r := C.call_hipMalloc(&p, C.size_t(bytes))
	return devPtr(p), r
}

// Free returns a buffer from Alloc to the cache of its size class.
func (d *Device) Free(b Buf) {
	if b.p == 0 || d.dry {
		return
	}
	d.pool.put(poolClass(b.n*b.dt.Size()), b.p)
}

// releaseCached gives every cached buffer back to the driver.
func (d *Device) releaseCached() {
	if d.bind() != nil {
		return
	}
	for _, p := range d.pool.drain() {
		b := Buf{p: p}
		switch {
		case d.emu != nil:
			C.free(b.ptr())
		case d.Vendor == VendorCUDA:
			d.check("cuMemFree", C.call_cuMemFree_v2(b.cptr()))
		default:
			d.check("hipFree", C.call_hipFree(b.ptr()))
		}
	}
}

// Zero sets every element to zero.
func (d *Device) Zero(b Buf) {
	if b.n == 0 || d.dry || d.Err() != nil || d.bind() != nil {
		return
	}
	if d.emu != nil {
		C.memset(b.ptr(), 0, b.bytes(b.n))
		return
	}
	if d.Vendor == VendorCUDA {
		d.check("cuMemsetD8", C.call_cuMemsetD8_v2(b.cptr(), 0, b.bytes(b.n)))
	} else {
		d.check("hipMemset", C.call_hipMemset(b.ptr(), 0, b.bytes(b.n)))
	}
}

const (
	hipMemcpyHostToDevice   = 1
	hipMemcpyDeviceToHost   = 2
	hipMemcpyDeviceToDevice = 3
)

// upload copies n elements of host memory at src into b.
func (d *Device) upload(b Buf, src unsafe.Pointer, n int, dt kernels.DType) {
	if n == 0 || d.Err() != nil || d.bind() != nil {
		return
	}
	if b.dt != dt || n > b.n {
		panic(fmt.Sprintf("gpu: copy of %d %s into %d %s", n, dt, b.n, b.dt))
	}
	if d.dry {
		return
	}
	d.copyIn(b, src, b.bytes(n))
}

func (d *Device) download(dst unsafe.Pointer, b Buf, n int, dt kernels.DType) {
	if n == 0 || d.Err() != nil || d.bind() != nil {
		return
	}
	if b.dt != dt || n > b.n {
		panic(fmt.Sprintf("gpu: copy of %d %s from %d %s", n, dt, b.n, b.dt))
	}
	if d.dry {
		return
	}
	d.copyOut(dst, b, b.bytes(n))
}

// uploadBytes and downloadBytes copy raw bytes (the collectives' staging); b holds at least
// bytes bytes.
func (d *Device) uploadBytes(b Buf, src unsafe.Pointer, bytes int) {
	if bytes > b.n*b.dt.Size() {
		panic(fmt.Sprintf("gpu: copy of %d bytes into %d", bytes, b.n*b.dt.Size()))
	}
	if bytes > 0 && !d.dry && d.Err() == nil && d.bind() == nil {
		d.copyIn(b, src, C.size_t(bytes))
	}
}

func (d *Device) downloadBytes(dst unsafe.Pointer, b Buf, bytes int) {
	if bytes > b.n*b.dt.Size() {
		panic(fmt.Sprintf("gpu: copy of %d bytes from %d", bytes, b.n*b.dt.Size()))
	}
	if bytes > 0 && !d.dry && d.Err() == nil && d.bind() == nil {
		d.copyOut(dst, b, C.size_t(bytes))
	}
}

func (d *Device) copyIn(b Buf, src unsafe.Pointer, bytes C.size_t) {
	if d.emu != nil {
		C.memmove(b.ptr(), src, bytes)
		return
	}
	if d.Vendor == VendorCUDA {
		d.check("cuMemcpyHtoD", C.call_cuMemcpyHtoD_v2(b.cptr(), src, bytes))
	} else {
		d.check("hipMemcpy to device", C.call_hipMemcpy(b.ptr(), src, bytes, hipMemcpyHostToDevice))
	}
}

func (d *Device) copyOut(dst unsafe.Pointer, b Buf, bytes C.size_t) {
	if d.emu != nil {
		C.memmove(dst, b.ptr(), bytes)
		return
	}
	if d.Vendor == VendorCUDA {
		d.check("cuMemcpyDtoH", C.call_cuMemcpyDtoH_v2(dst, b.cptr(), bytes))
	} else {
		d.check("hipMemcpy to host", C.call_hipMemcpy(dst, b.ptr(), bytes, hipMemcpyDeviceToHost))
	}
}

// CopyFrom and CopyTo move float32 values between host and device; the I32 and BF16 forms
// likewise for int32 and bfloat16 bits.
func (d *Device) CopyFrom(b Buf, src []float32) {
	if len(src) > 0 {
		d.upload(b, unsafe.Pointer(&src[0]), len(src), kernels.F32)
	}
}

func (d *Device) CopyTo(dst []float32, b Buf) {
	if len(dst) > 0 {
		d.download(unsafe.Pointer(&dst[0]), b, len(dst), kernels.F32)
	}
}

func (d *Device) CopyFromI32(b Buf, src []int32) {
	if len(src) > 0 {
		d.upload(b, unsafe.Pointer(&src[0]), len(src), kernels.I32)
	}
}

func (d *Device) CopyToI32(dst []int32, b Buf) {
	if len(dst) > 0 {
		d.download(unsafe.Pointer(&dst[0]), b, len(dst), kernels.I32)
	}
}

func (d *Device) CopyFromBF16(b Buf, src []uint16) {
	if len(src) > 0 {
		d.upload(b, unsafe.Pointer(&src[0]), len(src), kernels.BF16)
	}
}

func (d *Device) CopyToBF16(dst []uint16, b Buf) {
	if len(dst) > 0 {
		d.download(unsafe.Pointer(&dst[0]), b, len(dst), kernels.BF16)
	}
}

// Copy copies all of src into the start of dst, on the device.
func (d *Device) Copy(dst, src Buf) {
	if src.n == 0 || d.Err() != nil || d.bind() != nil {
		return
	}
	if dst.n < src.n || dst.dt != src.dt {
		panic(fmt.Sprintf("gpu: Copy of %d %s into %d %s", src.n, src.dt, dst.n, dst.dt))
	}
	if d.dry {
		return
	}
	if d.emu != nil {
		C.memmove(dst.ptr(), src.ptr(), src.bytes(src.n))
		return
	}
	if d.Vendor == VendorCUDA {
		d.check("cuMemcpyDtoD", C.call_cuMemcpyDtoD_v2(dst.cptr(), src.cptr(), src.bytes(src.n)))
	} else {
		d.check("hipMemcpy on device", C.call_hipMemcpy(dst.ptr(), src.ptr(), src.bytes(src.n), hipMemcpyDeviceToDevice))
	}
}

// size is an element count passed to a kernel as gk_size (unsigned long long).
type size uint64

// launch runs kernel name on a grid of gx x gy blocks of block threads. Arguments: Buf (its
// address; the zero Buf is NULL), uint64 (an address), int (as int), float32, size.
func (d *Device) launch(name string, gx, gy, block int, args ...any) {
	if gx == 0 || gy == 0 || d.Err() != nil || d.bind() != nil {
		return
	}
	checkLaunch(name, args)
	if d.dry {
		d.dryLaunches = append(d.dryLaunches, name)
		return
	}
	var f C.gcu_function
	if d.emu == nil {
		d.fnMu.Lock()
		defer d.fnMu.Unlock()
		var ok bool
		f, ok = d.fns[name]
		if !ok {
			cname := C.CString(name)
			var r C.gcu_result
			if d.Vendor == VendorCUDA {
				r = C.call_cuModuleGetFunction(&f, d.module, cname)
			} else {
				r = C.call_hipModuleGetFunction(&f, d.module, cname)
			}
			C.free(unsafe.Pointer(cname))
			if !d.check("kernel "+name, r) {
				return
			}
			d.fns[name] = f
		}
	}
	var buf [256]byte
	var offs [32]C.int
	off := 0
	put := func(i int, v uint64, n int) {
		off = (off + n - 1) / n * n
		offs[i] = C.int(off)
		for k := 0; k < n; k++ {
			buf[off+k] = byte(v >> (8 * k))
		}
		off += n
	}
	for i, a := range args {
		switch a := a.(type) {
		case Buf:
			put(i, a.p, 8)
		case uint64:
			put(i, a, 8)
		case size:
			put(i, uint64(a), 8)
		case int:
			put(i, uint64(uint32(int32(a))), 4)
		case float32:
			put(i, uint64(math32bits(a)), 4)
		default:
			panic(fmt.Sprintf("gpu: launch %s: argument %d of type %T", name, i, a))
		}
	}
	argp := (*C.char)(unsafe.Pointer(&buf[0]))
	if d.emu != nil {
		cname := C.CString(name)
		defer C.free(unsafe.Pointer(cname))
		d.check("emulated "+name, C.gk_call_emul(d.emu, cname, C.uint(gx), C.uint(gy), C.uint(block), argp, &offs[0], C.int(len(args))))
		return
	}
	if d.Vendor == VendorCUDA {
		d.check("launch "+name, C.gk_launch_cuda(f, C.uint(gx), C.uint(gy), 1, C.uint(block), 0, argp, &offs[0], C.int(len(args))))
	} else {
		d.check("launch "+name, C.gk_launch_hip(f, C.uint(gx), C.uint(gy), 1, C.uint(block), 0, argp, &offs[0], C.int(len(args))))
	}
}

func blocks(n, threads int) int { return (n + threads - 1) / threads }
