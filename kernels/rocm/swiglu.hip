/* swiglu.hip — SwiGLU, residual add and scale, elementwise. */
#include "common.h"

__device__ inline float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

__global__ void swiglu_forward_kernel(float *out, const float *gate, const float *up, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float g = gate[i];
        out[i] = g * sigmoidf(g) * up[i];
    }
}

__global__ void swiglu_backward_kernel(float *dgate, float *dup, const float *dout, const float *gate,
                                       const float *up, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float g = gate[i], s = sigmoidf(g), d = dout[i];
    if (dgate) dgate[i] = d * up[i] * s * (1.0f + g * (1.0f - s));
    if (dup) dup[i] = d * g * s;
}

__global__ void add_kernel(float *y, const float *x, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += x[i];
}

__global__ void scale_kernel(float *y, float a, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= a;
}

extern "C" {

void gk_swiglu_forward(float *out, const float *gate, const float *up, size_t n) {
    gk_rocm_bind();
    if (n) GK_LAUNCH(swiglu_forward_kernel, dim3(gk_blocks(n, 256)), dim3(256), 0, out, gate, up, n);
}

void gk_swiglu_backward(float *dgate, float *dup, const float *dout, const float *gate, const float *up, size_t n) {
    gk_rocm_bind();
    if (n) GK_LAUNCH(swiglu_backward_kernel, dim3(gk_blocks(n, 256)), dim3(256), 0, dgate, dup, dout, gate, up, n);
}

void gk_add(float *y, const float *x, size_t n) {
    gk_rocm_bind();
    if (n) GK_LAUNCH(add_kernel, dim3(gk_blocks(n, 256)), dim3(256), 0, y, x, n);
}

void gk_scale(float *y, float a, size_t n) {
    gk_rocm_bind();
    if (n) GK_LAUNCH(scale_kernel, dim3(gk_blocks(n, 256)), dim3(256), 0, y, a, n);
}

} /* extern "C" */
