package gpu

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unsafe"
)

//go:embed kernels/gk_compat.h kernels/*.cu
var kernelFS embed.FS

// KernelSource is every kernel file (kernels/*.cu) in name order, joined into one program, and
// the compatibility header it includes.
func KernelSource() (program, compat string) {
	h, err := kernelFS.ReadFile("kernels/gk_compat.h")
	if err != nil {
		panic(err) // embedded at build time
	}
	entries, _ := kernelFS.ReadDir("kernels")
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".cu") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		src, _ := kernelFS.ReadFile("kernels/" + n)
		fmt.Fprintf(&b, "// ---- %s\n%s\n", n, src)
	}
	return b.String(), string(h)
}

// WaveSize is the number of lanes the kernels are compiled for on an architecture: 32 on NVIDIA,
// 64 on AMD (RDNA, gfx10 and later, is compiled with -mwavefrontsize64 to match).
func WaveSize(v Vendor) int {
	if v == VendorCUDA {
		return 32
	}
	return 64
}

// compileOptions are the compiler's options for arch.
func compileOptions(v Vendor, arch string) []string {
	opts := []string{fmt.Sprintf("-DGK_WAVE=%d", WaveSize(v)), "-std=c++17"}
	if v == VendorCUDA {
		return append(opts, "--gpu-architecture="+arch)
	}
	opts = append(opts, "-O3", "--gpu-architecture="+arch)
	if !strings.HasPrefix(arch, "gfx9") && !strings.HasPrefix(arch, "gfx8") {
		opts = append(opts, "-mwavefrontsize64")
	}
	return opts
}

// Compiled is a code object for one architecture: a cubin (NVIDIA) or an HSA code object (AMD).
type Compiled struct {
	Code      []byte
	CachePath string
	FromCache bool
}

// Compile returns the kernels compiled for arch ("sm_90", "gfx90a") by NVRTC or hipRTC, from the
// cache when the same source, options and compiler version were compiled before. A compile
// error is one line with the first error of the compiler's log.
func Compile(v Vendor, arch string) (Compiled, error) {
	lib := NVRTC
	if v == VendorROCm {
		lib = HIPRTC
	}
	if _, err := Load(lib); err != nil {
		return Compiled{}, err
	}
	program, compat := KernelSource()
	opts := compileOptions(v, arch)
	sum := sha256.New()
	for _, s := range append([]string{program, compat, libVersion(lib)}, opts...) {
		sum.Write([]byte(s))
		sum.Write([]byte{0})
	}
	path := filepath.Join(CacheDir(), fmt.Sprintf("%s-%s-%s.bin", v, arch, hex.EncodeToString(sum.Sum(nil))[:16]))
	if code, err := os.ReadFile(path); err == nil && len(code) > 0 {
		return Compiled{Code: code, CachePath: path, FromCache: true}, nil
	}
	code, err := rtcCompile(v, program, compat, opts)
	if err != nil {
		return Compiled{}, err
	}
	c := Compiled{Code: code, CachePath: path}
	if err := writeAtomic(path, code); err != nil {
		c.CachePath = "" // the cache is an optimization: a read-only home still runs
	}
	return c, nil
}

func writeAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}

func rtcCompile(v Vendor, program, compat string, opts []string) ([]byte, error) {
	csrc, cname := C.CString(program), C.CString("gorstar_kernels.cu")
	chdr, chname := C.CString(compat), C.CString("gk_compat.h")
	defer func() {
		for _, p := range []*C.char{csrc, cname, chdr, chname} {
			C.free(unsafe.Pointer(p))
		}
	}()
	hdrs := (**C.char)(C.malloc(C.size_t(2 * unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(hdrs))
	hs := unsafe.Slice(hdrs, 2)
	hs[0], hs[1] = chdr, chname
	copts := (**C.char)(C.malloc(C.size_t(len(opts)) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(copts))
	optv := unsafe.Slice(copts, len(opts))
	for i, o := range opts {
		optv[i] = C.CString(o)
		defer C.free(unsafe.Pointer(optv[i]))
	}
	name, compiler := "NVRTC", "nvrtc"
	if v == VendorROCm {
		name, compiler = "hipRTC", "hiprtc"
	}
	rtcErr := func(call string, r C.gcu_result) error {
		var s *C.char
		if v == VendorROCm {
			s = C.call_hiprtcGetErrorString(r)
		} else {
			s = C.call_nvrtcGetErrorString(r)
		}
		return fmt.Errorf("gpu: %s%s: %s", compiler, call, C.GoString(s))
	}
	var prog C.gnvrtc_program
	var r C.gcu_result
	if v == VendorROCm {
		r = C.call_hiprtcCreateProgram(&prog, csrc, cname, 1, &hs[0], &hs[1])
	} else {
		r = C.call_nvrtcCreateProgram(&prog, csrc, cname, 1, &hs[0], &hs[1])
	}
	if r != 0 {
		return nil, rtcErr("CreateProgram", r)
	}
	defer func() {
		if v == VendorROCm {
			C.call_hiprtcDestroyProgram(&prog)
		} else {
			C.call_nvrtcDestroyProgram(&prog)
		}
	}()
	if v == VendorROCm {
		r = C.call_hiprtcCompileProgram(prog, C.int(len(opts)), copts)
	} else {
		r = C.call_nvrtcCompileProgram(prog, C.int(len(opts)), copts)
	}
	if r != 0 {
		var n C.size_t
		var log string
		if v == VendorROCm {
			C.call_hiprtcGetProgramLogSize(prog, &n)
		} else {
			C.call_nvrtcGetProgramLogSize(prog, &n)
		}
		if n > 1 {
			buf := make([]byte, n)
			if v == VendorROCm {
				C.call_hiprtcGetProgramLog(prog, (*C.char)(unsafe.Pointer(&buf[0])))
			} else {
				C.call_nvrtcGetProgramLog(prog, (*C.char)(unsafe.Pointer(&buf[0])))
			}
			log = firstError(string(buf[:n-1]))
		}
		return nil, fmt.Errorf("gpu: %s could not compile the kernels for %s: %s", name, archOf(opts), log)
	}
	var n C.size_t
	if v == VendorROCm {
		r = C.call_hiprtcGetCodeSize(prog, &n)
	} else {
		r = C.call_nvrtcGetCUBINSize(prog, &n)
	}
	if r != 0 || n == 0 {
		return nil, rtcErr("GetCodeSize", r)
	}
	code := make([]byte, n)
	if v == VendorROCm {
		r = C.call_hiprtcGetCode(prog, (*C.char)(unsafe.Pointer(&code[0])))
	} else {
		r = C.call_nvrtcGetCUBIN(prog, (*C.char)(unsafe.Pointer(&code[0])))
	}
	if r != 0 {
		return nil, rtcErr("GetCode", r)
	}
	return code, nil
}

func archOf(opts []string) string {
	for _, o := range opts {
		if a, ok := strings.CutPrefix(o, "--gpu-architecture="); ok {
			return a
		}
	}
	return "?"
}

// firstError is the first line of a compiler log that says "error", else its first line.
func firstError(log string) string {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "error") {
			return strings.TrimSpace(line)
		}
	}
	return oneLine(log)
}
