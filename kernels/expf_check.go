//go:build !rocm

package kernels

// #include <stdint.h>
// long gk_expf_nonpos_mismatches(uint32_t from, uint32_t to);
import "C"

// expfNonposMismatches counts the float32 bit patterns in [from, to] on which the decode
// softmax's exponential (gk_expf_nonpos, as its loops compile) and gk_expf disagree. For tests.
func expfNonposMismatches(from, to uint32) int {
	return int(C.gk_expf_nonpos_mismatches(C.uint32_t(from), C.uint32_t(to)))
}
