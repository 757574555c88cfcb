/* norm.cu — RMSNorm: one block of 256 threads per row (forward, dx), one thread per column (dw). */
#include "gk_compat.h"

#define NORM_THREADS 256

GK_KERNEL __launch_bounds__(NORM_THREADS) void gk_rmsnorm_forward(float *y, float *rstd, const float *x,
                                                                  const float *w, int C, float eps) {
    __shared__ float red[NORM_THREADS];
    const gk_size t = blockIdx.x;
    const float *xt = x + t * C;
    float ss = 0;
    for (int c = threadIdx.x; c < C; c += NORM_THREADS) ss += xt[c] * xt[c];
    ss = gk_block_sum(ss, red);
    const float r = rsqrtf(ss / C + eps);
    for (int c = threadIdx.x; c < C; c += NORM_THREADS) y[t * C + c] = w[c] * (xt[c] * r);
    if (rstd && threadIdx.x == 0) rstd[t] = r;
}

/* dx_c += r w_c dy_c - r^3 x_c / C * sum_j dy_j w_j x_j */
GK_KERNEL __launch_bounds__(NORM_THREADS) void gk_rmsnorm_backward_dx(float *dx, const float *dy, const float *x,
                                                                      const float *w, const float *rstd, int C) {
    __shared__ float red[NORM_THREADS];
    const gk_size t = blockIdx.x;
    const float *xt = x + t * C, *dyt = dy + t * C;
    const float r = rstd[t];
    float dot = 0;
    for (int c = threadIdx.x; c < C; c += NORM_THREADS) dot += dyt[c] * w[c] * xt[c];
    dot = gk_block_sum(dot, red);
    const float k = dot * r * r * r / C;
    for (int c = threadIdx.x; c < C; c += NORM_THREADS) dx[t * C + c] += r * w[c] * dyt[c] - k * xt[c];
}

GK_KERNEL void gk_rmsnorm_backward_dw(float *dw, const float *dy, const float *x, const float *rstd, int T, int C) {
    const int c = (int)gk_index();
    if (c >= C) return;
    float s = 0;
    for (int t = 0; t < T; t++) s += dy[(gk_size)t * C + c] * x[(gk_size)t * C + c] * rstd[t];
    dw[c] += s;
}
