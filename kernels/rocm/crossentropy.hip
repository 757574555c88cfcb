/* crossentropy.hip — fused log-softmax + weighted cross-entropy: one block per row; the loss is
 * summed on the host in row order (deterministic). */
#include <stdlib.h>

#include "common.h"

enum { THREADS = 256 };

__global__ __launch_bounds__(THREADS) void xent_kernel(float *logprob, float *dlogits, double *rowloss,
                                                       const float *logits, const int32_t *target,
                                                       const float *weight, int V) {
    __shared__ float red[THREADS];
    const size_t t = blockIdx.x;
    const float *x = logits + t * V;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < V; j += THREADS) mx = fmaxf(mx, x[j]);
    mx = gk_block_max(mx, red);
    float sum = 0;
    for (int j = threadIdx.x; j < V; j += THREADS) sum += expf(x[j] - mx);
    sum = gk_block_sum(sum, red);
    const float logz = mx + logf(sum);
    const int tg = target[t];
    const float w = tg < 0 ? 0.0f : (weight ? weight[t] : 1.0f);
    const float lp = tg >= 0 ? x[tg] - logz : 0.0f;
    __syncthreads(); /* every thread has read x[tg] before dlogits (maybe x) is written */
    if (dlogits) {
        float *d = dlogits + t * V;
        for (int j = threadIdx.x; j < V; j += THREADS) d[j] = w * expf(x[j] - logz) - (j == tg ? w : 0.0f);
    }
    if (threadIdx.x == 0) {
        if (logprob) logprob[t] = lp;
        rowloss[t] = -(double)w * lp;
    }
}

extern "C" double gk_softmax_xent(float *logprob, float *dlogits, const float *logits, const int32_t *target,
                                  const float *weight, int T, int V) {
    gk_rocm_bind();
    if (T <= 0) return 0;
    double *rowloss_dev = NULL;
    if (hipMalloc(&rowloss_dev, sizeof(double) * T) != hipSuccess) {
        gk_rocm_check(hipErrorOutOfMemory, "softmax_xent workspace");
        return NAN;
    }
    GK_LAUNCH(xent_kernel, dim3(T), dim3(THREADS), 0, logprob, dlogits, rowloss_dev, logits, target, weight, V);
    double *rowloss = (double *)malloc(sizeof(double) * T);
    gk_rocm_check(hipMemcpy(rowloss, rowloss_dev, sizeof(double) * T, hipMemcpyDeviceToHost), "hipMemcpy rowloss");
    gk_rocm_check(hipFree(rowloss_dev), "hipFree");
    double loss = 0;
    for (int t = 0; t < T; t++) loss += rowloss[t];
    free(rowloss);
    return loss;
}
