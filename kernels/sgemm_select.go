package kernels

/*
#include <stdlib.h>
#include "sgemm.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// sgemmKernels lists the SGEMM microkernels this CPU can run, by name.
func sgemmKernels() []string {
	var names []string
	for i := 0; ; i++ {
		k := C.gk_microkernel_at(C.int(i))
		if k == nil {
			return names
		}
		if C.gk_microkernel_runs(k) != 0 {
			names = append(names, C.GoString(k.name))
		}
	}
}

// useSGEMMKernel switches the SGEMM microkernel ("" = the best for this CPU); tests and benchmarks
// use it to cover every path. It is not safe while other calls run.
func useSGEMMKernel(name string) error {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	if C.gk_sgemm_use_kernel(cs) != 0 {
		return fmt.Errorf("no SGEMM kernel %q that runs here", name)
	}
	return nil
}
