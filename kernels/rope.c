/* rope.c — rotary position embedding, Hugging Face "rotate half" convention.
 *
 * Dimension i < head_dim/2 pairs with i + head_dim/2. The angle is rounded the way transformers
 * computes it in float32 (inv_freq = 1/theta^(2i/d) as float, angle = float(pos) * inv_freq as
 * float), then cos/sin are taken in double, so positions in the thousands match PyTorch to ~1 ulp. */
#include <math.h>
#include <stdlib.h>

#include "cpu.h"

/* cos and sign * sin of position p's angles into cs (cs[i], cs[half + i]). */
static void rope_angles(float *cs, const float *invf, int32_t p, int half, float sign) {
    for (int i = 0; i < half; i++) {
        float angle = (float)p * invf[i];
        cs[i] = (float)cos((double)angle);
        cs[half + i] = sign * (float)sin((double)angle);
    }
}

/* Row t's heads rotated by the angles in c_s (cos in [0, half), sign * sin in [half, 2 half)). */
static inline void rope_row(float *x, const float *c_s, int heads, int head_dim) {
    const int half = head_dim / 2;
    for (int h = 0; h < heads; h++) {
        float *v = x + (size_t)h * head_dim;
        for (int i = 0; i < half; i++) {
            float a = v[i], b = v[i + half], c = c_s[i], s = c_s[half + i];
            v[i] = a * c - b * s;
            v[i + half] = b * c + a * s;
        }
    }
}

static float *rope_inv_freq(int head_dim, float theta) {
    const int half = head_dim / 2;
    float *invf = malloc(sizeof(float) * (half > 0 ? half : 1));
    for (int i = 0; i < half; i++) invf[i] = (float)(1.0 / pow((double)theta, (double)(2 * i) / head_dim));
    return invf;
}

/* rope_rotate's work, with its loops shared out among the threads of the region that calls it (or
 * run whole on the calling thread outside one). */
static void rope_rotate_rows(float *x, const int32_t *pos, int T, int heads, int head_dim, float sign,
                             const float *invf, float *table, int32_t maxp) {
    const int half = head_dim / 2;
    float *cs = table ? NULL : malloc(sizeof(float) * 2 * half); /* a table serves every token */
    if (table) {
#pragma omp for schedule(static)
        for (int p = 0; p <= maxp; p++) rope_angles(table + (size_t)p * 2 * half, invf, p, half, sign);
    }
#pragma omp for schedule(static)
    for (int t = 0; t < T; t++) {
        const float *c_s = cs;
        if (table)
            c_s = table + (size_t)pos[t] * 2 * half;
        else
            rope_angles(cs, invf, pos[t], half, sign);
        rope_row(x + (size_t)t * heads * head_dim, c_s, heads, head_dim);
    }
    free(cs);
}

static void rope_rotate(float *x, const int32_t *pos, int T, int heads, int head_dim, float theta, float sign) {
    int half = head_dim / 2;
    float *invf = rope_inv_freq(head_dim, theta);
    /* A batch of rows holds each position many times (B rows of 0..L-1): when the positions are no
     * more than the tokens, the angles are taken once per position, into a table, instead of once
     * per token (double cos and sin were most of the op). The same values either way. */
    int32_t maxp = -1, minp = 0;
    for (int t = 0; t < T; t++) maxp = pos[t] > maxp ? pos[t] : maxp, minp = pos[t] < minp ? pos[t] : minp;
    float *table = NULL;
    const int tabled = minp >= 0 && maxp >= 0 && maxp < T;
    if (tabled) table = malloc(sizeof(float) * 2 * half * ((size_t)maxp + 1));
    GK_PARALLEL(gk_threads_if((long)T * heads * head_dim > 16384),
                rope_rotate_rows(x, pos, T, heads, head_dim, sign, invf, table, maxp));
    free(table);
    free(invf);
}

/* The forward's angles of each row, for several tensors of the same rows (a decode step's queries
 * and keys in every layer): cos and sin are taken once per row instead of once per row and call. */
void gk_rope_table(float *cs, const int32_t *pos, int T, int head_dim, float theta) {
    const int half = head_dim / 2;
    float *invf = rope_inv_freq(head_dim, theta);
    GK_PARALLEL_FOR(gk_threads_if((long)T * half > 4096),
                    for (int t = 0; t < T; t++) rope_angles(cs + (size_t)t * head_dim, invf, pos[t], half, 1.0f););
    free(invf);
}

void gk_rope_apply(float *x, const float *cs, int T, int heads, int head_dim) {
    GK_PARALLEL_FOR(gk_threads_if((long)T * heads * head_dim > 16384),
                    for (int t = 0; t < T; t++)
                        rope_row(x + (size_t)t * heads * head_dim, cs + (size_t)t * head_dim, heads, head_dim););
}

/* out1 = x1 cos - x2 sin, out2 = x2 cos + x1 sin. */
void gk_rope_forward(float *x, const int32_t *pos, int T, int heads, int head_dim, float theta) {
    rope_rotate(x, pos, T, heads, head_dim, theta, 1.0f);
}

/* The rotation is orthogonal, so the gradient goes through its transpose: the rotation by -angle. */
void gk_rope_backward(float *dx, const int32_t *pos, int T, int heads, int head_dim, float theta) {
    rope_rotate(dx, pos, T, heads, head_dim, theta, -1.0f);
}
