/* rmsnorm.hip — RMSNorm forward and backward: one block per row, a column kernel for dw. */
#include "common.h"

enum { THREADS = 256 };

__global__ __launch_bounds__(THREADS) void rmsnorm_forward_kernel(float *y, float *rstd, const float *x,
                                                                   const float *w, int C, float eps) {
    __shared__ float red[THREADS];
    const size_t t = blockIdx.x;
    const float *xt = x + t * C;
    float ss = 0;
    for (int c = threadIdx.x; c < C; c += THREADS) ss += xt[c] * xt[c];
    ss = gk_block_sum(ss, red);
    const float r = rsqrtf(ss / C + eps);
    for (int c = threadIdx.x; c < C; c += THREADS) y[t * C + c] = w[c] * (xt[c] * r);
    if (rstd && threadIdx.x == 0) rstd[t] = r;
}

/* dx_c += r w_c dy_c - r^3 x_c / C * sum_j dy_j w_j x_j */
__global__ __launch_bounds__(THREADS) void rmsnorm_backward_dx_kernel(float *dx, const float *dy, const float *x,
                                                                       const float *w, const float *rstd, int C) {
    __shared__ float red[THREADS];
    const size_t t = blockIdx.x;
    const float *xt = x + t * C, *dyt = dy + t * C;
    const float r = rstd[t];
    float dot = 0;
    for (int c = threadIdx.x; c < C; c += THREADS) dot += dyt[c] * w[c] * xt[c];
    dot = gk_block_sum(dot, red);
    const float k = dot * r * r * r / C;
    for (int c = threadIdx.x; c < C; c += THREADS) dx[t * C + c] += r * w[c] * dyt[c] - k * xt[c];
}

__global__ void rmsnorm_backward_dw_kernel(float *dw, const float *dy, const float *x, const float *rstd, int T, int C) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float s = 0;
    for (int t = 0; t < T; t++) s += dy[(size_t)t * C + c] * x[(size_t)t * C + c] * rstd[t];
    dw[c] += s;
}

extern "C" {

void gk_rmsnorm_forward(float *y, float *rstd, const float *x, const float *w, int T, int C, float eps) {
    gk_rocm_bind();
    if (T > 0) GK_LAUNCH(rmsnorm_forward_kernel, dim3(T), dim3(THREADS), 0, y, rstd, x, w, C, eps);
}

void gk_rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w,
                         const float *rstd, int T, int C) {
    gk_rocm_bind();
    if (T <= 0) return;
    if (dx) GK_LAUNCH(rmsnorm_backward_dx_kernel, dim3(T), dim3(THREADS), 0, dx, dy, x, w, rstd, C);
    if (dw) GK_LAUNCH(rmsnorm_backward_dw_kernel, dim3(gk_blocks(C, 256)), dim3(256), 0, dw, dy, x, rstd, T, C);
}

} /* extern "C" */
