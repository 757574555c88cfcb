/* embedding.hip — embedding lookup and its gradient (one thread per channel walks the tokens in
 * order: no atomics, deterministic). */
#include "common.h"

__global__ void embedding_forward_kernel(float *out, const int32_t *ids, const float *table, int T, int C) {
    const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e < (size_t)T * C) out[e] = table[(size_t)ids[e / C] * C + e % C];
}

__global__ void embedding_backward_kernel(float *dtable, const float *dout, const int32_t *ids, int T, int C) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    for (int t = 0; t < T; t++)
        if (ids[t] >= 0) dtable[(size_t)ids[t] * C + c] += dout[(size_t)t * C + c];
}

extern "C" {

void gk_embedding_forward(float *out, const int32_t *ids, const float *table, int T, int C) {
    gk_rocm_bind();
    size_t n = (size_t)T * C;
    if (n) GK_LAUNCH(embedding_forward_kernel, dim3(gk_blocks(n, 256)), dim3(256), 0, out, ids, table, T, C);
}

void gk_embedding_backward(float *dtable, const float *dout, const int32_t *ids, int T, int C) {
    gk_rocm_bind();
    if (T > 0 && C > 0) GK_LAUNCH(embedding_backward_kernel, dim3(gk_blocks(C, 256)), dim3(256), 0, dtable, dout, ids, T, C);
}

} /* extern "C" */
