//go:build !rocm

package kernels

// #include <stddef.h>
// #include <stdint.h>
// long gk_expf_nonpos_mismatches(uint32_t from, uint32_t to);
// void gk_adamw_scalar(float *param, const float *grad, float *m, float *v, size_t n, float lr, float beta1,
//                      float beta2, float eps, float weight_decay, float grad_scale, int step);
import "C"

// C functions that only tests call: they compare a fast path of a kernel with its plain form.

// expfNonposMismatches counts the float32 bit patterns in [from, to] on which the decode
// softmax's exponential (gk_expf_nonpos, as its loops compile) and gk_expf disagree.
func expfNonposMismatches(from, to uint32) int {
	return int(C.gk_expf_nonpos_mismatches(C.uint32_t(from), C.uint32_t(to)))
}

// adamWScalar is AdamW with every element in the kernel's plain loop, never its AVX2 one.
func adamWScalar(param, grad, m, v Buf, n int, lr, beta1, beta2, eps, weightDecay, gradScale float32, step int) {
	C.gk_adamw_scalar(fp(param), fp(grad), fp(m), fp(v), C.size_t(n), C.float(lr), C.float(beta1), C.float(beta2),
		C.float(eps), C.float(weightDecay), C.float(gradScale), C.int(step))
}
