//go:build !rocm

/* attention_decode.c — one decode step of attention for many sequences in one call.
 *
 * Every sequence brings one new query token and has its own KV cache (its own buffer and length),
 * so the batch cannot be a [B, L, heads, hd] tensor. One OpenMP region covers every (sequence, kv
 * head) pair with a static split; each pair writes its new key/value row (when given), then attends
 * for each query head of its group with the forward's own tile code (gk_attention_forward_head).
 * Each pair's arithmetic order is fixed, so results are the same bits for any thread count, and the
 * same bits as gk_attention_forward per sequence (a decode step agrees with a prefill exactly). */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* attention.c: the forward of one head for the queries of one sequence (Lq <= 48), on the calling
 * thread; ws holds 48*hd + 48*64 + 96 floats. */
void gk_attention_forward_head(float *out, const float *q, const float *k, const float *v, int Lq, int Lk,
                               int nh, int nkv, int hd, float scale, int h, float *ws);

void gk_attention_decode(float *out, const float *q, const float *k_new, const float *v_new,
                         float *const *k_caches, float *const *v_caches, const int32_t *kv_lens, int nseq,
                         int nh, int nkv, int hd, float scale) {
    const long units = (long)nseq * nkv;
    const int group = nh / nkv, ld = nkv * hd;
    if (units <= 0) return;
    const int nthreads = units < gk_threads() ? (int)units : gk_threads();
#pragma omp parallel num_threads(nthreads)
    {
        float *ws = malloc(sizeof(float) * (48 * (size_t)hd + 48 * 64 + 96));
#pragma omp for schedule(static)
        for (long u = 0; u < units; u++) {
            const int s = (int)(u / nkv), g = (int)(u % nkv), len = kv_lens[s];
            float *kc = k_caches[s], *vc = v_caches[s];
            const size_t last = (size_t)(len - 1) * ld + (size_t)g * hd, row = (size_t)s * nkv * hd + (size_t)g * hd;
            if (k_new) memcpy(kc + last, k_new + row, sizeof(float) * hd);
            if (v_new) memcpy(vc + last, v_new + row, sizeof(float) * hd);
            const size_t qs = (size_t)s * nh * hd;
            for (int h = g * group; h < (g + 1) * group; h++)
                gk_attention_forward_head(out + qs, q + qs, kc, vc, 1, len, nh, nkv, hd, scale, h, ws);
        }
        free(ws);
    }
}
