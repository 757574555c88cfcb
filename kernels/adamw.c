//go:build !rocm

/* adamw.c — global gradient norm (sum of squares) and the AdamW update with decoupled weight decay. */
#include <math.h>
#include <stdlib.h>

#include "cpu.h"

GK_VECTORIZED
static double sumsq_chunk(const float *x, size_t n) { return gk_sumsq(x, n); }

/* Chunks of GK_CHUNK summed in double, then the chunk sums in order: the same bits for any thread count. */
double gk_sum_squares(const float *x, size_t n) {
    size_t nchunks = (n + GK_CHUNK - 1) / GK_CHUNK;
    if (nchunks == 0) return 0;
    double *part = malloc(sizeof(double) * nchunks);
#pragma omp parallel for num_threads(gk_threads()) schedule(static) if (nchunks > 4)
    for (size_t ch = 0; ch < nchunks; ch++) {
        size_t i0 = ch * GK_CHUNK, i1 = i0 + GK_CHUNK < n ? i0 + GK_CHUNK : n;
        part[ch] = sumsq_chunk(x + i0, i1 - i0);
    }
    double total = 0;
    for (size_t ch = 0; ch < nchunks; ch++) total += part[ch];
    free(part);
    return total;
}

/* PyTorch's AdamW: p -= lr*wd*p; m,v moments of g = grad*grad_scale;
 * p -= lr * (m / (1-beta1^step)) / (sqrt(v / (1-beta2^step)) + eps). */
GK_VECTORIZED
static void adamw_chunk(float *restrict param, const float *restrict grad, float *restrict m, float *restrict v,
                        size_t n, float lr, float beta1, float beta2, float eps, float decay, float grad_scale,
                        float bc1, float bc2) {
    for (size_t i = 0; i < n; i++) {
        float g = grad[i] * grad_scale;
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        param[i] = param[i] * decay - lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
    }
}

void gk_adamw(float *param, const float *grad, float *m, float *v, size_t n, float lr, float beta1,
              float beta2, float eps, float weight_decay, float grad_scale, int step) {
    float bc1 = (float)(1.0 - pow((double)beta1, step));
    float bc2 = (float)(1.0 - pow((double)beta2, step));
    float decay = 1.0f - lr * weight_decay;
    const size_t chunks = (n + GK_CHUNK - 1) / GK_CHUNK;
#pragma omp parallel for num_threads(gk_threads()) schedule(static) if (chunks > 4)
    for (size_t c = 0; c < chunks; c++) {
        size_t i = c * GK_CHUNK, k = n - i < GK_CHUNK ? n - i : GK_CHUNK;
        adamw_chunk(param + i, grad + i, m + i, v + i, k, lr, beta1, beta2, eps, decay, grad_scale, bc1, bc2);
    }
}
