package kernels

// #include <stdint.h>
import "C"

import "fmt"

// need panics unless b holds at least n elements of dtype dt.
func need(op, arg string, b Buf, n int, dt DType) {
	if b.IsNil() && n > 0 {
		panic(fmt.Sprintf("kernels: %s: %s is nil, want %d %s elements", op, arg, n, dt))
	}
	optional(op, arg, b, n, dt)
}

// optional is need for arguments that may be the zero Buf (NULL).
func optional(op, arg string, b Buf, n int, dt DType) {
	if b.IsNil() {
		return
	}
	if b.dt != dt {
		panic(fmt.Sprintf("kernels: %s: %s is %s, want %s", op, arg, b.dt, dt))
	}
	if b.n < n {
		panic(fmt.Sprintf("kernels: %s: %s has %d elements, want %d", op, arg, b.n, n))
	}
}

// dims panics unless every size is ≥ 0 (names and values alternate).
func dims(op string, nameValues ...any) {
	for i := 0; i+1 < len(nameValues); i += 2 {
		if v := nameValues[i+1].(int); v < 0 || v > 1<<31-1 {
			panic(fmt.Sprintf("kernels: %s: %s = %d", op, nameValues[i], v))
		}
	}
}

func fp(b Buf) *C.float   { return (*C.float)(b.p) }
func ip(b Buf) *C.int32_t { return (*C.int32_t)(b.p) }

// gkChunk is the block size of chunked reductions (GK_CHUNK in cpu.h).
const gkChunk = 4096
