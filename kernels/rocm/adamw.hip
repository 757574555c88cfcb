/* adamw.hip — sum of squares (per-chunk block sums in double, chunks summed on the host in order)
 * and the AdamW update. */
#include <math.h>
#include <stdlib.h>

#include "common.h"

enum { CHUNK = 4096, THREADS = 256 };

__global__ __launch_bounds__(THREADS) void sum_squares_kernel(double *part, const float *x, size_t n) {
    __shared__ double red[THREADS];
    const size_t i0 = (size_t)blockIdx.x * CHUNK;
    double s = 0;
    for (size_t i = i0 + threadIdx.x; i < i0 + CHUNK && i < n; i += THREADS) s += (double)x[i] * x[i];
    s = gk_block_sum(s, red);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

__global__ void adamw_kernel(float *param, const float *grad, float *m, float *v, size_t n, float lr, float beta1,
                             float beta2, float eps, float decay, float grad_scale, float bc1, float bc2) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float g = grad[i] * grad_scale;
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] = param[i] * decay - lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
}

extern "C" {

double gk_sum_squares(const float *x, size_t n) {
    gk_rocm_bind();
    const size_t chunks = (n + CHUNK - 1) / CHUNK;
    if (chunks == 0) return 0;
    double *part_dev = NULL;
    if (hipMalloc(&part_dev, sizeof(double) * chunks) != hipSuccess) {
        gk_rocm_check(hipErrorOutOfMemory, "sum_squares workspace");
        return NAN;
    }
    GK_LAUNCH(sum_squares_kernel, dim3((unsigned)chunks), dim3(THREADS), 0, part_dev, x, n);
    double *part = (double *)malloc(sizeof(double) * chunks);
    gk_rocm_check(hipMemcpy(part, part_dev, sizeof(double) * chunks, hipMemcpyDeviceToHost), "hipMemcpy partials");
    gk_rocm_check(hipFree(part_dev), "hipFree");
    double total = 0;
    for (size_t c = 0; c < chunks; c++) total += part[c];
    free(part);
    return total;
}

void gk_adamw(float *param, const float *grad, float *m, float *v, size_t n, float lr, float beta1, float beta2,
              float eps, float weight_decay, float grad_scale, int step) {
    gk_rocm_bind();
    const float bc1 = (float)(1.0 - pow((double)beta1, step)), bc2 = (float)(1.0 - pow((double)beta2, step));
    if (n)
        GK_LAUNCH(adamw_kernel, dim3(gk_blocks(n, 256)), dim3(256), 0, param, grad, m, v, n, lr, beta1, beta2, eps,
                  1.0f - lr * weight_decay, grad_scale, bc1, bc2);
}

} /* extern "C" */
