//go:build !rocm

/* attention_decode.c — one decode step of attention for many sequences in one call.
 *
 * Every row brings one new query token and its own KV cache (its own buffer and length), so the
 * batch cannot be a [B, L, heads, hd] tensor. Several rows may be consecutive tokens of one
 * sequence (a short appended chunk, such as a tool's answer): they name the same cache with
 * lengths one apart, and since every new key and value row is written before any row attends, each
 * sees the ones before it. The rows are cut into chunks of neighbours whose caches begin with the
 * same rows (the caller says how many: a shared prompt, such as a template's system turn copied
 * from one cache into the others). One OpenMP region first writes every row's new key and value
 * (when given), then covers every (chunk, kv head) pair: each transposes each shared key tile once
 * for the whole chunk, and attends every query head of its group with the
 * forward's arithmetic, in the same order but without packing one query row into SGEMM panels. The
 * shared rows are read once per chunk instead of once per sequence: most of a long-prompt decode
 * step's memory traffic. Each query's arithmetic order is fixed, so results are the same bits for any
 * thread count and any chunking, and the same bits as gk_attention_forward per sequence (a decode
 * step agrees with a prefill exactly). */
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

/* decode_scores for four queries at once (a shared tile of a chunk): four independent chains,
 * each the same sequential multiply-add chain over hd as decode_scores. Rows of S are DECODE_BK apart. */
GK_VECTORIZED
static void decode_scores4(float *restrict S, const float *const *qs, const float *restrict kt, int nk, int hd,
                           float scale) {
    const float *q0 = qs[0], *q1 = qs[1], *q2 = qs[2], *q3 = qs[3];
    for (int j = 0; j < nk; j += 8) {
        const int n = nk - j < 8 ? nk - j : 8;
        const float *blk = kt + (size_t)j * hd;
        decode_v8 a0 = {0, 0, 0, 0, 0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
        for (int d = 0; d < hd; d++) {
            const decode_v8 k = *(const decode_v8u *)(blk + d * 8);
            decode_v8 qd = q0[d] - (decode_v8){0};
            a0 += qd * k;
            qd = q1[d] - (decode_v8){0};
            a1 += qd * k;
            qd = q2[d] - (decode_v8){0};
            a2 += qd * k;
            qd = q3[d] - (decode_v8){0};
            a3 += qd * k;
        }
        a0 = a0 * scale, a1 = a1 * scale, a2 = a2 * scale, a3 = a3 * scale;
        for (int l = 0; l < n; l++)
            S[j + l] = a0[l], S[DECODE_BK + j + l] = a1[l], S[2 * DECODE_BK + j + l] = a2[l], S[3 * DECODE_BK + j + l] = a3[l];
    }
}

/* decode_pv for four queries at once: per query and dimension the same chain over the keys. */
GK_VECTORIZED
static void decode_pv4(float *const *os, float *restrict acc, const float *restrict S, const float *restrict v, int nk,
                       int ld, int hd) {
    float *restrict a0 = acc, *restrict a1 = acc + hd, *restrict a2 = acc + 2 * hd, *restrict a3 = acc + 3 * hd;
    for (int d = 0; d < 4 * hd; d++) acc[d] = 0;
    for (int j = 0; j < nk; j++) {
        const float p0 = S[j], p1 = S[DECODE_BK + j], p2 = S[2 * DECODE_BK + j], p3 = S[3 * DECODE_BK + j];
        const float *restrict vj = v + (size_t)j * ld;
        for (int d = 0; d < hd; d++) {
            a0[d] += p0 * vj[d];
            a1[d] += p1 * vj[d];
            a2[d] += p2 * vj[d];
            a3[d] += p3 * vj[d];
        }
    }
    for (int x = 0; x < 4; x++) {
        float *restrict o = os[x];
        const float *restrict a = acc + (size_t)x * hd;
        for (int d = 0; d < hd; d++) o[d] = a[d] + o[d];
    }
}

/* The online softmax between a query's scores S (nk of them) and its products: running max m,
 * sum l, and the output row Oi rescaled, as attention_forward_tile does for one row. Not cloned,
 * like attention_forward_tile, so its scalar arithmetic compiles the same way. */
static void decode_softmax(float *restrict Oi, float *m, float *l, float *S, int nk, int hd) {
    const float mx = gk_max(S, nk, *m), corr = gk_expf(*m - mx);
    decode_exp(S, mx, nk);
    *l = *l * corr + gk_sum(S, nk);
    *m = mx;
    if (corr != 1.0f)
        for (int d = 0; d < hd; d++) Oi[d] *= corr;
}

/* One query's update with one packed key tile: scores, softmax, products. */
static void decode_update(float *restrict Oi, float *mi, float *li, float *acc, float *S, const float *qi,
                          const float *kt, const float *v, int nk, int ld, int hd, float scale) {
    decode_scores(S, qi, kt, nk, hd, scale);
    decode_softmax(Oi, mi, li, S, nk, hd);
    decode_pv(Oi, acc, S, v, nk, ld, hd);
}

/* decode_update for four queries over one shared tile: their scores and products four at a time,
 * the softmax per query between them. S holds 4 tile rows, acc 4 * hd floats. */
static void decode_update4(float *const *Os, float *m, float *l, float *acc, float *S, const float *const *qs,
                           const float *kt, const float *v, int nk, int ld, int hd, float scale) {
    decode_scores4(S, qs, kt, nk, hd, scale);
    for (int x = 0; x < 4; x++) decode_softmax(Os[x], m + x, l + x, S + (size_t)x * DECODE_BK, nk, hd);
    decode_pv4(Os, acc, S, v, nk, ld, hd);
}

/* Workspace of decode_chunk for up to nq queries: S and acc for four queries, kt, then O, m, l
 * per query. */
static size_t decode_ws_floats(int hd, int nq) {
    return 4 * DECODE_BK + (size_t)DECODE_BK * hd + 4 * (size_t)hd + (size_t)nq * (hd + 2);
}

/* The group heads of kv head g of sequences s0..s1-1 (a chunk) over their caches, the first
 * `shared` rows of which (a multiple of the key tile) hold the same bits in every cache of the
 * chunk: those tiles are transposed once, from s0's cache, and every query of the chunk attends
 * them; then each sequence goes on over its own tiles. Per query: attention_forward_tile for one
 * query row, tile by tile from key 0, with the tile products computed in place instead of through
 * packed SGEMM panels (which cost more than the products for one row). Each query sees the same
 * operations in the same order as it would alone, so the same bits whatever the chunk.
 * ws holds decode_ws_floats(hd, (s1 - s0) * group). */
/* Query x of a chunk starting at sequence s0: head x % group of kv head g's group of sequence
 * s0 + x / group (goff = g * hd). */
static inline const float *decode_query(const float *q, int s0, int x, int group, size_t goff, int nh, int hd) {
    return q + (size_t)(s0 + x / group) * nh * hd + goff * group + (size_t)(x % group) * hd;
}

static void decode_chunk(float *out, const float *q, float *const *kc, float *const *vc, const int32_t *lens,
                         int s0, int s1, int shared, int g, int nh, int ld, int hd, int group, float scale,
                         int avx2, float *ws) {
    const int nq = (s1 - s0) * group;
    const size_t goff = (size_t)g * hd;
    float *S = ws, *kt = S + 4 * DECODE_BK, *acc = kt + (size_t)DECODE_BK * hd, *O = acc + 4 * (size_t)hd;
    float *m = O + (size_t)nq * hd, *l = m + nq;
    memset(O, 0, sizeof(float) * nq * hd);
    for (int x = 0; x < nq; x++) m[x] = -INFINITY, l[x] = 0;
    for (int j0 = 0; j0 < shared; j0 += DECODE_BK) {
        decode_pack_keys(kt, kc[s0] + goff + (size_t)j0 * ld, DECODE_BK, ld, hd, avx2);
        const float *v = vc[s0] + goff + (size_t)j0 * ld;
        int x = 0;
        for (; x + 4 <= nq; x += 4) {
            const float *qs[4];
            float *Os[4];
            for (int y = 0; y < 4; y++)
                qs[y] = decode_query(q, s0, x + y, group, goff, nh, hd), Os[y] = O + (size_t)(x + y) * hd;
            decode_update4(Os, m + x, l + x, acc, S, qs, kt, v, DECODE_BK, ld, hd, scale);
        }
        for (; x < nq; x++)
            decode_update(O + (size_t)x * hd, m + x, l + x, acc, S, decode_query(q, s0, x, group, goff, nh, hd), kt, v,
                          DECODE_BK, ld, hd, scale);
    }
    for (int s = s0; s < s1; s++) {
        const int len = lens[s], x0 = (s - s0) * group;
        const float *qg = q + (size_t)s * nh * hd + goff * group;
        for (int j0 = shared; j0 < len; j0 += DECODE_BK) {
            const int nk = len - j0 < DECODE_BK ? len - j0 : DECODE_BK;
            decode_pack_keys(kt, kc[s] + goff + (size_t)j0 * ld, nk, ld, hd, avx2);
            const float *v = vc[s] + goff + (size_t)j0 * ld;
            for (int i = 0; i < group; i++)
                decode_update(O + (size_t)(x0 + i) * hd, m + x0 + i, l + x0 + i, acc, S, qg + (size_t)i * hd, kt, v, nk,
                              ld, hd, scale);
        }
        float *og = out + (size_t)s * nh * hd + goff * group;
        for (int i = 0; i < group; i++) {
            const float inv = 1.0f / l[x0 + i];
            for (int d = 0; d < hd; d++) og[(size_t)i * hd + d] = O[(size_t)(x0 + i) * hd + d] * inv;
        }
    }
}

/* Chunks: consecutive sequences that share at least one full key tile with the one before, at most
 * max_r of them; starts[c] is chunk c's first sequence (starts[nchunks] = nseq) and tiles[c] the
 * rows its sequences all share, rounded down to whole tiles. Returns the number of chunks. */
static int decode_chunks(int *starts, int *tiles, const int32_t *shared, int nseq, int max_r) {
    int n = 0;
    for (int s = 0; s < nseq; s++) {
        const int sh = shared && s > 0 ? shared[s] / DECODE_BK * DECODE_BK : 0;
        if (n > 0 && sh > 0 && s - starts[n - 1] < max_r) {
            if (s - starts[n - 1] == 1 || sh < tiles[n - 1]) tiles[n - 1] = sh;
            continue;
        }
        starts[n] = s, tiles[n] = 0, n++;
    }
    starts[n] = nseq;
    return n;
}

void gk_attention_decode(float *out, const float *q, const float *k_new, const float *v_new,
                         float *const *k_caches, float *const *v_caches, const int32_t *kv_lens,
                         const int32_t *shared, int nseq, int nh, int nkv, int hd, float scale) {
    const int group = nh / nkv, ld = nkv * hd;
    if (nseq <= 0) return;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    const int avx2 = __builtin_cpu_supports("avx2");
#else
    const int avx2 = 0;
#endif
    /* Chunks of up to max_r sequences, small enough to leave a few units per thread. */
    const int threads = gk_threads();
    int max_r = (int)(((long)nseq * nkv + 4L * threads - 1) / (4L * threads));
    if (max_r < 1 || hd > DECODE_KC || !shared) max_r = 1;
    if (max_r > 64) max_r = 64;
    int *starts = malloc(sizeof(int) * (2 * (size_t)nseq + 1)), *tiles = starts + nseq + 1;
    const int nchunks = decode_chunks(starts, tiles, shared, nseq, max_r);
    const long units = (long)nchunks * nkv;
    const int nthreads = units < threads ? (int)units : threads;
#pragma omp parallel num_threads(nthreads)
    {
        const size_t fast = decode_ws_floats(hd, max_r * group), fallback = 48 * (size_t)hd + 48 * 64 + 96;
        float *ws = malloc(sizeof(float) * (hd <= DECODE_KC ? fast : fallback));
        /* Every new row first: rows of one cache (the new tokens of one sequence) may fall in
         * different chunks, and each sees the rows before it. */
        if (k_new || v_new) {
#pragma omp for schedule(static)
            for (int s = 0; s < nseq; s++) {
                const size_t last = (size_t)(kv_lens[s] - 1) * ld, row = (size_t)s * ld;
                if (k_new) memcpy(k_caches[s] + last, k_new + row, sizeof(float) * ld);
                if (v_new) memcpy(v_caches[s] + last, v_new + row, sizeof(float) * ld);
            }
        }
#pragma omp for schedule(dynamic, 1)
        for (long u = 0; u < units; u++) {
            const int c = (int)(u / nkv), g = (int)(u % nkv), s0 = starts[c], s1 = starts[c + 1];
            if (hd <= DECODE_KC)
                decode_chunk(out, q, k_caches, v_caches, kv_lens, s0, s1, tiles[c], g, nh, ld, hd, group, scale, avx2, ws);
            else
                for (int s = s0; s < s1; s++) {
                    const size_t qs = (size_t)s * nh * hd;
                    for (int h = g * group; h < (g + 1) * group; h++)
                        gk_attention_forward_head(out + qs, q + qs, k_caches[s], v_caches[s], 1, kv_lens[s], nh, nkv, hd,
                                                  scale, h, ws);
                }
        }
        free(ws);
    }
    free(starts);
}
