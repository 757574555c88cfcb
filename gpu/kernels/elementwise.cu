/* elementwise.cu — SwiGLU, residual add, scale, embedding, bfloat16 conversion: one thread per
 * element (the embedding gradient: one thread per channel, tokens in order, no atomics). */
#include "gk_compat.h"

__device__ inline float gk_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

GK_KERNEL void gk_swiglu_forward(float *out, const float *gate, const float *up, gk_size n) {
    const gk_size i = gk_index();
    if (i < n) {
        const float g = gate[i];
        out[i] = g * gk_sigmoid(g) * up[i];
    }
}

/* dgate and dup (either NULL) are written, not added to. */
GK_KERNEL void gk_swiglu_backward(float *dgate, float *dup, const float *dout, const float *gate, const float *up,
                                  gk_size n) {
    const gk_size i = gk_index();
    if (i >= n) return;
    const float g = gate[i], s = gk_sigmoid(g), d = dout[i];
    if (dgate) dgate[i] = d * up[i] * s * (1.0f + g * (1.0f - s));
    if (dup) dup[i] = d * g * s;
}

GK_KERNEL void gk_add(float *y, const float *x, gk_size n) {
    const gk_size i = gk_index();
    if (i < n) y[i] += x[i];
}

GK_KERNEL void gk_scale(float *y, float a, gk_size n) {
    const gk_size i = gk_index();
    if (i < n) y[i] *= a;
}

GK_KERNEL void gk_embedding_forward(float *out, const gk_i32 *ids, const float *table, int T, int C) {
    const gk_size e = gk_index();
    if (e < (gk_size)T * C) out[e] = table[(gk_size)ids[e / C] * C + e % C];
}

/* An inference-only bf16 model's table: rows widened exactly. */
GK_KERNEL void gk_embedding_forward_bf16(float *out, const gk_i32 *ids, const gk_u16 *table, int T, int C) {
    const gk_size e = gk_index();
    if (e < (gk_size)T * C) out[e] = gk_bf16_to_f32(table[(gk_size)ids[e / C] * C + e % C]);
}

GK_KERNEL void gk_embedding_backward(float *dtable, const float *dout, const gk_i32 *ids, int T, int C) {
    const int c = (int)gk_index();
    if (c >= C) return;
    for (int t = 0; t < T; t++)
        if (ids[t] >= 0) dtable[(gk_size)ids[t] * C + c] += dout[(gk_size)t * C + c];
}

GK_KERNEL void gk_bf16_from_f32(gk_u16 *dst, const float *src, gk_size n) {
    const gk_size i = gk_index();
    if (i < n) dst[i] = gk_f32_to_bf16(src[i]);
}

GK_KERNEL void gk_bf16_to_f32(float *dst, const gk_u16 *src, gk_size n) {
    const gk_size i = gk_index();
    if (i < n) dst[i] = gk_bf16_to_f32(src[i]);
}
