/* rope.cu — rotary embedding, Hugging Face "rotate half" (dimension i pairs with i + d/2), the
 * angle rounded to float32 as transformers does, cos and sin in double. One thread per pair. */
#include "gk_compat.h"

/* sign 1: forward; -1: backward (the inverse rotation). */
GK_KERNEL void gk_rope(float *x, const gk_i32 *pos, int T, int heads, int head_dim, float theta, float sign) {
    const int half = head_dim / 2;
    const gk_size e = gk_index(); /* over (t, h, i < half) */
    if (e >= (gk_size)T * heads * half) return;
    const int i = (int)(e % half);
    const gk_size th = e / half, t = th / heads;
    const float invf = (float)(1.0 / pow((double)theta, (double)(2 * i) / head_dim));
    const float angle = (float)pos[t] * invf;
    const float c = (float)cos((double)angle), s = sign * (float)sin((double)angle);
    float *v = x + th * head_dim;
    const float a = v[i], b = v[i + half];
    v[i] = a * c - b * s;
    v[i + half] = b * c + a * s;
}

GK_KERNEL void gk_rope_table(float *cs, const gk_i32 *pos, int T, int head_dim, float theta) {
    const int half = head_dim / 2;
    const gk_size e = gk_index(); /* over (t, i < half) */
    if (e >= (gk_size)T * half) return;
    const int i = (int)(e % half);
    const gk_size t = e / half;
    const float invf = (float)(1.0 / pow((double)theta, (double)(2 * i) / head_dim));
    const float angle = (float)pos[t] * invf;
    cs[t * head_dim + i] = (float)cos((double)angle);
    cs[t * head_dim + half + i] = (float)sin((double)angle);
}

GK_KERNEL void gk_rope_apply(float *x, const float *cs, int T, int heads, int head_dim) {
    const int half = head_dim / 2;
    const gk_size e = gk_index();
    if (e >= (gk_size)T * heads * half) return;
    const int i = (int)(e % half);
    const gk_size th = e / half, t = th / heads;
    const float c = cs[t * head_dim + i], s = cs[t * head_dim + half + i];
    float *v = x + th * head_dim;
    const float a = v[i], b = v[i + half];
    v[i] = a * c - b * s;
    v[i + half] = b * c + a * s;
}
