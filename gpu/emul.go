package gpu

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// openEmulator returns a Device whose launches run in lib, the tests' CPU emulator of the kernels
// (gpu/emul, built by emul_test.go), on host memory with NVIDIA's wave width.
func openEmulator(lib string) (*Device, error) {
	var errbuf [512]C.char
	clib := C.CString(lib)
	defer C.free(unsafe.Pointer(clib))
	h := C.gk_dlopen(clib, &errbuf[0], C.size_t(len(errbuf)))
	if h == nil {
		return nil, fmt.Errorf("gpu: emulator %s: %s", lib, C.GoString(&errbuf[0]))
	}
	sym := C.CString("gk_emul_launch")
	defer C.free(unsafe.Pointer(sym))
	fn := C.gk_dlsym(h, sym)
	if fn == nil {
		return nil, fmt.Errorf("gpu: emulator %s has no gk_emul_launch", lib)
	}
	return &Device{Vendor: VendorCUDA, Info: DeviceInfo{Arch: "emulated"}, emu: fn, gemm: map[gemmShape]bool{}}, nil
}
