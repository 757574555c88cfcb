package gpu

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"
)

// Lib is one of the GPU libraries gorstar loads at run time.
type Lib int

// The libraries, in shim.h's order.
const (
	CUDA      Lib = C.GK_LIB_CUDA      // the NVIDIA driver API (libcuda)
	NVRTC     Lib = C.GK_LIB_NVRTC     // NVIDIA's run-time compiler
	CUBLAS    Lib = C.GK_LIB_CUBLAS    // NVIDIA's BLAS
	CUBLASLt  Lib = C.GK_LIB_CUBLASLT  // cuBLAS's matmul library (cuBLAS loads it itself)
	HIP       Lib = C.GK_LIB_HIP       // AMD's HIP runtime (libamdhip64)
	HIPRTC    Lib = C.GK_LIB_HIPRTC    // AMD's run-time compiler (inside libamdhip64 before ROCm 5.3)
	ROCBLAS   Lib = C.GK_LIB_ROCBLAS   // AMD's BLAS
	HIPBLASLt Lib = C.GK_LIB_HIPBLASLT // AMD's matmul library
	NCCL      Lib = C.GK_LIB_NCCL      // NVIDIA's collectives
	RCCL      Lib = C.GK_LIB_RCCL      // AMD's port of NCCL
	numLibs       = int(C.GK_LIB_COUNT)
)

// Vendor is "cuda" (NVIDIA) or "rocm" (AMD).
type Vendor string

const (
	VendorCUDA Vendor = "cuda"
	VendorROCm Vendor = "rocm"
)

type libInfo struct {
	name    string   // as in messages
	vendor  Vendor   // whose search path applies
	files   []string // file names, newest soname first
	wheel   string   // the Python wheel directory under site-packages/nvidia that carries it
	purpose string   // what is missing without it
}

var libs = [numLibs]libInfo{
	CUDA: {"libcuda", VendorCUDA, []string{"libcuda.so.1", "libcuda.so"}, "",
		"NVIDIA GPUs (the driver: devices, memory, kernel launches)"},
	NVRTC: {"NVRTC", VendorCUDA, []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}, "cuda_nvrtc",
		"compiling gorstar's kernels for an NVIDIA GPU"},
	CUBLAS: {"cuBLAS", VendorCUDA, []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}, "cublas",
		"vendor GEMM on NVIDIA (gorstar's own GEMM kernel is used instead)"},
	CUBLASLt: {"cuBLASLt", VendorCUDA, []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", "libcublasLt.so"}, "cublas",
		"cuBLAS (it loads cuBLASLt for its matmuls)"},
	HIP: {"HIP", VendorROCm, []string{"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"}, "",
		"AMD GPUs (the HIP runtime: devices, memory, kernel launches)"},
	HIPRTC: {"hipRTC", VendorROCm, []string{"libhiprtc.so.6", "libhiprtc.so.5", "libhiprtc.so", "libamdhip64.so.5"}, "",
		"compiling gorstar's kernels for an AMD GPU"},
	ROCBLAS: {"rocBLAS", VendorROCm, []string{"librocblas.so.4", "librocblas.so.3", "librocblas.so.0", "librocblas.so"}, "",
		"vendor GEMM on AMD (gorstar's own GEMM kernel is used instead)"},
	HIPBLASLt: {"hipBLASLt", VendorROCm, []string{"libhipblaslt.so.0", "libhipblaslt.so.1", "libhipblaslt.so"}, "",
		"nothing yet (listed for rocBLAS, which uses it on gfx942)"},
	NCCL: {"NCCL", VendorCUDA, []string{"libnccl.so.2", "libnccl.so"}, "nccl",
		"collectives between NVIDIA GPUs (several ranks on GPUs)"},
	RCCL: {"RCCL", VendorROCm, []string{"librccl.so.1", "librccl.so"}, "",
		"collectives between AMD GPUs (several ranks on GPUs)"},
}

func (l Lib) String() string { return libs[l].name }

// Libs lists every library in a fixed order.
func Libs() []Lib {
	out := make([]Lib, numLibs)
	for i := range out {
		out[i] = Lib(i)
	}
	return out
}

// Search is where the loader looks for a library, in order: Dirs (the vendor's environment
// variable), then each file name as dlopen finds it (LD_LIBRARY_PATH, the system's cache), then
// Fallback (Python wheel directories, /opt/rocm/lib, /usr/local/cuda).
type Search struct {
	Dirs     []string
	System   bool
	Fallback []string
}

// EnvCUDA and EnvROCm name the environment variables that put directories first in the search
// (':'-separated).
const (
	EnvCUDA = "GORSTAR_CUDA_LIBS"
	EnvROCm = "GORSTAR_ROCM_LIBS"
)

var (
	wheelOnce sync.Once
	wheelDirs []string
)

// pythonWheelDirs are site-packages/nvidia/*/lib of python3 (pip's CUDA wheels: cuBLAS, NVRTC,
// NCCL), found by asking python3 where its packages live.
func pythonWheelDirs() []string {
	wheelOnce.Do(func() {
		py, err := exec.LookPath("python3")
		if err != nil {
			return
		}
		out, err := exec.Command(py, "-c", "import site,sys;print('\\n'.join(site.getsitepackages()+[site.getusersitepackages()]))").Output()
		if err != nil {
			return
		}
		for _, sp := range strings.Fields(string(out)) {
			m, _ := filepath.Glob(filepath.Join(sp, "nvidia", "*", "lib"))
			wheelDirs = append(wheelDirs, m...)
		}
	})
	return wheelDirs
}

// DefaultSearch is the search for a vendor's libraries on this machine.
func DefaultSearch(v Vendor) Search {
	s := Search{System: true}
	env := EnvCUDA
	if v == VendorROCm {
		env = EnvROCm
	}
	for _, d := range filepath.SplitList(os.Getenv(env)) {
		if d != "" {
			s.Dirs = append(s.Dirs, d)
		}
	}
	if v == VendorCUDA {
		s.Fallback = append(pythonWheelDirs(), "/usr/local/cuda/lib64", "/usr/lib/wsl/lib")
	} else {
		if r := os.Getenv("ROCM_PATH"); r != "" {
			s.Fallback = append(s.Fallback, filepath.Join(r, "lib"))
		}
		s.Fallback = append(s.Fallback, "/opt/rocm/lib")
	}
	return s
}

// candidates lists what dlopen is asked for, in order.
func (s Search) candidates(l Lib) []string {
	var out []string
	files := libs[l].files
	for _, d := range s.Dirs {
		for _, f := range files {
			out = append(out, filepath.Join(d, f))
		}
	}
	if s.System {
		out = append(out, files...)
	}
	for _, d := range s.Fallback {
		if libs[l].wheel != "" && strings.Contains(d, string(filepath.Separator)+"nvidia"+string(filepath.Separator)) &&
			filepath.Base(filepath.Dir(d)) != libs[l].wheel {
			continue // another wheel's directory
		}
		for _, f := range files {
			out = append(out, filepath.Join(d, f))
		}
	}
	return out
}

// Loaded is a library that was found and bound.
type Loaded struct {
	Lib  Lib
	Path string // what dlopen was given: a file name or a path
}

type loadState struct {
	once   sync.Once
	loaded Loaded
	err    error
}

var loadStates [numLibs]loadState

// searchFor is DefaultSearch; tests point it at directories of their own (and reset loadStates).
var searchFor = DefaultSearch

// Load opens a library with its vendor's DefaultSearch and fills its table, once per process;
// later calls return the first result. The error is one line naming the library and what failed.
func Load(l Lib) (Loaded, error) {
	st := &loadStates[l]
	st.once.Do(func() { st.loaded, st.err = open(l, searchFor(libs[l].vendor)) })
	return st.loaded, st.err
}

// open tries the candidates in order: the first that dlopen opens must define every symbol of
// the library's table.
func open(l Lib, s Search) (Loaded, error) {
	info := libs[l]
	var tried []string
	var errbuf [1024]C.char
	for _, path := range s.candidates(l) {
		if strings.ContainsRune(path, '/') {
			if _, err := os.Stat(path); err != nil {
				tried = append(tried, path)
				continue
			}
		}
		cpath := C.CString(path)
		h := C.gk_dlopen(cpath, &errbuf[0], C.size_t(len(errbuf)))
		C.free(unsafe.Pointer(cpath))
		if h == nil {
			msg := C.GoString(&errbuf[0])
			if !strings.ContainsRune(path, '/') && strings.Contains(msg, "No such file") {
				tried = append(tried, path)
				continue
			}
			// The file is there but does not load (another architecture, a dependency missing).
			return Loaded{}, fmt.Errorf("gpu: %s: %s cannot be loaded: %s", info.name, path, oneLine(msg))
		}
		var missing [256]C.char
		if C.gk_bind(C.int(l), h, &missing[0], C.size_t(len(missing))) != 0 {
			C.gk_dlclose(h)
			return Loaded{}, fmt.Errorf("gpu: %s: %s has no symbol %s (not a usable %s library)",
				info.name, path, C.GoString(&missing[0]), info.name)
		}
		if l == NVRTC && strings.ContainsRune(path, '/') {
			preloadBuiltins(filepath.Dir(path))
		}
		return Loaded{Lib: l, Path: path}, nil
	}
	env := EnvCUDA
	if info.vendor == VendorROCm {
		env = EnvROCm
	}
	return Loaded{}, fmt.Errorf("gpu: %s not found (tried %s; set %s to its directory)",
		info.name, shortList(tried), env)
}

// preloadBuiltins opens NVRTC's builtins library from NVRTC's own directory: NVRTC opens it by
// soname, which the dynamic linker matches against libraries already loaded, so a pip wheel's
// directory need not be on LD_LIBRARY_PATH.
func preloadBuiltins(dir string) {
	m, _ := filepath.Glob(filepath.Join(dir, "libnvrtc-builtins.so.*"))
	var errbuf [256]C.char
	for _, f := range m {
		cf := C.CString(f)
		h := C.gk_dlopen(cf, &errbuf[0], C.size_t(len(errbuf)))
		C.free(unsafe.Pointer(cf))
		if h != nil {
			return
		}
	}
}

// shortList names the file names tried and how many directories, on one line.
func shortList(tried []string) string {
	if len(tried) == 0 {
		return "nothing"
	}
	if len(tried) <= 6 {
		return strings.Join(tried, ", ")
	}
	return fmt.Sprintf("%s, ... %d places", strings.Join(tried[:5], ", "), len(tried))
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
