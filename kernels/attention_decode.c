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
 * for the whole chunk (or reads the caller's key tiles), and attends every query head of its group
 * with the forward's arithmetic, in the same order but without packing one query row into SGEMM
 * panels. The
 * shared rows are read once per chunk instead of once per sequence: most of a long-prompt decode
 * step's memory traffic. Each query's arithmetic order is fixed, so results are the same bits for any
 * thread count and any chunking, and the same bits as gk_attention_forward per sequence (a decode
 * step agrees with a prefill exactly). A caller that keeps each cache's keys transposed already (key
 * tiles, gk_pack_key_tiles) saves the transposes: the kernel reads the tiles and writes the new rows
 * into them as well. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "cpu.h"

/* attention.c: the forward of one head for the queries of one sequence (Lq <= 48), on the calling
 * thread; ws holds gk_attention_head_ws_floats(hd) floats. The fallback for head dims above one
 * SGEMM K block. */
void gk_attention_forward_head(float *out, const float *q, const float *k, const float *v, int Lq, int Lk,
                               int nh, int nkv, int hd, float scale, int h, float *ws);
size_t gk_attention_head_ws_floats(int hd);

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
__attribute__((target("avx2"))) static void pack8_avx2(float *restrict blk, const float *const *rows, int hd) {
    int d = 0;
    for (; d + 8 <= hd; d += 8) gk_transpose8_avx2(blk + (size_t)d * 8, 8, rows, d);
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

/* decode_pack_keys for a bf16 cache: the same kt, each key widened (exactly) to float32. */
static void decode_pack_keys_bf16(float *restrict kt, const uint16_t *restrict k, int nk, int ld, int hd) {
    for (int j = 0; j < nk; j += 8) {
        const int n = nk - j < 8 ? nk - j : 8;
        float *blk = kt + (size_t)j * hd;
        for (int l = 0; l < 8; l++) {
            const uint16_t *row = k + (size_t)(j + (l < n ? l : 0)) * ld;
            for (int d = 0; d < hd; d++) blk[d * 8 + l] = gk_bf16_widen(row[d]);
        }
    }
}

/* Scores and products run several independent multiply-add chains at once, held in registers: one
 * chain alone waits on the latency of each multiply-add (a single query's score is a 32-long
 * chain for the tiny preset's heads), and accumulators kept in memory wait on their stores. Each
 * chain is still the forward's: a query's score for one key is a sequential multiply-add chain over
 * hd from 0, times scale (what the SGEMM microkernel computes for one output), and a query's
 * product for one dimension is a sequential chain over the tile's keys from 0, added to the output
 * at the end (the microkernel with beta = 1). The vector multiply-adds are written like the
 * microkernel's, so they fuse exactly where its do. Grouping chains changes no bits. */
typedef float decode_v8 __attribute__((vector_size(32)));
typedef float decode_v8u __attribute__((vector_size(32), aligned(4))); /* kt, S and rows need no alignment */

/* Loads of 8 keys or values (and of one, for the last dimensions) from a float32 cache or tile, or
 * from a bf16 one, widened exactly in registers: a bf16 cache gives the same bits as a float32
 * cache holding the same (rounded) values. Macros, like DECODE_STORE8. A bf16 vector is widened by
 * interleaving it with zeros (each value the high half of its float, little-endian): one vpermi2w
 * with AVX-512, where GCC 12 splits __builtin_convertvector's zero extension into five operations. */
typedef uint16_t decode_h8 __attribute__((vector_size(16)));
typedef uint16_t decode_h8u __attribute__((vector_size(16), aligned(2)));
#define DECODE_LOAD8_F32(p) (*(const decode_v8u *)(p))
#define DECODE_LOAD8_BF16(p)                                                                                       \
    ((decode_v8)__builtin_shufflevector((decode_h8){0}, (decode_h8)(*(const decode_h8u *)(p)), 0, 8, 0, 9, 0, 10, \
                                        0, 11, 0, 12, 0, 13, 0, 14, 0, 15))
#define DECODE_LOAD1_F32(p) (*(p))
#define DECODE_LOAD1_BF16(p) gk_bf16_widen(*(p))

/* The valid lanes of a block of 8 scores (n of them: a tile's last block may hold fewer keys). A
 * macro: a function taking a vector argument draws a note about its ABI from gcc. */
#define DECODE_STORE8(dst, a, n)                                      \
    do {                                                              \
        float *restrict dst_ = (dst);                                 \
        const decode_v8 a_ = (a);                                     \
        const int n_ = (n);                                           \
        if (n_ == 8)                                                  \
            *(decode_v8u *)dst_ = a_;                                 \
        else                                                          \
            for (int l_ = 0; l_ < n_; l_++) dst_[l_] = a_[l_];        \
    } while (0)

/* Scores of NQ queries against the nk keys of a packed tile, NB blocks of 8 keys at a time (NQ x NB
 * chains): block b of the tile is at kt + b * bstride, laid out [hd][8]; query x's scores go to
 * S + x * DECODE_BK. The blocks past the last group of NB go one at a time. */
#define DECODE_SCORES(NQ, NB, SUF, KT, LOAD8)                                                                     \
    GK_VECTORIZED static void decode_scores_##NQ##SUF(float *restrict S, const float *const *qs,                 \
                                                      const KT *restrict kt, size_t bstride, int nk, int hd,      \
                                                 float scale) {                                                   \
        const int nblk = (nk + 7) / 8;                                                                            \
        int b = 0;                                                                                                \
        for (; b + NB <= nblk; b += NB) {                                                                         \
            decode_v8 acc[NQ][NB];                                                                                \
            for (int x = 0; x < NQ; x++)                                                                          \
                for (int t = 0; t < NB; t++) acc[x][t] = (decode_v8){0, 0, 0, 0, 0, 0, 0, 0};                     \
            const KT *blk = kt + (size_t)b * bstride;                                                             \
            for (int d = 0; d < hd; d++) {                                                                        \
                decode_v8 k[NB];                                                                                  \
                for (int t = 0; t < NB; t++) k[t] = LOAD8(blk + (size_t)t * bstride + d * 8);                    \
                for (int x = 0; x < NQ; x++) {                                                                    \
                    const decode_v8 qd = qs[x][d] - (decode_v8){0};                                               \
                    for (int t = 0; t < NB; t++) acc[x][t] += qd * k[t];                                          \
                }                                                                                                 \
            }                                                                                                     \
            for (int x = 0; x < NQ; x++)                                                                          \
                for (int t = 0; t < NB; t++) {                                                                    \
                    const int j = (b + t) * 8;                                                                    \
                    DECODE_STORE8(S + (size_t)x * DECODE_BK + j, acc[x][t] * scale, nk - j < 8 ? nk - j : 8);     \
                }                                                                                                 \
        }                                                                                                         \
        for (int j = b * 8; j < nk; j += 8) {                                                                     \
            decode_v8 acc[NQ];                                                                                    \
            for (int x = 0; x < NQ; x++) acc[x] = (decode_v8){0, 0, 0, 0, 0, 0, 0, 0};                            \
            const KT *blk = kt + (size_t)(j / 8) * bstride;                                                       \
            for (int d = 0; d < hd; d++) {                                                                        \
                const decode_v8 k = LOAD8(blk + d * 8);                                                           \
                for (int x = 0; x < NQ; x++) {                                                                    \
                    const decode_v8 qd = qs[x][d] - (decode_v8){0};                                               \
                    acc[x] += qd * k;                                                                             \
                }                                                                                                 \
            }                                                                                                     \
            for (int x = 0; x < NQ; x++)                                                                          \
                DECODE_STORE8(S + (size_t)x * DECODE_BK + j, acc[x] * scale, nk - j < 8 ? nk - j : 8);            \
        }                                                                                                         \
    }

/* o_x += p_x v over the nk value rows (v rows ld apart) for NQ queries, NV vectors of dimensions at
 * a time (NQ x NV chains); p_x = S + x * DECODE_BK. Dimensions past the last group of NV vectors go
 * a vector at a time, then the rest padded to a vector. */
#define DECODE_PV(NQ, NV, SUF, VT, LOAD8, LOAD1)                                                                  \
    GK_VECTORIZED static void decode_pv_##NQ##SUF(float *const *os, const float *restrict S, const VT *restrict v, \
                                             int nk, int ld, int hd) {                                            \
        int d0 = 0;                                                                                               \
        for (; d0 + 8 * NV <= hd; d0 += 8 * NV) {                                                                 \
            decode_v8 acc[NQ][NV];                                                                                \
            for (int x = 0; x < NQ; x++)                                                                          \
                for (int t = 0; t < NV; t++) acc[x][t] = (decode_v8){0, 0, 0, 0, 0, 0, 0, 0};                     \
            for (int j = 0; j < nk; j++) {                                                                        \
                const VT *vj = v + (size_t)j * ld + d0;                                                           \
                decode_v8 vv[NV];                                                                                 \
                for (int t = 0; t < NV; t++) vv[t] = LOAD8(vj + 8 * t);                                          \
                for (int x = 0; x < NQ; x++) {                                                                    \
                    const decode_v8 p = S[(size_t)x * DECODE_BK + j] - (decode_v8){0};                            \
                    for (int t = 0; t < NV; t++) acc[x][t] += p * vv[t];                                          \
                }                                                                                                 \
            }                                                                                                     \
            for (int x = 0; x < NQ; x++)                                                                          \
                for (int t = 0; t < NV; t++) {                                                                    \
                    decode_v8u *o = (decode_v8u *)(os[x] + d0 + 8 * t);                                           \
                    *o = acc[x][t] + *o;                                                                          \
                }                                                                                                 \
        }                                                                                                         \
        for (; d0 + 8 <= hd; d0 += 8) {                                                                           \
            decode_v8 acc[NQ];                                                                                    \
            for (int x = 0; x < NQ; x++) acc[x] = (decode_v8){0, 0, 0, 0, 0, 0, 0, 0};                            \
            for (int j = 0; j < nk; j++) {                                                                        \
                const decode_v8 vv = LOAD8(v + (size_t)j * ld + d0);                                              \
                for (int x = 0; x < NQ; x++) {                                                                    \
                    const decode_v8 p = S[(size_t)x * DECODE_BK + j] - (decode_v8){0};                            \
                    acc[x] += p * vv;                                                                             \
                }                                                                                                 \
            }                                                                                                     \
            for (int x = 0; x < NQ; x++) {                                                                        \
                decode_v8u *o = (decode_v8u *)(os[x] + d0);                                                       \
                *o = acc[x] + *o;                                                                                 \
            }                                                                                                     \
        }                                                                                                         \
        if (d0 < hd) { /* the last hd % 8 dimensions in a zero-padded vector: scalar code here may be \
                        * vectorized across keys, splitting the multiply-adds */                          \
            const int rem = hd - d0;                                                                              \
            decode_v8 acc[NQ];                                                                                    \
            for (int x = 0; x < NQ; x++) acc[x] = (decode_v8){0, 0, 0, 0, 0, 0, 0, 0};                            \
            for (int j = 0; j < nk; j++) {                                                                        \
                decode_v8 vv = {0, 0, 0, 0, 0, 0, 0, 0};                                                          \
                for (int t = 0; t < rem; t++) vv[t] = LOAD1(v + (size_t)j * ld + d0 + t);                         \
                for (int x = 0; x < NQ; x++) {                                                                    \
                    const decode_v8 p = S[(size_t)x * DECODE_BK + j] - (decode_v8){0};                            \
                    acc[x] += p * vv;                                                                             \
                }                                                                                                 \
            }                                                                                                     \
            for (int x = 0; x < NQ; x++)                                                                          \
                for (int t = 0; t < rem; t++) os[x][d0 + t] = acc[x][t] + os[x][d0 + t];                          \
        }                                                                                                         \
    }

/* Chains per call: about eight, what two multiply-add units with a latency of four keep busy,
 * within AVX2's sixteen vector registers. */
DECODE_SCORES(1, 8, , float, DECODE_LOAD8_F32)
DECODE_SCORES(2, 4, , float, DECODE_LOAD8_F32)
DECODE_SCORES(3, 2, , float, DECODE_LOAD8_F32)
DECODE_SCORES(4, 2, , float, DECODE_LOAD8_F32)
DECODE_SCORES(1, 8, _bf16, uint16_t, DECODE_LOAD8_BF16)
DECODE_SCORES(2, 4, _bf16, uint16_t, DECODE_LOAD8_BF16)
DECODE_SCORES(3, 2, _bf16, uint16_t, DECODE_LOAD8_BF16)
DECODE_SCORES(4, 2, _bf16, uint16_t, DECODE_LOAD8_BF16)
DECODE_PV(1, 4, , float, DECODE_LOAD8_F32, DECODE_LOAD1_F32)
DECODE_PV(2, 4, , float, DECODE_LOAD8_F32, DECODE_LOAD1_F32)
DECODE_PV(3, 2, , float, DECODE_LOAD8_F32, DECODE_LOAD1_F32)
DECODE_PV(4, 2, , float, DECODE_LOAD8_F32, DECODE_LOAD1_F32)
DECODE_PV(1, 4, _bf16, uint16_t, DECODE_LOAD8_BF16, DECODE_LOAD1_BF16)
DECODE_PV(2, 4, _bf16, uint16_t, DECODE_LOAD8_BF16, DECODE_LOAD1_BF16)
DECODE_PV(3, 2, _bf16, uint16_t, DECODE_LOAD8_BF16, DECODE_LOAD1_BF16)
DECODE_PV(4, 2, _bf16, uint16_t, DECODE_LOAD8_BF16, DECODE_LOAD1_BF16)

/* attention.c's exp_row with every key visible (sub is the row's maximum or above it). */
GK_VECTORIZED
static void decode_exp(float *row, float sub, int n) {
    for (int j = 0; j < n; j++) row[j] = gk_expf_nonpos(row[j] - sub);
}

/* For TestExpfNonpos: how many float bit patterns in [from, to] decode_exp (gk_expf_nonpos in
 * vectorized loops) maps to other bits than gk_expf does. */
GK_VECTORIZED
static void expf_reference(float *row, int n) {
    for (int j = 0; j < n; j++) row[j] = gk_expf(row[j]);
}

long gk_expf_nonpos_mismatches(uint32_t from, uint32_t to) {
    enum { N = 4096 };
    long bad = 0;
    float a[N], b[N];
    for (uint64_t base = from; base <= to; base += N) {
        const int n = to - base + 1 < N ? (int)(to - base + 1) : N;
        for (int i = 0; i < n; i++) {
            const uint32_t u = (uint32_t)(base + i);
            memcpy(a + i, &u, 4);
            b[i] = a[i];
        }
        expf_reference(a, n);
        decode_exp(b, 0.0f, n);
        if (memcmp(a, b, sizeof(float) * n) != 0)
            for (int i = 0; i < n; i++) bad += memcmp(a + i, b + i, 4) != 0;
    }
    return bad;
}

/* The online softmax between a query's scores S (nk of them) and its products: running max m,
 * sum l, and the output row Oi rescaled, as attention_forward_tile does for one row. Not cloned,
 * like attention_forward_tile, so its scalar arithmetic compiles the same way. */
static void decode_softmax(float *restrict Oi, float *m, float *l, float *S, int nk, int hd) {
    const float mx = gk_max(S, nk, *m), corr = gk_expf(*m - mx);
    decode_exp(S, mx, nk);
    *l = gk_rounded(*l * corr) + gk_sum(S, nk);
    *m = mx;
    if (corr != 1.0f)
        for (int d = 0; d < hd; d++) Oi[d] *= corr;
}

/* The update of nq queries (at most 4) with one packed key tile: their scores, each one's softmax,
 * their products. S holds 4 tile rows. The tile's keys are bf16 when kbf, the values when vbf. */
static void decode_update(int nq, float *const *Os, float *m, float *l, float *S, const float *const *qs,
                          const void *kt, int kbf, size_t bstride, const void *v, int vbf, int nk, int ld, int hd,
                          float scale) {
    const float *kf = kt, *vf = v;
    const uint16_t *kh = kt, *vh = v;
    switch (nq + 4 * kbf) {
    case 1: decode_scores_1(S, qs, kf, bstride, nk, hd, scale); break;
    case 2: decode_scores_2(S, qs, kf, bstride, nk, hd, scale); break;
    case 3: decode_scores_3(S, qs, kf, bstride, nk, hd, scale); break;
    case 4: decode_scores_4(S, qs, kf, bstride, nk, hd, scale); break;
    case 5: decode_scores_1_bf16(S, qs, kh, bstride, nk, hd, scale); break;
    case 6: decode_scores_2_bf16(S, qs, kh, bstride, nk, hd, scale); break;
    case 7: decode_scores_3_bf16(S, qs, kh, bstride, nk, hd, scale); break;
    default: decode_scores_4_bf16(S, qs, kh, bstride, nk, hd, scale);
    }
    for (int x = 0; x < nq; x++) decode_softmax(Os[x], m + x, l + x, S + (size_t)x * DECODE_BK, nk, hd);
    switch (nq + 4 * vbf) {
    case 1: decode_pv_1(Os, S, vf, nk, ld, hd); break;
    case 2: decode_pv_2(Os, S, vf, nk, ld, hd); break;
    case 3: decode_pv_3(Os, S, vf, nk, ld, hd); break;
    case 4: decode_pv_4(Os, S, vf, nk, ld, hd); break;
    case 5: decode_pv_1_bf16(Os, S, vh, nk, ld, hd); break;
    case 6: decode_pv_2_bf16(Os, S, vh, nk, ld, hd); break;
    case 7: decode_pv_3_bf16(Os, S, vh, nk, ld, hd); break;
    default: decode_pv_4_bf16(Os, S, vh, nk, ld, hd);
    }
}
/* Workspace of decode_chunk for up to nq queries: S for four queries, kt, then O, m, l per query. */
static size_t decode_ws_floats(int hd, int nq) {
    return 4 * DECODE_BK + (size_t)DECODE_BK * hd + (size_t)nq * (hd + 2);
}

/* Query x of a chunk starting at sequence s0: head x % group of kv head g's group of sequence
 * s0 + x / group (goff = g * hd). */
static inline const float *decode_query(const float *q, int s0, int x, int group, size_t goff, int nh, int hd) {
    return q + (size_t)(s0 + x / group) * nh * hd + goff * group + (size_t)(x % group) * hd;
}

/* Element i of a cache or tile array of elements esz bytes wide (4: float32, 2: bf16). */
static inline const void *decode_at(const void *p, size_t i, size_t esz) { return (const char *)p + i * esz; }

/* The nk keys of kv head g (goff = g * hd) from key j0 of sequence s's cache, as blocks of 8
 * transposed keys: read from the cache's key tiles when the caller keeps them (blocks 8 * ld
 * apart; bf16 in a bf16 cache), else transposed into kt (blocks 8 * hd apart, float32). */
static const void *decode_tile(float *kt, void *const *kc, void *const *kts, int s, int j0, int nk, size_t goff,
                               int ld, int hd, int avx2, size_t esz) {
    if (kts) return decode_at(kts[s], (size_t)j0 * ld + goff * 8, esz);
    if (esz == 2)
        decode_pack_keys_bf16(kt, (const uint16_t *)kc[s] + goff + (size_t)j0 * ld, nk, ld, hd);
    else
        decode_pack_keys(kt, (const float *)kc[s] + goff + (size_t)j0 * ld, nk, ld, hd, avx2);
    return kt;
}

/* A sequence's own tiles come from memory (a decode step's caches outgrow the cache levels: 64
 * sequences of 97 keys hold 19 MB a layer for small), as 2 KB runs 8 KB apart (a head's share of
 * each 8-key block) and hd-float rows ld apart, which the hardware prefetchers follow poorly. So
 * each tile is asked for into L1 as its scores start (the values arrive while the scores run, the
 * later key blocks while the first ones do), and the next tile into L2 (it arrives while this one
 * runs). Keys are fetched where they are read from the caches' tiles; a tile transposed into the
 * workspace is in cache already. A shared prefix's tiles are not fetched: every query of the chunk
 * reads them, so they are computed on, not waited for (fetching them cost 5% there). Prefetches
 * change no result. Always inlined: GCC takes a function that only prefetches for one without
 * effects and drops the calls. */
/* A prefetch into L1 (to_l1) or L2; the locality has to be a constant at each builtin. */
#define DECODE_FETCH(p, to_l1) ((to_l1) ? __builtin_prefetch((p), 0, 3) : __builtin_prefetch((p), 0, 2))

/* The nk keys (blocks of 8 bstride elements apart from k; none when k is NULL) and value rows (ld
 * apart from v) of one tile, into L1 or L2; elements of esz bytes, a line of 64 bytes a fetch. */
static inline __attribute__((always_inline)) void decode_prefetch_tile(const char *k, size_t bstride,
                                                                       const char *v, int nk, int ld, int hd,
                                                                       size_t esz, int to_l1) {
    const int line = (int)(64 / esz);
    for (int j = 0; j < nk; j++)
        for (int d = 0; d < hd; d += line) DECODE_FETCH(v + ((size_t)j * ld + d) * esz, to_l1);
    for (int b = 0; k && b < (nk + 7) / 8; b++)
        for (int d = 0; d < hd * 8; d += line) DECODE_FETCH(k + ((size_t)b * bstride + d) * esz, to_l1);
}

/* The tile about to be read (its nk keys at k, NULL when they are not read from the caches' tiles,
 * and its values at v) into L1, and the up to DECODE_BK keys after it (rest of them left in the
 * sequence) into L2. */
static inline __attribute__((always_inline)) void decode_prefetch(const void *k, size_t bstride, const void *v,
                                                                  int nk, int rest, int ld, int hd, size_t esz) {
    const char *kb = k, *vb = v;
    decode_prefetch_tile(kb, bstride, vb, nk, ld, hd, esz, 1);
    if (rest > 0)
        decode_prefetch_tile(kb ? kb + (size_t)DECODE_BK / 8 * bstride * esz : NULL, bstride,
                             vb + (size_t)DECODE_BK * ld * esz, rest < DECODE_BK ? rest : DECODE_BK, ld, hd, esz, 0);
}

/* The group heads of kv head g of sequences s0..s1-1 (a chunk) over their caches, the first
 * `shared` rows of which (a multiple of the key tile) hold the same bits in every cache of the
 * chunk: those tiles are transposed once, from s0's cache, and every query of the chunk attends
 * them, four at a time; then each sequence goes on over its own tiles, its group's queries
 * together. Per query: attention_forward_tile for one query row, tile by tile from key 0, with the
 * tile products computed in place instead of through packed SGEMM panels (which cost more than the
 * products for one row). Each query sees the same operations in the same order as it would alone,
 * so the same bits whatever the chunk. ws holds decode_ws_floats(hd, (s1 - s0) * group). */
static void decode_chunk(float *out, const float *q, void *const *kc, void *const *vc, void *const *kts,
                         const int32_t *lens, int s0, int s1, int shared, int g, int nh, int ld, int hd, int group,
                         float scale, int avx2, int bf, float *ws) {
    const int nq = (s1 - s0) * group, kbf = bf && kts;
    const size_t esz = bf ? 2 : 4;
    const size_t goff = (size_t)g * hd, bstride = kts ? 8 * (size_t)ld : 8 * (size_t)hd;
    float *S = ws, *kt = S + 4 * DECODE_BK, *O = kt + (size_t)DECODE_BK * hd;
    float *m = O + (size_t)nq * hd, *l = m + nq;
    memset(O, 0, sizeof(float) * nq * hd);
    for (int x = 0; x < nq; x++) m[x] = -INFINITY, l[x] = 0;
    const float *qs[4];
    float *Os[4];
    for (int j0 = 0; j0 < shared; j0 += DECODE_BK) {
        const void *kj = decode_tile(kt, kc, kts, s0, j0, DECODE_BK, goff, ld, hd, avx2, esz);
        const void *v = decode_at(vc[s0], goff + (size_t)j0 * ld, esz);
        for (int x = 0; x < nq; x += 4) {
            const int n = nq - x < 4 ? nq - x : 4;
            for (int y = 0; y < n; y++)
                qs[y] = decode_query(q, s0, x + y, group, goff, nh, hd), Os[y] = O + (size_t)(x + y) * hd;
            decode_update(n, Os, m + x, l + x, S, qs, kj, kbf, bstride, v, bf, DECODE_BK, ld, hd, scale);
        }
    }
    for (int s = s0; s < s1; s++) {
        const int len = lens[s], x0 = (s - s0) * group;
        const float *qg = q + (size_t)s * nh * hd + goff * group;
        for (int j0 = shared; j0 < len; j0 += DECODE_BK) {
            const int nk = len - j0 < DECODE_BK ? len - j0 : DECODE_BK;
            const void *kj = decode_tile(kt, kc, kts, s, j0, nk, goff, ld, hd, avx2, esz);
            const void *v = decode_at(vc[s], goff + (size_t)j0 * ld, esz);
            decode_prefetch(kts ? kj : NULL, bstride, v, nk, len - j0 - nk, ld, hd, esz);
            for (int i = 0; i < group; i += 4) {
                const int n = group - i < 4 ? group - i : 4;
                for (int y = 0; y < n; y++) qs[y] = qg + (size_t)(i + y) * hd, Os[y] = O + (size_t)(x0 + i + y) * hd;
                decode_update(n, Os, m + x0 + i, l + x0 + i, S, qs, kj, kbf, bstride, v, bf, nk, ld, hd, scale);
            }
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

/* Row p of a cache's keys (ld floats) into its key tiles: block p / 8, lane p % 8. */
static inline void decode_tile_row(float *restrict tiles, const float *restrict row, size_t p, int ld) {
    float *blk = tiles + p / 8 * 8 * (size_t)ld + p % 8;
    for (int i = 0; i < ld; i++) blk[(size_t)i * 8] = row[i];
}

void gk_pack_key_tiles(float *tiles, const float *keys, int from, int to, int ld) {
    for (int p = from; p < to; p++) decode_tile_row(tiles, keys + (size_t)p * ld, (size_t)p, ld);
}

/* decode_tile_row and gk_pack_key_tiles for bf16 keys and tiles. */
static inline void decode_tile_row_bf16(uint16_t *restrict tiles, const uint16_t *restrict row, size_t p, int ld) {
    uint16_t *blk = tiles + p / 8 * 8 * (size_t)ld + p % 8;
    for (int i = 0; i < ld; i++) blk[(size_t)i * 8] = row[i];
}

void gk_pack_key_tiles_bf16(uint16_t *tiles, const uint16_t *keys, int from, int to, int ld) {
    for (int p = from; p < to; p++) decode_tile_row_bf16(tiles, keys + (size_t)p * ld, (size_t)p, ld);
}

/* gk_attention_decode's work: the new rows into the caches, then the (chunk, kv head) units, shared
 * out among the threads of the region that calls it (or all done on the calling thread outside one). */
static void decode_team(float *out, const float *q, const float *k_new, const float *v_new, void *const *k_caches,
                        void *const *v_caches, void *const *k_tiles, const int32_t *kv_lens, const int *starts,
                        const int *tiles, long units, int max_r, int nseq, int nh, int nkv, int hd, float scale,
                        int avx2, int bf) {
    const int group = nh / nkv, ld = nkv * hd;
    const size_t fast = decode_ws_floats(hd, max_r * group), fallback = gk_attention_head_ws_floats(hd);
    /* Kept per thread between steps, 64-byte aligned (the fallback packs tiles for the microkernel). */
    float *ws = gk_scratch(GK_SCRATCH_ATTN_WS, hd <= DECODE_KC ? fast : fallback);
    /* Every new row first: rows of one cache (the new tokens of one sequence) may fall in
     * different chunks, and each sees the rows before it. */
    if (k_new || v_new) {
#pragma omp for schedule(static)
        for (int s = 0; s < nseq; s++) {
            const size_t last = (size_t)(kv_lens[s] - 1) * ld, row = (size_t)s * ld;
            if (bf) { /* rounded to bf16 (nearest even) as they are stored */
                uint16_t *kr = (uint16_t *)k_caches[s] + last, *vr = (uint16_t *)v_caches[s] + last;
                if (k_new)
                    for (int i = 0; i < ld; i++) kr[i] = gk_bf16_round(k_new[row + i]);
                if (k_new && k_tiles) decode_tile_row_bf16(k_tiles[s], kr, (size_t)kv_lens[s] - 1, ld);
                if (v_new)
                    for (int i = 0; i < ld; i++) vr[i] = gk_bf16_round(v_new[row + i]);
                continue;
            }
            if (k_new) memcpy((float *)k_caches[s] + last, k_new + row, sizeof(float) * ld);
            if (k_new && k_tiles) decode_tile_row(k_tiles[s], k_new + row, (size_t)kv_lens[s] - 1, ld);
            if (v_new) memcpy((float *)v_caches[s] + last, v_new + row, sizeof(float) * ld);
        }
    }
    /* A thread takes every kv head of a chunk in turn when there are chunks enough to share out
     * (four a thread): a head's runs of each key block and value row lie beside the next head's,
     * so one core reads whole blocks and rows, which its prefetchers then follow; alternating heads
     * between the threads split each line's neighbours across two cores. */
    const long per = units >= 4L * nkv * omp_get_num_threads() ? nkv : 1;
#pragma omp for schedule(dynamic, per)
    for (long u = 0; u < units; u++) {
        const int c = (int)(u / nkv), g = (int)(u % nkv), s0 = starts[c], s1 = starts[c + 1];
        if (!ws)
            gk_set_error("attention decode: out of memory");
        else if (hd <= DECODE_KC)
            decode_chunk(out, q, k_caches, v_caches, k_tiles, kv_lens, s0, s1, tiles[c], g, nh, ld, hd, group, scale, avx2,
                         bf, ws);
        else if (bf)
            gk_set_error("attention decode: a bf16 cache with a head dim over 384");
        else
            for (int s = s0; s < s1; s++) {
                const size_t qs = (size_t)s * nh * hd;
                for (int h = g * group; h < (g + 1) * group; h++)
                    gk_attention_forward_head(out + qs, q + qs, (const float *)k_caches[s], (const float *)v_caches[s], 1,
                                              kv_lens[s], nh, nkv, hd, scale, h, ws);
            }
    }
}

/* Chunks of up to max_r sequences, small enough to leave a few units per thread; *units the
 * (chunk, kv head) units. starts holds 2 nseq + 1 ints. */
static int decode_plan(int *starts, int *max_r_out, long *units, const int32_t *shared, int nseq, int nkv, int hd) {
    const int threads = gk_threads();
    int max_r = (int)(((long)nseq * nkv + 4L * threads - 1) / (4L * threads));
    if (max_r < 1 || hd > DECODE_KC || !shared) max_r = 1;
    if (max_r > 64) max_r = 64;
    const int nchunks = decode_chunks(starts, starts + nseq + 1, shared, nseq, max_r);
    *max_r_out = max_r;
    *units = (long)nchunks * nkv;
    return nchunks;
}

static int decode_avx2(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
#else
    return 0;
#endif
}

void gk_attention_decode(float *out, const float *q, const float *k_new, const float *v_new,
                         void *const *k_caches, void *const *v_caches, void *const *k_tiles, const int32_t *kv_lens,
                         const int32_t *shared, int nseq, int nh, int nkv, int hd, float scale, int kv_dt) {
    if (nseq <= 0) return;
    const int avx2 = decode_avx2(), threads = gk_threads();
    int *starts = malloc(sizeof(int) * (2 * (size_t)nseq + 1)), *tiles = starts + nseq + 1, max_r;
    long units;
    decode_plan(starts, &max_r, &units, shared, nseq, nkv, hd);
    /* A step of a few short sequences is less work than waking a second thread: the calling thread
     * does it all, outside OpenMP (GK_SERIAL_WORK, GK_PARALLEL_FOR). */
    long work = 0;
    for (int s = 0; s < nseq; s++) work += 2L * kv_lens[s] * nh * hd;
    const int nthreads = work < GK_SERIAL_WORK ? 1 : units < threads ? (int)units : threads;
    GK_PARALLEL(nthreads, decode_team(out, q, k_new, v_new, k_caches, v_caches, k_tiles, kv_lens, starts, tiles, units,
                                      max_r, nseq, nh, nkv, hd, scale, avx2, kv_dt == GK_BF16));
    free(starts);
}

/* gk_attention_decode's work shared out among the threads of the region that calls it (each
 * thread calls it; decode_layer.c): the same units and the same bits. Ends at a barrier. */
void gk_attention_decode_team(float *out, const float *q, const float *k_new, const float *v_new,
                              void *const *k_caches, void *const *v_caches, void *const *k_tiles,
                              const int32_t *kv_lens, const int32_t *shared, int nseq, int nh, int nkv, int hd,
                              float scale, int kv_dt) {
    if (nseq <= 0) return;
    int starts[2 * nseq + 1], max_r; /* a decode layer's rows: one MC block, a few hundred at most */
    long units;
    decode_plan(starts, &max_r, &units, shared, nseq, nkv, hd);
    decode_team(out, q, k_new, v_new, k_caches, v_caches, k_tiles, kv_lens, starts, starts + nseq + 1, units, max_r,
                nseq, nh, nkv, hd, scale, decode_avx2(), kv_dt == GK_BF16);
}
