/* loss.cu — fused log-softmax + weighted cross-entropy (one block of 256 per row; each row's loss
 * in double, summed by the host in row order), sum of squares (double partial sums per chunk of
 * 4096, summed by the host in order) and AdamW. Deterministic: no atomics. */
#include "gk_compat.h"

#define LOSS_THREADS 256
#define SQ_CHUNK 4096

GK_KERNEL __launch_bounds__(LOSS_THREADS) void gk_softmax_xent(float *logprob, float *dlogits, double *rowloss,
                                                               const float *logits, const gk_i32 *target,
                                                               const float *weight, int V) {
    __shared__ float red[LOSS_THREADS];
    const gk_size t = blockIdx.x;
    const float *x = logits + t * V;
    float mx = -GK_INF;
    for (int j = threadIdx.x; j < V; j += LOSS_THREADS) mx = fmaxf(mx, x[j]);
    mx = gk_block_max(mx, red);
    float sum = 0;
    for (int j = threadIdx.x; j < V; j += LOSS_THREADS) sum += expf(x[j] - mx);
    sum = gk_block_sum(sum, red);
    const float logz = mx + logf(sum);
    const int tg = target[t];
    const float w = tg < 0 ? 0.0f : (weight ? weight[t] : 1.0f);
    const float lp = tg >= 0 ? x[tg] - logz : 0.0f;
    __syncthreads(); /* every thread has read x[tg] before dlogits (maybe x) is written */
    if (dlogits) {
        float *d = dlogits + t * V;
        for (int j = threadIdx.x; j < V; j += LOSS_THREADS) d[j] = w * expf(x[j] - logz) - (j == tg ? w : 0.0f);
    }
    if (threadIdx.x == 0) {
        if (logprob) logprob[t] = lp;
        rowloss[t] = -(double)w * lp;
    }
}

GK_KERNEL __launch_bounds__(LOSS_THREADS) void gk_sum_squares(double *part, const float *x, gk_size n) {
    __shared__ double red[LOSS_THREADS];
    const gk_size i0 = (gk_size)blockIdx.x * SQ_CHUNK;
    double s = 0;
    for (gk_size i = i0 + threadIdx.x; i < i0 + SQ_CHUNK && i < n; i += LOSS_THREADS) s += (double)x[i] * x[i];
    s = gk_block_sum(s, red);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

/* PyTorch's AdamW: decay = 1 - lr * weight_decay, bc1 and bc2 the bias corrections (host). */
GK_KERNEL void gk_adamw(float *param, const float *grad, float *m, float *v, gk_size n, float lr, float beta1,
                        float beta2, float eps, float decay, float grad_scale, float bc1, float bc2) {
    const gk_size i = gk_index();
    if (i >= n) return;
    const float g = grad[i] * grad_scale;
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] = param[i] * decay - lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
}
