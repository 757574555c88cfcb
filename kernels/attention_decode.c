//go:build !rocm

/* attention_decode.c — one decode step of attention for many sequences in one call.
 *
 * Every sequence brings one new query token and has its own KV cache (its own buffer and length),
 * so the batch cannot be a [B, L, heads, hd] tensor. One OpenMP region covers every (sequence, kv
 * head) pair with a static split; each pair writes its new key/value row (when given), then attends
 * for each query head of its group with the forward's arithmetic, in the same order but without
 * packing one query row into SGEMM panels. Each pair's arithmetic order is fixed, so results are the same bits for any thread count, and the
 * same bits as gk_attention_forward per sequence (a decode step agrees with a prefill exactly). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* attention.c: the forward of one head for the queries of one sequence (Lq <= 48), on the calling
 * thread; ws holds 48*hd + 48*64 + 96 floats. The fallback for head dims above one SGEMM K block. */
void gk_attention_forward_head(float *out, const float *q, const float *k, const float *v, int Lq, int Lk,
                               int nh, int nkv, int hd, float scale, int h, float *ws);

/* The forward's key tile and the SGEMM K block (attention.c, matmul.c). */
enum { DECODE_BK = 64, DECODE_KC = 384 };

/* Scores of one query against nk keys (row stride ld): each is a sequential multiply-add chain over
 * hd from 0, times scale, which is what the SGEMM microkernel computes for one output. Eight keys at
 * a time are transposed into kt (hd x 8) and advanced with vector multiply-adds written like the
 * microkernel's, so they fuse exactly where the microkernel's do. kt holds 8*hd floats. */
typedef float decode_v8 __attribute__((vector_size(32)));
typedef float decode_v8u __attribute__((vector_size(32), aligned(4))); /* kt needs no alignment */

GK_VECTORIZED
static void decode_scores(float *restrict srow, const float *restrict qh, const float *restrict k, int nk, int ld,
                          int hd, float scale, float *restrict kt) {
    for (int j = 0; j < nk; j += 8) {
        const int n = nk - j < 8 ? nk - j : 8;
        for (int l = 0; l < 8; l++) {
            const float *kj = k + (size_t)(j + (l < n ? l : 0)) * ld;
            for (int d = 0; d < hd; d++) kt[d * 8 + l] = kj[d];
        }
        decode_v8 acc = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int d = 0; d < hd; d++) {
            decode_v8 qd = qh[d] - (decode_v8){0};
            acc += qd * *(const decode_v8u *)(kt + d * 8);
        }
        acc = acc * scale;
        for (int l = 0; l < n; l++) srow[j + l] = acc[l];
    }
}

/* attention.c's exp_row with every key visible. */
GK_VECTORIZED
static void decode_exp(float *row, float sub, int n) {
    for (int j = 0; j < n; j++) row[j] = gk_expf(row[j] - sub);
}

/* o += p v over nk value rows: per dimension a sequential multiply-add chain over the keys from 0,
 * added to o at the end, as the SGEMM microkernel does with beta = 1. acc holds hd floats. */
GK_VECTORIZED
static void decode_pv(float *restrict o, float *restrict acc, const float *restrict p, const float *restrict v, int nk,
                      int ld, int hd) {
    for (int d = 0; d < hd; d++) acc[d] = 0;
    for (int j = 0; j < nk; j++) {
        const float pj = p[j], *vj = v + (size_t)j * ld;
        for (int d = 0; d < hd; d++) acc[d] += pj * vj[d];
    }
    for (int d = 0; d < hd; d++) o[d] = acc[d] + o[d];
}

/* One query head over len cache rows: attention_forward_tile for one query row, with the tile
 * products computed in place instead of through packed SGEMM panels (which cost more than the
 * products for one row). Same operations in the same order, so the same bits. Not cloned, like
 * attention_forward_tile, so its scalar arithmetic compiles the same way. ws holds 64 + 9*hd floats. */
static void decode_head(float *out, const float *qh, const float *k, const float *v, int len, int ld, int hd,
                        float scale, float *ws) {
    float *S = ws, *O = S + DECODE_BK, *acc = O + hd; /* acc: 8*hd floats */
    float m = -INFINITY, l = 0;
    memset(O, 0, sizeof(float) * hd);
    for (int j0 = 0; j0 < len; j0 += DECODE_BK) {
        const int nk = len - j0 < DECODE_BK ? len - j0 : DECODE_BK;
        decode_scores(S, qh, k + (size_t)j0 * ld, nk, ld, hd, scale, acc);
        const float mx = gk_max(S, nk, m), corr = gk_expf(m - mx);
        decode_exp(S, mx, nk);
        l = l * corr + gk_sum(S, nk);
        m = mx;
        if (corr != 1.0f)
            for (int d = 0; d < hd; d++) O[d] *= corr;
        decode_pv(O, acc, S, v + (size_t)j0 * ld, nk, ld, hd);
    }
    const float inv = 1.0f / l;
    for (int d = 0; d < hd; d++) out[d] = O[d] * inv;
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
        float *ws = malloc(sizeof(float) * (48 * (size_t)hd + 48 * 64 + 96)); /* either path */
#pragma omp for schedule(static)
        for (long u = 0; u < units; u++) {
            const int s = (int)(u / nkv), g = (int)(u % nkv), len = kv_lens[s];
            float *kc = k_caches[s], *vc = v_caches[s];
            const size_t last = (size_t)(len - 1) * ld + (size_t)g * hd, row = (size_t)s * nkv * hd + (size_t)g * hd;
            if (k_new) memcpy(kc + last, k_new + row, sizeof(float) * hd);
            if (v_new) memcpy(vc + last, v_new + row, sizeof(float) * hd);
            const size_t qs = (size_t)s * nh * hd;
            for (int h = g * group; h < (g + 1) * group; h++) {
                if (hd <= DECODE_KC)
                    decode_head(out + qs + (size_t)h * hd, q + qs + (size_t)h * hd, kc + (size_t)g * hd,
                                vc + (size_t)g * hd, len, ld, hd, scale, ws);
                else
                    gk_attention_forward_head(out + qs, q + qs, kc, vc, 1, len, nh, nkv, hd, scale, h, ws);
            }
        }
        free(ws);
    }
}
