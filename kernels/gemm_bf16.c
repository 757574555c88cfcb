/* gemm_bf16.c — GEMM in bf16 arithmetic: operands rounded to bf16 (from fp32 or bf16 storage),
 * products summed in fp32.
 *
 * The blocking is the SGEMM's (matmul.c): C cut into work units that pack their own B slice,
 * taken dynamically by the threads; per KC-deep slice of K, B packed into NR-column panels and
 * each MC-row block of A into MR-row panels; every element of C sees the same K slices whatever the
 * thread count, so the bits do not depend on it.
 *
 * Two kernels:
 *   - bf16-avx512 (AVX-512 BF16): panels of bf16 pairs along K (a 32-bit word holds k = 2p in its
 *     low half, 2p + 1 in its high one), a 12 x 32 microkernel of vdpbf16ps, which adds both
 *     products of a pair into an fp32 lane: twice the multiply-adds of an fp32 FMA per instruction,
 *     and half the bytes per packed element.
 *   - f32-<SGEMM kernel> (every other CPU): the same bf16 values widened to fp32 in the packed
 *     panels, multiplied by the SGEMM microkernel. Each pair is laid out odd element first, the
 *     order in which vdpbf16ps adds a pair's products (Intel SDM), and a product of two bf16 values
 *     is exact in fp32, so both kernels round the same sums at the same places: the same bits but
 *     for subnormal values, which vdpbf16ps takes as zero (TestGEMMBF16KernelsAgree). */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "cpu.h"
#include "sgemm.h"

#ifndef GK_BF16_KC
#define GK_BF16_KC 512 /* K per slice, even: a 32-column B panel of bf16 pairs is 32 KB */
#endif
enum { BKC = GK_BF16_KC, BNC_UNIT = 1024, DP_MR = 12, DP_NR = 32 };

/* The K slice of a product with K-deep sums: K cut into the fewest slices of at most BKC + BKC/16,
 * equal but for the last, even. K = 1536 or 4096 gives slices of 512, but K = 1048 (a chunk of
 * tokens in a weight gradient) two of 524 instead of 512, 512 and 24: a slice costs a pass over C
 * and, that short, kernel calls with little to sum. A function of K alone, so a row of C gets the
 * same bits whatever M, N or the thread count are. */
static int kstep(int K) {
    const int most = BKC + BKC / 16, n = (K + most - 1) / most;
    return n <= 1 ? K + (K & 1) : ((K + n - 1) / n + 1) & ~1;
}

/* ---- packing ------------------------------------------------------------------------------ */

enum { PACK_RUN = 64 };
#ifndef GK_PACK_PF
#define GK_PACK_PF 1
#endif

/* Pair p of an op(X) row as 32-bit bf16 pairs (low half k = 2p), or two widened floats odd first. */
static inline __attribute__((always_inline)) void put_pair(void *dst, const int f32, size_t p, int W, int i,
                                                           uint16_t lo, uint16_t hi) {
    if (f32) {
        ((float *)dst)[2 * p * W + i] = gk_bf16_widen(hi);
        ((float *)dst)[(2 * p + 1) * W + i] = gk_bf16_widen(lo);
    } else {
        ((uint32_t *)dst)[p * W + i] = (uint32_t)lo | (uint32_t)hi << 16;
    }
}

/* op(X)[r0:r0+rows, p0:p0+kc] into panels of W rows (zero-padded to W), pair p of row i at
 * dst[panel][p * W + i]: as 32-bit pairs (vdpbf16ps) when f32 is 0, else as two widened floats,
 * odd element first, at dst[panel][2p * W + i] and [(2p + 1) * W + i]. The element loop is the
 * same for A (W = MR) and for B (W = NR, X = Bᵀ: op(B)[k][n] is row n of Bᵀ). */
static inline __attribute__((always_inline)) void pack_panels(void *dst, const void *X, const int dt, int ld,
                                                              const int trans, int r0, int rows, int p0, int kc,
                                                              const int W, const int f32) {
    const int kcp = (kc + 1) / 2, full = kc / 2;
    const size_t panel = (size_t)W * kcp * (f32 ? 8 : 4); /* bytes */
    if (trans) {
        /* X is [k][r]: rows 2p and 2p + 1 of X give pair p of every column. A pair at a time over
         * all the panels, so that each source row is read once, in order, as a whole (panel by
         * panel, a weight gradient's transposed operands were read W columns of a row at a time,
         * 2 x kc rows apart, and packing took ~18% of the product); the next pairs' rows are
         * fetched PACK_AHEAD pairs ahead. */
        enum { PACK_AHEAD = 4 };
        const int np = (rows + W - 1) / W, esz = dt ? 2 : 4;
        for (int p = 0; p < kcp; p++) {
            const size_t at = ((size_t)p0 + 2 * p) * (size_t)ld + r0;
            if (GK_PACK_PF && p + PACK_AHEAD < full) {
                const char *r = (const char *)X + (at + (size_t)2 * PACK_AHEAD * ld) * esz;
                for (int b = 0; b < rows * esz; b += 64) {
                    __builtin_prefetch(r + b);
                    __builtin_prefetch(r + (size_t)ld * esz + b);
                }
            }
            for (int q = 0; q < np; q++) {
                void *d = (char *)dst + q * panel;
                const size_t a = at + (size_t)q * W;
                if (p < full && rows - q * W >= W) { /* a whole panel: W a constant, the loop vectorizes */
                    for (int i = 0; i < W; i++) put_pair(d, f32, p, W, i, gk_bf16_at(X, dt, a + i), gk_bf16_at(X, dt, a + ld + i));
                    continue;
                }
                const int n = rows - q * W < W ? rows - q * W : W;
                for (int i = 0; i < n; i++)
                    put_pair(d, f32, p, W, i, gk_bf16_at(X, dt, a + i), p < full ? gk_bf16_at(X, dt, a + ld + i) : 0);
                for (int i = n; i < W; i++) put_pair(d, f32, p, W, i, 0, 0);
            }
        }
        return;
    }
    for (int ir = 0; ir < rows; ir += W, dst = (char *)dst + panel) {
        const int n = rows - ir < W ? rows - ir : W;
        /* rows contiguous along k: row by row */
        for (int i = 0; i < n; i++) {
            const size_t at = ((size_t)r0 + ir + i) * (size_t)ld + p0;
            /* pairs of a stretch of the row first (a loop that vectorizes), then spread W apart */
            for (int q0 = 0; q0 < full; q0 += PACK_RUN) {
                const int cnt = full - q0 < PACK_RUN ? full - q0 : PACK_RUN;
                uint16_t lo[PACK_RUN], hi[PACK_RUN];
                for (int q = 0; q < cnt; q++) {
                    lo[q] = gk_bf16_at(X, dt, at + 2 * (q0 + q));
                    hi[q] = gk_bf16_at(X, dt, at + 2 * (q0 + q) + 1);
                }
                for (int q = 0; q < cnt; q++) put_pair(dst, f32, q0 + q, W, i, lo[q], hi[q]);
            }
            if (full < kcp) put_pair(dst, f32, full, W, i, gk_bf16_at(X, dt, at + 2 * full), 0);
        }
        for (int p = 0; p < kcp; p++)
            for (int i = n; i < W; i++) put_pair(dst, f32, p, W, i, 0, 0);
    }
}

/* pack_panels with dt, trans, f32 and (for the vdpbf16ps panels) W constants, so each case
 * compiles to its own loop. */
GK_VECTORIZED static void pack_scalar(void *dst, const void *X, int dt, int ld, int trans, int r0, int rows, int p0, int kc,
                               int W, int f32) {
#define GK_PACK_W(DT, TR, F, WC)                                                \
    if (dt == DT && trans == TR && f32 == F && W == WC) {                       \
        pack_panels(dst, X, DT, ld, TR, r0, rows, p0, kc, WC, F);               \
        return;                                                                 \
    }
#define GK_PACK_CASE(DT, TR, F)                                                 \
    GK_PACK_W(DT, TR, F, DP_MR) GK_PACK_W(DT, TR, F, DP_NR)                     \
    if (dt == DT && trans == TR && f32 == F) {                                  \
        pack_panels(dst, X, DT, ld, TR, r0, rows, p0, kc, W, F);                \
        return;                                                                 \
    }
    GK_PACK_CASE(0, 0, 0) GK_PACK_CASE(0, 1, 0) GK_PACK_CASE(1, 0, 0) GK_PACK_CASE(1, 1, 0)
    GK_PACK_CASE(0, 0, 1) GK_PACK_CASE(0, 1, 1) GK_PACK_CASE(1, 0, 1) GK_PACK_CASE(1, 1, 1)
#undef GK_PACK_CASE
#undef GK_PACK_W
}

/* ---- the AVX-512 BF16 microkernel ------------------------------------------------------------ */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(GK_NO_AVX512)
#include <immintrin.h>
#define GK_HAVE_DP 1
#ifndef GK_DIRECT_PF
#define GK_DIRECT_PF 2 /* A read in place: each row's line two ahead, once per line */
#endif

/* C[mr, nr] = alpha * a b + beta * C for the first R rows of a panel (R a constant after inlining:
 * 1, 2, 4, 8 or 12), from kcp pairs; each element sees the same pairs in the same order whatever R
 * is. The epilogue is the SGEMM microkernel's, written the same way, so both round alike. */
__attribute__((target("avx512f,avx512bf16"))) static inline __attribute__((always_inline)) void dp_rows(
    const int R, const int PF, const int DIRECT, int kcp, const uint32_t *restrict a, long ald,
    const uint32_t *restrict b, float *restrict c, long ldc, float alpha, float beta, int mr, int nr,
    const uint32_t *pf, int pf_first, int pf_every) {
    typedef float vec __attribute__((vector_size(64)));
    typedef float uvec __attribute__((vector_size(64), aligned(4)));
    __m512 acc[DP_MR][2];
    const uint32_t *ar[DP_MR]; /* DIRECT: row i of A's pairs (rows past mr read row 0, unused) */
    for (int i = 0; i < R; i++) ar[i] = a + (size_t)(i < mr ? i : 0) * ald;
    for (int i = 0; i < R; i++) {
        __builtin_prefetch(c + i * ldc, 1, 3);
        __builtin_prefetch(c + i * ldc + DP_NR - 1, 1, 3);
        acc[i][0] = _mm512_setzero_ps();
        acc[i][1] = _mm512_setzero_ps();
    }
    int pf_due = pf_first;
    _Pragma("GCC unroll 2") for (int p = 0; p < kcp; p++) {
        const __m512bh b0 = (__m512bh)_mm512_load_si512(b + (long)p * DP_NR);
        const __m512bh b1 = (__m512bh)_mm512_load_si512(b + (long)p * DP_NR + 16);
        if (DIRECT && GK_DIRECT_PF && (p & 15) == 0)
            for (int i = 0; i < R; i++) __builtin_prefetch(ar[i] + p + 16 * GK_DIRECT_PF, 0, 3);
        if (PF && p == pf_due) { /* this pair row of the next panel (two lines) into L2 */
            __builtin_prefetch(pf + (long)p * DP_NR, 0, 2);
            __builtin_prefetch(pf + (long)p * DP_NR + 16, 0, 2);
            pf_due += pf_every;
        }
        for (int i = 0; i < R; i++) {
            const __m512bh av = (__m512bh)_mm512_set1_epi32((int)(DIRECT ? ar[i][p] : a[(long)p * DP_MR + i]));
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], av, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], av, b1);
        }
    }
    if (mr == R && nr == DP_NR) {
        for (int i = 0; i < R; i++)
            for (int v = 0; v < 2; v++) {
                uvec *cp = (uvec *)(c + i * ldc + v * 16);
                vec r = (vec)acc[i][v] * alpha;
                if (beta != 0) r += *cp * beta;
                *cp = r;
            }
        return;
    }
    float tile[DP_MR][DP_NR] __attribute__((aligned(64)));
    for (int i = 0; i < R; i++)
        for (int v = 0; v < 2; v++) _mm512_store_ps(&tile[i][v * 16], acc[i][v]);
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            float r = alpha * tile[i][j];
            c[i * ldc + j] = beta != 0 ? r + beta * c[i * ldc + j] : r;
        }
}

/* pf, when not NULL, is a panel to fetch into L2 while this one runs (the next panel of weights
 * streaming from memory in a decode step): its pair rows pf_first, pf_first + pf_every, ..., each
 * at the iteration that reads the same pair row here, so that the row tiles of a panel share the
 * fetching (the SGEMM kernel's paced prefetch). */
__attribute__((target("avx512f,avx512bf16"))) static inline __attribute__((always_inline)) void dp_pf(
    const int PF, const int DIRECT, int kcp, const uint32_t *restrict a, long ald, const uint32_t *restrict b,
    float *restrict c, long ldc, float alpha, float beta, int mr, int nr, const uint32_t *pf, int pf_first,
    int pf_every) {
#define GK_DP_ROWS(R) dp_rows(R, PF, DIRECT, kcp, a, ald, b, c, ldc, alpha, beta, mr, nr, pf, pf_first, pf_every)
    if (mr == 1)
        GK_DP_ROWS(1);
    else if (mr == 2)
        GK_DP_ROWS(2);
    else if (mr <= 4)
        GK_DP_ROWS(4);
    else if (mr <= 8)
        GK_DP_ROWS(8);
    else
        GK_DP_ROWS(12);
#undef GK_DP_ROWS
}

__attribute__((target("avx512f,avx512bf16"))) static void dp_kernel(int kcp, const uint32_t *restrict a,
                                                                    const uint32_t *restrict b, float *restrict c,
                                                                    long ldc, float alpha, float beta, int mr,
                                                                    int nr, const uint32_t *pf, int pf_first,
                                                                    int pf_every) {
    if (pf)
        dp_pf(1, 0, kcp, a, 0, b, c, ldc, alpha, beta, mr, nr, pf, pf_first, pf_every);
    else
        dp_pf(0, 0, kcp, a, 0, b, c, ldc, alpha, beta, mr, nr, NULL, 0, 1);
}

/* dp_kernel on A's rows where they are (bf16, pairs contiguous along k, ald words apart) instead
 * of a packed panel: the same pairs in the same order, so the same bits. */
__attribute__((target("avx512f,avx512bf16"))) static void dp_kernel_direct(int kcp, const uint32_t *restrict a,
                                                                           long ald, const uint32_t *restrict b,
                                                                           float *restrict c, long ldc, float alpha,
                                                                           float beta, int mr, int nr) {
    dp_pf(0, 1, kcp, a, ald, b, c, ldc, alpha, beta, mr, nr, NULL, 0, 1);
}

static int cpu_avx512bf16(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512bf16");
}
#else
#define GK_HAVE_DP 0
#endif

#if GK_HAVE_DP
/* ---- packing bf16 storage for vdpbf16ps with AVX-512 --------------------------------------------
 *
 * The same panels as pack_panels (dt bf16, f32 0, W 12 or 32), by vectors: a row-major operand's
 * pair p of row i is already the 32-bit word at 2p of that row, so a panel is a transpose of words,
 * 16 rows by 16 pairs at a time; a transposed operand's pair is two rows' elements interleaved
 * (vpermt2w). pack_panels built each word from two 16-bit loads and stored it alone: a third of a
 * narrow product's time (kv_fwd: 256 columns) went to packing A. */

/* r[0..15] (rows of 16 words) transposed in place: r[j] = column j. */
__attribute__((target("avx512f,avx512bw"))) static inline __attribute__((always_inline)) void tr16(__m512i r[16]) {
    __m512i t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    /* u[4g + c], 128-bit lane k: column 4k + c of rows 4g..4g+3 */
    for (int g = 0; g < 4; g++) {
        u[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
        u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
    }
    for (int c = 0; c < 4; c++) {
        const __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88), w0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
        const __m512i v1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88),
                      w1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
        r[c] = _mm512_shuffle_i32x4(v0, v1, 0x88);
        r[8 + c] = _mm512_shuffle_i32x4(v0, v1, 0xdd);
        r[4 + c] = _mm512_shuffle_i32x4(w0, w1, 0x88);
        r[12 + c] = _mm512_shuffle_i32x4(w0, w1, 0xdd);
    }
}

/* pack_panels(dst, X, bf16, ld, trans, r0, rows, p0, kc, W, 0) for W = DP_MR or DP_NR. */
__attribute__((target("avx512f,avx512bw"))) static void pack_dp_bf16(uint32_t *dst, const uint16_t *X, int ld,
                                                                     int trans, int r0, int rows, int p0, int kc,
                                                                     const int W) {
    const int kcp = (kc + 1) / 2, full = kc / 2;
    const size_t panel = (size_t)W * kcp; /* words */
    if (trans) { /* X is [k][r]: pair p of column i is X[2p][i] | X[2p + 1][i] << 16 */
        enum { PACK_AHEAD = 4 };
        __m512i lo_idx, hi_idx;
        {
            short il[32] __attribute__((aligned(64))), ih[32] __attribute__((aligned(64)));
            for (int i = 0; i < 16; i++) {
                il[2 * i] = (short)i, il[2 * i + 1] = (short)(32 + i);
                ih[2 * i] = (short)(16 + i), ih[2 * i + 1] = (short)(48 + i);
            }
            lo_idx = _mm512_load_si512(il);
            hi_idx = _mm512_load_si512(ih);
        }
        const int np = (rows + W - 1) / W;
        for (int p = 0; p < kcp; p++) {
            const uint16_t *x0 = X + ((size_t)p0 + 2 * p) * (size_t)ld + r0, *x1 = x0 + ld;
            if (p + PACK_AHEAD < full) {
                const char *f = (const char *)(x0 + (size_t)2 * PACK_AHEAD * ld);
                for (int b = 0; b < rows * 2; b += 64) {
                    __builtin_prefetch(f + b);
                    __builtin_prefetch(f + (size_t)ld * 2 + b);
                }
            }
            for (int q = 0; q < np; q++) {
                uint32_t *d = dst + q * panel + (size_t)p * W;
                const int n = rows - q * W < W ? rows - q * W : W;
                const __mmask32 m = n == 32 ? 0xffffffffu : (1u << n) - 1;
                const __m512i a = _mm512_maskz_loadu_epi16(m, x0 + q * W);
                const __m512i b = p < full ? _mm512_maskz_loadu_epi16(m, x1 + q * W) : _mm512_setzero_si512();
                const __m512i lo = _mm512_permutex2var_epi16(a, lo_idx, b);
                if (W == DP_NR) {
                    _mm512_store_si512(d, lo);
                    _mm512_store_si512(d + 16, _mm512_permutex2var_epi16(a, hi_idx, b));
                } else {
                    _mm512_mask_storeu_epi32(d, (__mmask16)((1u << W) - 1), lo);
                }
            }
        }
        return;
    }
    for (int ir = 0; ir < rows; ir += W, dst += panel) {
        const int n = rows - ir < W ? rows - ir : W;
        for (int g = 0; g < W; g += 16) { /* rows g..g+15 of the panel */
            const int gw = W - g < 16 ? W - g : 16; /* words of a pair row stored from this group */
            const __mmask16 sm = (__mmask16)((1u << gw) - 1);
            const uint32_t *src[16];
            for (int i = 0; i < 16; i++) {
                const int row = g + i < n ? g + i : 0; /* rows past n read as zero below */
                src[i] = (const uint32_t *)(X + ((size_t)r0 + ir + row) * (size_t)ld + p0);
            }
            for (int q0 = 0; q0 < full; q0 += 16) {
                const int cnt = full - q0 < 16 ? full - q0 : 16;
                const __mmask16 lm = (__mmask16)(cnt == 16 ? 0xffff : (1u << cnt) - 1);
                __m512i r[16];
                for (int i = 0; i < 16; i++)
                    r[i] = g + i < n ? _mm512_maskz_loadu_epi32(lm, src[i] + q0) : _mm512_setzero_si512();
                tr16(r);
                for (int j = 0; j < cnt; j++) _mm512_mask_storeu_epi32(dst + (size_t)(q0 + j) * W + g, sm, r[j]);
            }
        }
        if (full < kcp) /* odd kc: the last pair holds one element */
            for (int i = 0; i < W; i++)
                dst[(size_t)full * W + i] = i < n ? X[((size_t)r0 + ir + i) * (size_t)ld + p0 + 2 * full] : 0;
    }
}

#endif /* GK_HAVE_DP */

static int fast_pack_off; /* tests: 1 packs every operand with pack_scalar */

/* op(X)'s panels (pack_panels): bf16 storage for vdpbf16ps by vectors, the rest by pack_scalar. */
static void pack(void *dst, const void *X, int dt, int ld, int trans, int r0, int rows, int p0, int kc, int W,
                 int f32) {
#if GK_HAVE_DP
    if (dt == GK_BF16 && !f32 && (W == DP_MR || W == DP_NR) && !fast_pack_off) {
        pack_dp_bf16((uint32_t *)dst, (const uint16_t *)X, ld, trans, r0, rows, p0, kc, W);
        return;
    }
#endif
    pack_scalar(dst, X, dt, ld, trans, r0, rows, p0, kc, W, f32);
}

/* Pack operands with the scalar loops only (off != 0) or the fastest code (0). For tests. */
void gk_gemm_bf16_scalar_pack(int off) { fast_pack_off = off; }

/* ---- kernel choice ----------------------------------------------------------------------------- */

/* dp: the vdpbf16ps kernel; else uk, an SGEMM microkernel on widened panels. */
typedef struct {
    int dp;
    const gk_microkernel *uk;
    int mr, nr;
    char name[48];
} bkernel;

static bkernel active_b;
static int active_b_set;

static void set_f32(const gk_microkernel *uk) {
    active_b.dp = 0;
    active_b.uk = uk;
    active_b.mr = uk->mr;
    active_b.nr = uk->nr;
    strcpy(active_b.name, "f32-");
    strncat(active_b.name, uk->name, sizeof active_b.name - 5);
    active_b_set = 1;
}

static void set_best(void) {
#if GK_HAVE_DP
    if (cpu_avx512bf16()) {
        active_b = (bkernel){1, NULL, DP_MR, DP_NR, "bf16-avx512"};
        active_b_set = 1;
        return;
    }
#endif
    set_f32(gk_microkernel_best());
}

/* Select the bf16 GEMM kernel by name ("" = the best this CPU runs; "bf16-avx512"; "f32-" and a
 * runnable SGEMM kernel's name); 0 on success. For tests and benchmarks. */
int gk_gemm_bf16_use_kernel(const char *name) {
    if (name == NULL || name[0] == 0) {
        set_best();
        return 0;
    }
#if GK_HAVE_DP
    if (strcmp(name, "bf16-avx512") == 0) {
        if (!cpu_avx512bf16()) return -1;
        active_b = (bkernel){1, NULL, DP_MR, DP_NR, "bf16-avx512"};
        active_b_set = 1;
        return 0;
    }
#endif
    if (strncmp(name, "f32-", 4) != 0) return -1;
    for (const gk_microkernel *k = gk_microkernels; k->name; k++)
        if (strcmp(k->name, name + 4) == 0) {
            if (!gk_microkernel_runs(k)) return -1;
            set_f32(k);
            return 0;
        }
    return -1;
}

const char *gk_gemm_bf16_kernel(void) {
    if (!active_b_set) set_best();
    return active_b.name;
}

/* ---- the product ------------------------------------------------------------------------------- */

typedef struct {
    int trans_a, trans_b, M, N, K;
    float alpha, beta;
    const void *A, *B;
    int a_dt, b_dt, lda, ldb;
    float *C;
    int ldc;
    const uint32_t *pre; /* op(B) already packed (gk_linear_bf16_pack), or NULL */
    long pre_npad;       /* its columns, padded to NR */
} gemm_args;

/* Rows of A per packed block (panels of MR rows), as the SGEMM's: about 200 KB of L2. */
static int mc_of(const bkernel *k) { return k->mr * (k->mr >= 12 ? 12 : 24); }

/* Elements (32-bit) of one packed panel of W rows over kc of K. */
static size_t panel_words(const bkernel *k, int W, int kc) {
    const size_t kcp = (size_t)(kc + 1) / 2;
    return (size_t)W * (k->dp ? kcp : 2 * kcp);
}

/* C[mc, nc] (+)= the packed a and b of one K slice: B's panels outer, as the SGEMM's sweep. */
static void sweep(const bkernel *k, int mc, int nc, int kc, float alpha, const void *a, long ald, const void *b,
                  float beta, float *C, int ldc) {
    const int MR = k->mr, NR = k->nr, kcp = (kc + 1) / 2;
    const size_t as = ald ? (size_t)MR * ald : panel_words(k, MR, kc), bs = panel_words(k, NR, kc);
    for (int j = 0; j < nc; j += NR) {
        const int cols = nc - j < NR ? nc - j : NR;
        for (int i = 0; i < mc; i += MR) {
            const int rows = mc - i < MR ? mc - i : MR;
            const uint32_t *ap = (const uint32_t *)a + (size_t)(i / MR) * as;
            const uint32_t *bp = (const uint32_t *)b + (size_t)(j / NR) * bs;
            float *c = C + (size_t)i * ldc + j;
#if GK_HAVE_DP
            if (k->dp) {
                if (ald)
                    dp_kernel_direct(kcp, ap, ald, bp, c, ldc, alpha, beta, rows, cols);
                else
                    dp_kernel(kcp, ap, bp, c, ldc, alpha, beta, rows, cols, NULL, 0, 1);
                continue;
            }
#endif
            k->uk->fn(2 * kcp, (const float *)ap, (const float *)bp, c, ldc, alpha, beta, rows, cols, NULL, 0, 1);
        }
    }
}

/* Words of one slice's panels for nc columns in resident(), a multiple of 64 bytes. */
static size_t slice_words(const bkernel *k, int nc, int kc) { return (panel_words(k, nc + k->nr, kc) + 15) & ~(size_t)15; }

/* Words of op(B)'s panels over all of K for nc columns (resident()), every slice packed. */
static size_t all_k_words(const bkernel *k, int nc, int K) {
    const int KS = kstep(K);
    size_t w = 0;
    for (int pc = 0; pc < K; pc += KS) w += slice_words(k, nc, K - pc < KS ? K - pc : KS);
    return w;
}

/* Whether a unit keeps its block of C in cache over all of K: B packed for every slice first,
 * then each MC block of A through all the slices. The slice-by-slice order passes over the unit's
 * C once per slice, from memory once C outgrows the caches: a weight gradient's 32000 x 512 C
 * (lm_head, 1048 tokens a chunk) was read and written again for each slice by both threads. Only
 * when B's panels for all of K stay small (GK_RESIDENT_B bytes), as they are re-read per block.
 * Off (0) by default until measured on a quiet machine: -DGK_RESIDENT_B=2097152 in CGO_CFLAGS. */
#ifndef GK_RESIDENT_B
#define GK_RESIDENT_B 0
#endif
static long resident_limit = GK_RESIDENT_B;
static int resident(const bkernel *k, const gemm_args *g, int ncu) {
    return !g->pre && g->K > kstep(g->K) && (long)all_k_words(k, ncu, g->K) * 4 <= resident_limit;
}

/* Set the largest B (bytes over all of K) kept for the resident order; returns the previous one.
 * For tests. */
long gk_gemm_bf16_resident_limit(long bytes) {
    const long old = resident_limit;
    resident_limit = bytes;
    return old;
}

/* A's row stride in 32-bit words where the vdpbf16ps kernel reads A's rows where they are, else 0
 * (A packed): bf16, not transposed (pairs contiguous along k), rows and slices starting on a pair.
 * Packing such an A is a copy of words into panels: ~8% of a 4096 x 512 x 1536 product. */
static long a_direct(const bkernel *k, const gemm_args *g) {
#if GK_HAVE_DP
    if (k->dp && g->a_dt == GK_BF16 && !g->trans_a && !(g->lda & 1) && !(g->K & 1) && !((uintptr_t)g->A & 3) &&
        !fast_pack_off)
        return g->lda / 2;
#endif
    (void)k, (void)g;
    return 0;
}

/* The start of A's rows ic.. at k = pc for a_direct's kernel. */
static const uint32_t *a_at(const gemm_args *g, int ic, int pc) {
    return (const uint32_t *)((const uint16_t *)g->A + (size_t)ic * g->lda + pc);
}

/* unit() in the resident order: every element sees the same slices in the same order. */
static void unit_resident(const bkernel *k, const gemm_args *g, int m0, int m1, int n0, int n1, void *apack,
                          void *bpack) {
    const int MC = mc_of(k), KS = kstep(g->K);
    const long ald = a_direct(k, g);
    size_t at = 0;
    for (int pc = 0; pc < g->K; pc += KS) {
        const int kc = g->K - pc < KS ? g->K - pc : KS;
        pack((uint32_t *)bpack + at, g->B, g->b_dt, g->ldb, !g->trans_b, n0, n1 - n0, pc, kc, k->nr, !k->dp);
        at += slice_words(k, n1 - n0, kc);
    }
    for (int ic = m0; ic < m1; ic += MC) {
        const int mc = m1 - ic < MC ? m1 - ic : MC;
        at = 0;
        for (int pc = 0; pc < g->K; pc += KS) {
            const int kc = g->K - pc < KS ? g->K - pc : KS;
            if (!ald) pack(apack, g->A, g->a_dt, g->lda, g->trans_a, ic, mc, pc, kc, k->mr, !k->dp);
            sweep(k, mc, n1 - n0, kc, g->alpha, ald ? a_at(g, ic, pc) : apack, ald, (uint32_t *)bpack + at,
                  pc == 0 ? g->beta : 1.0f, g->C + (size_t)ic * g->ldc + n0, g->ldc);
            at += slice_words(k, n1 - n0, kc);
        }
    }
}

/* One work unit: C[m0:m1, n0:n1] over all of K. */
static void unit(const bkernel *k, const gemm_args *g, int m0, int m1, int n0, int n1, void *apack, void *bpack) {
    const int MC = mc_of(k);
    const int KS = kstep(g->K);
    const long ald = a_direct(k, g);
    for (int pc = 0; pc < g->K; pc += KS) {
        const int kc = g->K - pc < KS ? g->K - pc : KS;
        const float beta = pc == 0 ? g->beta : 1.0f;
        if (g->pre) /* this slice's panels from column n0 on (slice pc starts pre_npad * pc words in) */
            bpack = (void *)(g->pre + (size_t)g->pre_npad * pc * (k->dp ? 1 : 2) / 2 +
                             (size_t)(n0 / k->nr) * panel_words(k, k->nr, kc));
        else /* op(B)[k][n] is row n of Bᵀ: B's panels are Bᵀ's rows, transposed when B is not */
            pack(bpack, g->B, g->b_dt, g->ldb, !g->trans_b, n0, n1 - n0, pc, kc, k->nr, !k->dp);
        for (int ic = m0; ic < m1; ic += MC) {
            const int mc = m1 - ic < MC ? m1 - ic : MC;
            if (!ald) pack(apack, g->A, g->a_dt, g->lda, g->trans_a, ic, mc, pc, kc, k->mr, !k->dp);
            sweep(k, mc, n1 - n0, kc, g->alpha, ald ? a_at(g, ic, pc) : apack, ald, bpack, beta,
                  g->C + (size_t)ic * g->ldc + n0, g->ldc);
        }
    }
}

/* The units and their split, as gk_sgemm's parallel product cuts them: column slices of at most
 * BNC_UNIT in a multiple of the threads, row slices when there are fewer slices than threads. */
static void gemm_f32_out(const bkernel *k, const gemm_args *g) {
    const int MR = k->mr, NR = k->nr, M = g->M, N = g->N;
    const int nt = (long)M * N * g->K < GK_SERIAL_WORK ? 1 : gk_threads();
    const int want = g->pre ? 4 * nt : nt; /* packed B: column slices cost nothing extra */
    int nparts_n = (N + BNC_UNIT - 1) / BNC_UNIT;
    if (nparts_n >= nt) nparts_n = (nparts_n + nt - 1) / nt * nt;
    int ncu = ((N + nparts_n - 1) / nparts_n + NR - 1) / NR * NR;
    nparts_n = (N + ncu - 1) / ncu;
    const int mpanels = (M + MR - 1) / MR;
    int nparts_m = 1;
    if (nparts_n < want)
        nparts_m = (want + nparts_n - 1) / nparts_n < mpanels ? (want + nparts_n - 1) / nparts_n : mpanels;
    while (nparts_n * nparts_m < want && ncu > 4 * NR) {
        ncu = (ncu / 2 + NR - 1) / NR * NR;
        nparts_n = (N + ncu - 1) / ncu;
    }
    const int units = nparts_n * nparts_m, kcmax = g->K < kstep(g->K) ? g->K : kstep(g->K);
    const int res = resident(k, g, ncu);
    const size_t awords = panel_words(k, mc_of(k), kcmax),
                 bwords = res ? all_k_words(k, ncu, g->K) : panel_words(k, ncu + NR, kcmax);
    GK_PARALLEL_FOR(units < nt ? units : nt, for (int u = 0; u < units; u++) {
        void *apack = gk_scratch(GK_SCRATCH_A, awords), *bpack = gk_scratch(GK_SCRATCH_B, bwords);
        if (!apack || !bpack) {
            gk_set_error("gemm_bf16: out of memory for packing");
            continue;
        }
        const int um = u / nparts_n, un = u % nparts_n;
        const int m0 = (int)((long)mpanels * um / nparts_m) * MR;
        const int m1 = um == nparts_m - 1 ? M : (int)((long)mpanels * (um + 1) / nparts_m) * MR;
        const int n0 = un * ncu, n1 = n0 + ncu < N ? n0 + ncu : N;
        if (res)
            unit_resident(k, g, m0, m1, n0, n1, apack, bpack);
        else
            unit(k, g, m0, m1, n0, n1, apack, bpack);
    });
}

void gk_gemm_bf16(int trans_a, int trans_b, int M, int N, int K, float alpha, const void *A, int a_dt, int lda,
                  const void *B, int b_dt, int ldb, float beta, void *C, int c_dt, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (!active_b_set) set_best();
    const bkernel k = active_b;
    gemm_args g = {trans_a, trans_b, M, N, K, alpha, beta, A, B, a_dt, b_dt, lda, ldb, C, ldc, NULL, 0};
    float *tmp = NULL;
    if (c_dt == GK_BF16) { /* fp32 sums, rounded once at the end */
        tmp = malloc(sizeof(float) * (size_t)M * N);
        if (!tmp) {
            gk_set_error("gemm_bf16: out of memory for a bf16 C");
            return;
        }
        for (int i = 0; i < M; i++)
            gk_bf16_to_f32(tmp + (size_t)i * N, (const uint16_t *)C + (size_t)i * ldc, (size_t)N);
        g.C = tmp;
        g.ldc = N;
    }
    if (K <= 0 || alpha == 0) {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                float *c = g.C + (size_t)i * g.ldc + j;
                *c = beta == 0 ? 0 : beta * *c;
            }
    } else {
        gemm_f32_out(&k, &g);
    }
    if (tmp) {
        for (int i = 0; i < M; i++)
            gk_bf16_from_f32((uint16_t *)C + (size_t)i * ldc, tmp + (size_t)i * N, (size_t)N);
        free(tmp);
    }
}

/* ---- the linear layer ------------------------------------------------------------------------ */

/* The linear layer with x stored as fp32 or as bf16 (x_dt; a trainer's saved activation): the same
 * products and the same bits either way, since the GEMM rounds an fp32 operand to exactly those bf16
 * values as it packs it. */
static void linear_forward_bf16_x(float *y, const void *x, int x_dt, const uint16_t *W, const float *b, int T, int in,
                                  int out) {
    if (b)
        GK_PARALLEL_FOR(gk_threads_if((long)T * out > 65536),
                        for (int t = 0; t < T; t++) memcpy(y + (size_t)t * out, b, sizeof(float) * out););
    gk_gemm_bf16(0, 1, T, out, in, 1.0f, x, x_dt, in, W, GK_BF16, in, b ? 1.0f : 0.0f, y, GK_F32, out);
}

static void linear_backward_bf16_x(float *dx, float *dW, float *db, const float *dy, const void *x, int x_dt,
                                   const uint16_t *W, int T, int in, int out) {
    if (dx) gk_gemm_bf16(0, 0, T, in, out, 1.0f, dy, GK_F32, out, W, GK_BF16, in, 1.0f, dx, GK_F32, in);
    if (dW) gk_gemm_bf16(1, 0, out, in, T, 1.0f, dy, GK_F32, out, x, x_dt, in, 1.0f, dW, GK_F32, in);
    if (db) gk_linear_backward(NULL, NULL, db, dy, NULL, NULL, T, in, out);
}

void gk_linear_forward_bf16(float *y, const float *x, const uint16_t *W, const float *b, int T, int in, int out) {
    linear_forward_bf16_x(y, x, GK_F32, W, b, T, in, out);
}

void gk_linear_backward_bf16(float *dx, float *dW, float *db, const float *dy, const float *x, const uint16_t *W,
                             int T, int in, int out) {
    linear_backward_bf16_x(dx, dW, db, dy, x, GK_F32, W, T, in, out);
}

void gk_linear_forward_bf16_in(float *y, const uint16_t *x, const uint16_t *W, const float *b, int T, int in, int out) {
    linear_forward_bf16_x(y, x, GK_BF16, W, b, T, in, out);
}

void gk_linear_backward_bf16_in(float *dx, float *dW, float *db, const float *dy, const uint16_t *x, const uint16_t *W,
                                int T, int in, int out) {
    linear_backward_bf16_x(dx, dW, db, dy, x, GK_BF16, W, T, in, out);
}

/* ---- prepacked weights (decoding) ------------------------------------------------------------ */

/* A header of PACKED_HEADER words (magic, kernel, sizes; 64 bytes keep the panels aligned), then
 * Wᵀ as unit() packs it: for each kstep(in) slice of K, every column's NR-wide panels. Tied to the kind
 * of kernel that packed it (pairs for vdpbf16ps, widened floats otherwise) and its NR. */
enum { PACKED_HEADER = 16, PACKED_MAGIC = 0x62667070 /* "bfpp" */ };

static long packed_npad(const bkernel *k, int out) { return (long)(out + k->nr - 1) / k->nr * k->nr; }

/* Words of slice pc's panels for npad columns: npad * kcp pairs, as words (dp) or two floats. */
static size_t packed_slice_words(const bkernel *k, long npad, int kc) { return (size_t)npad * ((kc + 1) / 2) * (k->dp ? 1 : 2); }

long gk_linear_bf16_packed_words(int in, int out) {
    if (!active_b_set) set_best();
    const long npad = packed_npad(&active_b, out);
    long words = PACKED_HEADER;
    const int KS = kstep(in);
    for (int pc = 0; pc < in; pc += KS) words += (long)packed_slice_words(&active_b, npad, in - pc < KS ? in - pc : KS);
    return words;
}

void gk_linear_bf16_pack(uint32_t *Wp, const uint16_t *W, int in, int out) {
    if (!active_b_set) set_best();
    const bkernel *k = &active_b;
    const long npad = packed_npad(k, out);
    memset(Wp, 0, 4 * PACKED_HEADER);
    Wp[0] = PACKED_MAGIC;
    Wp[1] = (uint32_t)k->dp;
    Wp[2] = (uint32_t)k->nr;
    Wp[3] = (uint32_t)in;
    Wp[4] = (uint32_t)out;
    const int KS = kstep(in);
    Wp[5] = (uint32_t)KS;
    const int slices = (in + KS - 1) / KS;
    GK_PARALLEL_FOR(gk_threads_if((long)in * out > 65536), for (int s = 0; s < slices; s++) {
        const int pc = s * KS, kc = in - pc < KS ? in - pc : KS;
        /* slice pc starts after the full slices before it: npad * pc words as pairs (pc even) */
        uint32_t *dst = Wp + PACKED_HEADER + (size_t)npad * pc * (k->dp ? 1 : 2) / 2;
        pack(dst, W, GK_BF16, in, 0, 0, out, pc, kc, k->nr, !k->dp);
    });
}

/* ---- decode steps: prepacked weights, rows of one MC block ----------------------------------- */

/* One product of one_block_packed: C[M, N] (+)= A Wᵀ from W's packed panels. */
typedef struct {
    const uint32_t *panels; /* past the header */
    long npad;
    int N;
    float beta;
    float *C;
} bpre;

enum { MULTI_MAX = 4 };

/* Panels p0..p1 of one product over all of K: for each K slice, each panel against every row tile
 * of the packed A, the row tiles fetching the next panel into L2 as they go (the weights stream
 * from memory once per step). The calls unit() makes for these elements, in the same order. */
static void block_unit(const bkernel *k, const bpre *pre, int M, int K, long mpad, const uint32_t *apack, int p0,
                       int p1) {
    const int MR = k->mr, NR = k->nr, tiles = (M + MR - 1) / MR;
    const size_t wpp = k->dp ? 1 : 2; /* words per pair of one row */
    const int KS = kstep(K);
    for (int pc = 0; pc < K; pc += KS) {
        const int kc = K - pc < KS ? K - pc : KS, kcp = (kc + 1) / 2;
        const float beta = pc == 0 ? pre->beta : 1.0f;
        const uint32_t *ap = apack + (size_t)mpad * pc * wpp / 2;
        const uint32_t *bslice = pre->panels + (size_t)pre->npad * pc * wpp / 2;
        const size_t as = panel_words(k, MR, kc), bs = panel_words(k, NR, kc);
        for (int p = p0; p < p1; p++) {
            const int cols = pre->N - p * NR < NR ? pre->N - p * NR : NR;
            const uint32_t *bp = bslice + (size_t)p * bs, *next = NULL;
            if (p + 1 < p1)
                next = bp + bs;
            else if (pc + KS < K) { /* the next slice's first panel of this range */
                const int nk = K - pc - KS < KS ? K - pc - KS : KS;
                next = pre->panels + (size_t)pre->npad * (pc + KS) * wpp / 2 + (size_t)p0 * panel_words(k, NR, nk);
            }
            for (int t = 0; t < tiles; t++) {
                const int rows = M - t * MR < MR ? M - t * MR : MR;
                float *c = pre->C + (size_t)t * MR * pre->N + (size_t)p * NR;
#if GK_HAVE_DP
                if (k->dp) {
                    dp_kernel(kcp, ap + t * as, bp, c, pre->N, 1.0f, beta, rows, cols, next, t, tiles);
                    continue;
                }
#endif
                k->uk->fn(2 * kcp, (const float *)(ap + t * as), (const float *)bp, c, pre->N, 1.0f, beta, rows, cols,
                          k->uk->paced_prefetch ? (const float *)next : NULL, t, tiles);
            }
        }
    }
}

/* The team's share of one_block_packed: A's K slices packed once, together, then column ranges of
 * all the products taken dynamically. */
static void block_team(const bkernel *k, int n, const bpre *pres, int M, int K, const float *A, int lda, long mpad,
                       uint32_t *apack, const int *first, int per) {
    const int KS = kstep(K), slices = (K + KS - 1) / KS;
    const size_t wpp = k->dp ? 1 : 2;
#pragma omp for schedule(static)
    for (int s = 0; s < slices; s++) {
        const int pc = s * KS, kc = K - pc < KS ? K - pc : KS;
        pack(apack + (size_t)mpad * pc * wpp / 2, A, GK_F32, lda, 0, 0, M, pc, kc, k->mr, !k->dp);
    }
#pragma omp for schedule(dynamic, 1)
    for (int u = 0; u < first[n]; u++) {
        int i = 0;
        while (u >= first[i + 1]) i++;
        const int panels = (pres[i].N + k->nr - 1) / k->nr, p0 = (u - first[i]) * per;
        block_unit(k, &pres[i], M, K, mpad, apack, p0, p0 + per < panels ? p0 + per : panels);
    }
}

/* n products of one input A[M, K] (M within one MC block: a decode step) from packed weights. The
 * work units of gemm_f32_out each pack A again per K slice and read B without fetching ahead; here
 * A is packed once and the next weight panel is fetched while one is multiplied. Every element
 * sees the same K slices and kernel calls as through gemm_f32_out, so the bits are the same. */
static void one_block_packed(const bkernel *k, int n, const bpre *pres, int M, int K, const float *A, int lda) {
    const int MR = k->mr, NR = k->nr;
    const long mpad = (long)(M + MR - 1) / MR * MR;
    long work = 0;
    int first[MULTI_MAX + 1], total = 0;
    for (int i = 0; i < n; i++) {
        work += (long)M * pres[i].N * K;
        total += (pres[i].N + NR - 1) / NR;
    }
    const int nt = work < GK_SERIAL_WORK ? 1 : gk_threads();
    uint32_t *apack = (uint32_t *)gk_scratch(GK_SCRATCH_SHARED_A, (size_t)mpad * ((K + 1) / 2) * (k->dp ? 1 : 2));
    if (!apack) {
        gk_set_error("gemm_bf16: out of memory for packing");
        return;
    }
    /* about four column ranges per thread over all the products, at least two panels each */
    int per = total / (4 * nt);
    if (per < 2) per = 2;
    first[0] = 0;
    for (int i = 0; i < n; i++) first[i + 1] = first[i] + ((pres[i].N + NR - 1) / NR + per - 1) / per;
    GK_PARALLEL(nt, block_team(k, n, pres, M, K, A, lda, mpad, apack, first, per));
}

static int packed_for_b(const bkernel *k, const uint32_t *Wp, int in, int out) {
    return Wp[0] == PACKED_MAGIC && (int)Wp[1] == k->dp && (int)Wp[2] == k->nr && (int)Wp[3] == in &&
           (int)Wp[4] == out && (int)Wp[5] == kstep(in);
}

static void fill_bias_b(float *y, const float *b, int T, int out) {
    GK_PARALLEL_FOR(gk_threads_if((long)T * out > 65536),
                    for (int t = 0; t < T; t++) memcpy(y + (size_t)t * out, b, sizeof(float) * out););
}

void gk_linear_forward_bf16_packed(float *y, const float *x, const uint16_t *W, const uint32_t *Wp, const float *b,
                                   int T, int in, int out) {
    if (!active_b_set) set_best();
    const bkernel k = active_b;
    if (!packed_for_b(&k, Wp, in, out)) {
        gk_linear_forward_bf16(y, x, W, b, T, in, out); /* packed for another kernel (tests switch) */
        return;
    }
    if (T <= 0 || out <= 0) return;
    if (b) fill_bias_b(y, b, T, out);
    if (in <= 0) {
        gk_gemm_bf16(0, 1, T, out, in, 1.0f, x, GK_F32, in, W, GK_BF16, in, b ? 1.0f : 0.0f, y, GK_F32, out);
        return;
    }
    if (T <= mc_of(&k)) {
        const bpre pre = {Wp + PACKED_HEADER, packed_npad(&k, out), out, b ? 1.0f : 0.0f, y};
        one_block_packed(&k, 1, &pre, T, in, x, in);
        return;
    }
    gemm_args g = {0, 1, T, out, in, 1.0f, b ? 1.0f : 0.0f, x, W, GK_F32, GK_BF16, in, in, y, out,
                   Wp + PACKED_HEADER, packed_npad(&k, out)};
    gemm_f32_out(&k, &g);
}

void gk_linear_forward_bf16_packed_multi(int n, float *const *ys, const float *x, const uint16_t *const *Ws,
                                         const uint32_t *const *Wps, const float *const *bs, int T, int in,
                                         const int *outs) {
    if (!active_b_set) set_best();
    const bkernel k = active_b;
    int together = n >= 2 && n <= MULTI_MAX && T > 0 && T <= mc_of(&k) && in > 0;
    for (int i = 0; together && i < n; i++) together = outs[i] > 0 && packed_for_b(&k, Wps[i], in, outs[i]);
    if (!together) { /* one at a time */
        for (int i = 0; i < n; i++) gk_linear_forward_bf16_packed(ys[i], x, Ws[i], Wps[i], bs[i], T, in, outs[i]);
        return;
    }
    bpre pres[MULTI_MAX];
    for (int i = 0; i < n; i++) {
        if (bs[i]) fill_bias_b(ys[i], bs[i], T, outs[i]);
        pres[i] = (bpre){Wps[i] + PACKED_HEADER, packed_npad(&k, outs[i]), outs[i], bs[i] ? 1.0f : 0.0f, ys[i]};
    }
    one_block_packed(&k, n, pres, T, in, x, in);
}

/* ---- a decode layer's products inside one parallel region (decode_layer.c) ------------------- */

int gk_bf16_decode_products_ready(int T, int in, int n, const uint32_t *const *Wps, const int *outs) {
    if (!active_b_set) set_best();
    const bkernel *k = &active_b;
    if (T <= 0 || T > mc_of(k) || in <= 0 || n < 1 || n > MULTI_MAX) return 0;
    for (int i = 0; i < n; i++)
        if (outs[i] <= 0 || !packed_for_b(k, Wps[i], in, outs[i])) return 0;
    return 1;
}

/* This thread's share of n products of A[T, in] (gk_bf16_decode_products_ready holds): A packed
 * into the thread's own buffer, then a static range of all the products' column panels, each
 * product's columns first set to its bias where it has one. The same kernel calls per element as
 * one_block_packed, so the same bits, whatever the split. Called by every thread of a region (or
 * outside one, by the calling thread for all of it); the caller puts a barrier after it. */
void gk_bf16_decode_products_team(int n, float *const *ys, const float *A, const uint32_t *const *Wps,
                                  const float *const *bs, int T, int in, const int *outs) {
    const bkernel *k = &active_b;
    const int MR = k->mr, NR = k->nr, K = in;
    const long mpad = (long)(T + MR - 1) / MR * MR;
    const size_t wpp = k->dp ? 1 : 2;
    uint32_t *apack = (uint32_t *)gk_scratch(GK_SCRATCH_SHARED_A, (size_t)mpad * ((K + 1) / 2) * wpp);
    if (!apack) {
        gk_set_error("gemm_bf16: out of memory for packing");
        return;
    }
    for (int pc = 0; pc < K; pc += BKC) {
        const int kc = K - pc < BKC ? K - pc : BKC;
        pack(apack + (size_t)mpad * pc * wpp / 2, A, GK_F32, in, 0, 0, T, pc, kc, MR, !k->dp);
    }
    int total = 0;
    for (int i = 0; i < n; i++) total += (outs[i] + NR - 1) / NR;
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
    const int lo = (int)((long)total * tid / nth), hi = (int)((long)total * (tid + 1) / nth);
    for (int i = 0, first = 0; i < n; first += (outs[i] + NR - 1) / NR, i++) {
        const int panels = (outs[i] + NR - 1) / NR;
        const int p0 = lo > first ? lo - first : 0, p1 = hi - first < panels ? hi - first : panels;
        if (p0 >= p1) continue;
        const bpre pre = {Wps[i] + PACKED_HEADER, packed_npad(k, outs[i]), outs[i], bs[i] ? 1.0f : 0.0f, ys[i]};
        if (bs[i]) {
            const int c0 = p0 * NR, c1 = p1 * NR < outs[i] ? p1 * NR : outs[i];
            for (int t = 0; t < T; t++) memcpy(ys[i] + (size_t)t * outs[i] + c0, bs[i] + c0, sizeof(float) * (c1 - c0));
        }
        block_unit(k, &pre, T, K, mpad, apack, p0, p1);
    }
}

/* The columns [*c0, *c1) of product i of n that gk_bf16_decode_products_team gives this thread. */
void gk_bf16_decode_products_cols(int n, const int *outs, int i, int *c0, int *c1) {
    const int NR = active_b.nr;
    int total = 0, first = 0;
    for (int j = 0; j < n; j++) total += (outs[j] + NR - 1) / NR;
    for (int j = 0; j < i; j++) first += (outs[j] + NR - 1) / NR;
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads(), panels = (outs[i] + NR - 1) / NR;
    const int lo = (int)((long)total * tid / nth), hi = (int)((long)total * (tid + 1) / nth);
    const int p0 = lo > first ? lo - first : 0, p1 = hi - first < panels ? hi - first : panels;
    *c0 = p0 < p1 ? p0 * NR : 0;
    *c1 = p0 < p1 ? (p1 * NR < outs[i] ? p1 * NR : outs[i]) : 0;
}
