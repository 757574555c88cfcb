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

/* The keys of one tile, transposed in blocks of 8 (kt[block][d][8], the last block padded with
 * copies of the tile's first key), so that scores run 8 keys to a vector. kt holds 64*hd floats.
 * Pure data movement: the AVX2 8 x 8 transpose and the scalar loop give the same kt. */
static void pack8_scalar(float *restrict blk, const float *const *rows, int d0, int hd) {
    for (int d = d0; d < hd; d++)
        for (int l = 0; l < 8; l++) blk[d * 8 + l] = rows[l][d];
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

__attribute__((target("avx2"))) static void pack8_avx2(float *restrict blk, const float *const *rows, int hd) {
    int d = 0;
    for (; d + 8 <= hd; d += 8) {
        __m256 r[8], t[8], u[8];
        for (int l = 0; l < 8; l++) r[l] = _mm256_loadu_ps(rows[l] + d);
        for (int l = 0; l < 8; l += 2) {
            t[l] = _mm256_unpacklo_ps(r[l], r[l + 1]);
            t[l + 1] = _mm256_unpackhi_ps(r[l], r[l + 1]);
        }
        for (int l = 0; l < 8; l += 4) {
            u[l] = _mm256_shuffle_ps(t[l], t[l + 2], _MM_SHUFFLE(1, 0, 1, 0));
            u[l + 1] = _mm256_shuffle_ps(t[l], t[l + 2], _MM_SHUFFLE(3, 2, 3, 2));
            u[l + 2] = _mm256_shuffle_ps(t[l + 1], t[l + 3], _MM_SHUFFLE(1, 0, 1, 0));
            u[l + 3] = _mm256_shuffle_ps(t[l + 1], t[l + 3], _MM_SHUFFLE(3, 2, 3, 2));
        }
        for (int l = 0; l < 4; l++) {
            _mm256_storeu_ps(blk + (size_t)(d + l) * 8, _mm256_permute2f128_ps(u[l], u[l + 4], 0x20));
            _mm256_storeu_ps(blk + (size_t)(d + l + 4) * 8, _mm256_permute2f128_ps(u[l], u[l + 4], 0x31));
        }
    }
    pack8_scalar(blk, rows, d, hd);
}
#endif

static void decode_pack_keys(float *restrict kt, const float *restrict k, int nk, int ld, int hd, int avx2) {
    for (int j = 0; j < nk; j += 8) {
        const int n = nk - j < 8 ? nk - j : 8;
        const float *rows[8];
        for (int l = 0; l < 8; l++) rows[l] = k + (size_t)(j + (l < n ? l : 0)) * ld;
        float *blk = kt + (size_t)j * hd;
#if defined(__x86_64__) && defined(__GNUC__)
        if (avx2) {
            pack8_avx2(blk, rows, hd);
            continue;
        }
#endif
        (void)avx2;
        pack8_scalar(blk, rows, 0, hd);
    }
}

/* Scores of one query against the nk packed keys: each is a sequential multiply-add chain over hd
 * from 0, times scale, which is what the SGEMM microkernel computes for one output; the vector
 * multiply-adds are written like the microkernel's, so they fuse exactly where its do. */
typedef float decode_v8 __attribute__((vector_size(32)));
typedef float decode_v8u __attribute__((vector_size(32), aligned(4))); /* kt needs no alignment */

GK_VECTORIZED
static void decode_scores(float *restrict srow, const float *restrict qh, const float *restrict kt, int nk, int hd,
                          float scale) {
    for (int j = 0; j < nk; j += 8) {
        const int n = nk - j < 8 ? nk - j : 8;
        const float *blk = kt + (size_t)j * hd;
        decode_v8 acc = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int d = 0; d < hd; d++) {
            decode_v8 qd = qh[d] - (decode_v8){0};
            acc += qd * *(const decode_v8u *)(blk + d * 8);
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

/* The group heads of kv head g (queries qg and outputs og, [group, hd]) over len cache rows:
 * attention_forward_tile for one query row per head, with the tile products computed in place
 * instead of through packed SGEMM panels (which cost more than the products for one row), and each
 * key tile transposed once for the whole group. Per head the same operations in the same order,
 * so the same bits. Not cloned, like attention_forward_tile, so its scalar arithmetic compiles the
 * same way. ws holds decode_ws_floats(hd, group). */
static size_t decode_ws_floats(int hd, int group) {
    return DECODE_BK + (size_t)DECODE_BK * hd + (size_t)group * hd + hd + 2 * (size_t)group;
}

static void decode_group(float *og, const float *qg, const float *k, const float *v, int len, int ld, int hd,
                         int group, float scale, int avx2, float *ws) {
    float *S = ws, *kt = S + DECODE_BK, *O = kt + (size_t)DECODE_BK * hd, *acc = O + (size_t)group * hd;
    float *m = acc + hd, *l = m + group;
    memset(O, 0, sizeof(float) * group * hd);
    for (int i = 0; i < group; i++) m[i] = -INFINITY, l[i] = 0;
    for (int j0 = 0; j0 < len; j0 += DECODE_BK) {
        const int nk = len - j0 < DECODE_BK ? len - j0 : DECODE_BK;
        decode_pack_keys(kt, k + (size_t)j0 * ld, nk, ld, hd, avx2);
        for (int i = 0; i < group; i++) {
            float *Oi = O + (size_t)i * hd;
            decode_scores(S, qg + (size_t)i * hd, kt, nk, hd, scale);
            const float mx = gk_max(S, nk, m[i]), corr = gk_expf(m[i] - mx);
            decode_exp(S, mx, nk);
            l[i] = l[i] * corr + gk_sum(S, nk);
            m[i] = mx;
            if (corr != 1.0f)
                for (int d = 0; d < hd; d++) Oi[d] *= corr;
            decode_pv(Oi, acc, S, v + (size_t)j0 * ld, nk, ld, hd);
        }
    }
    for (int i = 0; i < group; i++) {
        const float inv = 1.0f / l[i];
        for (int d = 0; d < hd; d++) og[(size_t)i * hd + d] = O[(size_t)i * hd + d] * inv;
    }
}

void gk_attention_decode(float *out, const float *q, const float *k_new, const float *v_new,
                         float *const *k_caches, float *const *v_caches, const int32_t *kv_lens, int nseq,
                         int nh, int nkv, int hd, float scale) {
    const long units = (long)nseq * nkv;
    const int group = nh / nkv, ld = nkv * hd;
    if (units <= 0) return;
    const int nthreads = units < gk_threads() ? (int)units : gk_threads();
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    const int avx2 = __builtin_cpu_supports("avx2");
#else
    const int avx2 = 0;
#endif
#pragma omp parallel num_threads(nthreads)
    {
        const size_t fast = decode_ws_floats(hd, group), fallback = 48 * (size_t)hd + 48 * 64 + 96;
        float *ws = malloc(sizeof(float) * (hd <= DECODE_KC ? fast : fallback));
#pragma omp for schedule(static)
        for (long u = 0; u < units; u++) {
            const int s = (int)(u / nkv), g = (int)(u % nkv), len = kv_lens[s];
            float *kc = k_caches[s], *vc = v_caches[s];
            const size_t last = (size_t)(len - 1) * ld + (size_t)g * hd, row = (size_t)s * nkv * hd + (size_t)g * hd;
            if (k_new) memcpy(kc + last, k_new + row, sizeof(float) * hd);
            if (v_new) memcpy(vc + last, v_new + row, sizeof(float) * hd);
            const size_t qs = (size_t)s * nh * hd, qg = qs + (size_t)g * group * hd;
            if (hd <= DECODE_KC)
                decode_group(out + qg, q + qg, kc + (size_t)g * hd, vc + (size_t)g * hd, len, ld, hd, group, scale, avx2, ws);
            else
                for (int h = g * group; h < (g + 1) * group; h++)
                    gk_attention_forward_head(out + qs, q + qs, kc, vc, 1, len, nh, nkv, hd, scale, h, ws);
        }
        free(ws);
    }
}
