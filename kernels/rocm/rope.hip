/* rope.hip — rotary embedding, Hugging Face "rotate half", angles rounded as transformers does in
 * float32 (see rope.c), cos/sin in double. */
#include "common.h"

__global__ void rope_kernel(float *x, const int32_t *pos, int T, int heads, int head_dim, float theta, float sign) {
    const int half = head_dim / 2;
    const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; /* over (t, h, i < half) */
    if (e >= (size_t)T * heads * half) return;
    const int i = (int)(e % half);
    const size_t th = e / half, t = th / heads;
    const float invf = (float)(1.0 / pow((double)theta, (double)(2 * i) / head_dim));
    const float angle = (float)pos[t] * invf;
    const float c = (float)cos((double)angle), s = sign * (float)sin((double)angle);
    float *v = x + th * head_dim;
    const float a = v[i], b = v[i + half];
    v[i] = a * c - b * s;
    v[i + half] = b * c + a * s;
}

__global__ void rope_table_kernel(float *cs, const int32_t *pos, int T, int head_dim, float theta) {
    const int half = head_dim / 2;
    const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; /* over (t, i < half) */
    if (e >= (size_t)T * half) return;
    const int i = (int)(e % half);
    const size_t t = e / half;
    const float invf = (float)(1.0 / pow((double)theta, (double)(2 * i) / head_dim));
    const float angle = (float)pos[t] * invf;
    cs[t * head_dim + i] = (float)cos((double)angle);
    cs[t * head_dim + half + i] = (float)sin((double)angle);
}

__global__ void rope_apply_kernel(float *x, const float *cs, int T, int heads, int head_dim) {
    const int half = head_dim / 2;
    const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; /* over (t, h, i < half) */
    if (e >= (size_t)T * heads * half) return;
    const int i = (int)(e % half);
    const size_t th = e / half, t = th / heads;
    const float c = cs[t * head_dim + i], s = cs[t * head_dim + half + i];
    float *v = x + th * head_dim;
    const float a = v[i], b = v[i + half];
    v[i] = a * c - b * s;
    v[i + half] = b * c + a * s;
}

extern "C" {

void gk_rope_forward(float *x, const int32_t *pos, int T, int heads, int head_dim, float theta) {
    gk_rocm_bind();
    size_t n = (size_t)T * heads * (head_dim / 2);
    if (n) GK_LAUNCH(rope_kernel, dim3(gk_blocks(n, 256)), dim3(256), 0, x, pos, T, heads, head_dim, theta, 1.0f);
}

void gk_rope_backward(float *dx, const int32_t *pos, int T, int heads, int head_dim, float theta) {
    gk_rocm_bind();
    size_t n = (size_t)T * heads * (head_dim / 2);
    if (n) GK_LAUNCH(rope_kernel, dim3(gk_blocks(n, 256)), dim3(256), 0, dx, pos, T, heads, head_dim, theta, -1.0f);
}

void gk_rope_table(float *cs, const int32_t *pos, int T, int head_dim, float theta) {
    gk_rocm_bind();
    size_t n = (size_t)T * (head_dim / 2);
    if (n) GK_LAUNCH(rope_table_kernel, dim3(gk_blocks(n, 256)), dim3(256), 0, cs, pos, T, head_dim, theta);
}

void gk_rope_apply(float *x, const float *cs, int T, int heads, int head_dim) {
    gk_rocm_bind();
    size_t n = (size_t)T * heads * (head_dim / 2);
    if (n) GK_LAUNCH(rope_apply_kernel, dim3(gk_blocks(n, 256)), dim3(256), 0, x, cs, T, heads, head_dim);
}

} /* extern "C" */
