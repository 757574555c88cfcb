//go:build !rocm

/* rope.c — rotary position embedding, Hugging Face "rotate half" convention.
 *
 * Dimension i < head_dim/2 pairs with i + head_dim/2. The angle is rounded the way transformers
 * computes it in float32 (inv_freq = 1/theta^(2i/d) as float, angle = float(pos) * inv_freq as
 * float), then cos/sin are taken in double, so positions in the thousands match PyTorch to ~1 ulp. */
#include <math.h>
#include <stdlib.h>

#include "cpu.h"

static void rope_rotate(float *x, const int32_t *pos, int T, int heads, int head_dim, float theta, float sign) {
    int half = head_dim / 2;
    float *invf = malloc(sizeof(float) * half);
    for (int i = 0; i < half; i++) invf[i] = (float)(1.0 / pow((double)theta, (double)(2 * i) / head_dim));
#pragma omp parallel num_threads(gk_threads()) if ((long)T * heads * head_dim > 16384)
    {
        float *cs = malloc(sizeof(float) * 2 * half);
#pragma omp for schedule(static)
        for (int t = 0; t < T; t++) {
            for (int i = 0; i < half; i++) {
                float angle = (float)pos[t] * invf[i];
                cs[i] = (float)cos((double)angle);
                cs[half + i] = sign * (float)sin((double)angle);
            }
            for (int h = 0; h < heads; h++) {
                float *v = x + ((size_t)t * heads + h) * head_dim;
                for (int i = 0; i < half; i++) {
                    float a = v[i], b = v[i + half], c = cs[i], s = cs[half + i];
                    v[i] = a * c - b * s;
                    v[i + half] = b * c + a * s;
                }
            }
        }
        free(cs);
    }
    free(invf);
}

/* out1 = x1 cos - x2 sin, out2 = x2 cos + x1 sin. */
void gk_rope_forward(float *x, const int32_t *pos, int T, int heads, int head_dim, float theta) {
    rope_rotate(x, pos, T, heads, head_dim, theta, 1.0f);
}

/* The rotation is orthogonal, so the gradient goes through its transpose: the rotation by -angle. */
void gk_rope_backward(float *dx, const int32_t *pos, int T, int heads, int head_dim, float theta) {
    rope_rotate(dx, pos, T, heads, head_dim, theta, -1.0f);
}
