//go:build !rocm

/* attention_decode.c — one decode step of attention for many sequences in one call.
 *
 * Every sequence brings one new query token and has its own KV cache (its own buffer and length),
 * so the batch cannot be a [B, L, heads, hd] tensor. One OpenMP region covers every (sequence, kv
 * head) pair with a static split; each pair writes its new key/value row (when given), then walks
 * the cache in chunks of keys with an online softmax for each query head of its group. Each pair's
 * arithmetic order is fixed, so results are the same for any thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

enum { DECODE_CHUNK = 128 }; /* keys scored per pass of the online softmax */

/* One query row qh over the first len rows of a cache (row stride ld floats, kv head offset
 * already applied): o = softmax(scale * qh . k_j) v. ws holds DECODE_CHUNK floats. */
GK_VECTORIZED
static void decode_row(float *o, const float *qh, const float *kc, const float *vc, int len, int ld, int hd,
                       float scale, float *ws) {
    float m = -INFINITY, l = 0;
    for (int d = 0; d < hd; d++) o[d] = 0;
    for (int j0 = 0; j0 < len; j0 += DECODE_CHUNK) {
        const int nk = len - j0 < DECODE_CHUNK ? len - j0 : DECODE_CHUNK;
        for (int jj = 0; jj < nk; jj++) ws[jj] = gk_dot(qh, kc + (size_t)(j0 + jj) * ld, hd) * scale;
        const float mx = gk_max(ws, nk, m), corr = gk_expf(m - mx);
        for (int jj = 0; jj < nk; jj++) ws[jj] = gk_expf(ws[jj] - mx);
        l = l * corr + gk_sum(ws, nk);
        m = mx;
        if (corr != 1.0f)
            for (int d = 0; d < hd; d++) o[d] *= corr;
        for (int jj = 0; jj < nk; jj++) {
            const float p = ws[jj], *vj = vc + (size_t)(j0 + jj) * ld;
            for (int d = 0; d < hd; d++) o[d] += p * vj[d];
        }
    }
    const float inv = 1.0f / l;
    for (int d = 0; d < hd; d++) o[d] *= inv;
}

void gk_attention_decode(float *out, const float *q, const float *k_new, const float *v_new,
                         float *const *k_caches, float *const *v_caches, const int32_t *kv_lens, int nseq,
                         int nh, int nkv, int hd, float scale) {
    const long units = (long)nseq * nkv;
    const int group = nh / nkv, ld = nkv * hd;
    if (units <= 0) return;
    const int nthreads = units < gk_threads() ? (int)units : gk_threads();
#pragma omp parallel num_threads(nthreads)
    {
        float ws[DECODE_CHUNK];
#pragma omp for schedule(static)
        for (long u = 0; u < units; u++) {
            const int s = (int)(u / nkv), g = (int)(u % nkv), len = kv_lens[s];
            float *kc = k_caches[s] + g * hd, *vc = v_caches[s] + g * hd;
            const size_t last = (size_t)(len - 1) * ld;
            if (k_new) memcpy(kc + last, k_new + ((size_t)s * nkv + g) * hd, sizeof(float) * hd);
            if (v_new) memcpy(vc + last, v_new + ((size_t)s * nkv + g) * hd, sizeof(float) * hd);
            for (int h = g * group; h < (g + 1) * group; h++) {
                const size_t row = ((size_t)s * nh + h) * hd;
                decode_row(out + row, q + row, kc, vc, len, ld, hd, scale, ws);
            }
        }
    }
}
