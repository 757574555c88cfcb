/* matmul.c — SGEMM (packed, cache-blocked, OpenMP-parallel; microkernels in sgemm_kernels.c) and
 * the linear layer built on it.
 *
 * Blocking (Goto/BLIS): C is cut into work units (column slices of up to NC_UNIT, and row slices
 * when there are too few); threads take units dynamically. Within a unit, for each KC-deep slice of
 * K, the B slice is packed into NR-column panels (kept in L2/L3), then each MC-row block of A is
 * packed into MR-row panels (L2) and the microkernel sweeps them with one B panel in L1. Every
 * element of C sees the same K order whatever the thread count or schedule, so the result is
 * bit-identical for any number of threads. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "sgemm.h"

#ifndef GK_KC
#define GK_KC 384
#endif
#ifndef GK_MC_PANELS
#define GK_MC_PANELS 24
#endif
#ifndef GK_NC_UNIT
#define GK_NC_UNIT 1024
#endif
/* Rows of A per packed block: about 200 KB of L2 at KC = 384. */
#define GK_MC_PANELS_FOR(MR) ((MR) >= 12 ? 12 : GK_MC_PANELS)
enum { KC = GK_KC, NC_UNIT = GK_NC_UNIT };

static const gk_microkernel *active;

int gk_sgemm_use_kernel(const char *name) {
    if (name == NULL || name[0] == 0) {
        active = gk_microkernel_best();
        gk_accelerate_allow(1);
        return 0;
    }
    for (const gk_microkernel *k = gk_microkernels; k->name; k++)
        if (strcmp(k->name, name) == 0) {
            if (!gk_microkernel_runs(k)) return -1;
            active = k;
            gk_accelerate_allow(0);
            return 0;
        }
    return -1;
}

void gk_sgemm_select_kernel(void) {
    if (!active) active = gk_microkernel_best();
}

const char *gk_sgemm_kernel_name(void) {
    gk_sgemm_select_kernel();
    return active->name;
}

/* Packing reads activations that are usually not in cache, as short runs far apart (a row's KC
 * floats, or a transposed block's mc floats per k) that the hardware prefetcher does not follow;
 * the loops below fetch ahead themselves. PACK_ROWS_AHEAD: source rows ahead in the transposed
 * case. */
enum { PACK_ROWS_AHEAD = 8, PACK_K_BLOCK = 16 };

/* dst[0:n] = src[0:n] for a panel's few floats, inline (memcpy would be a call per panel). GCC
 * turns a copy loop of a constant 32 floats into a memmove call, in pack_a and pack_b as in any
 * function it is inlined into; PACK_INLINE_COPIES on those keeps it a loop of vector moves. */
static inline __attribute__((always_inline)) void copy_floats(float *restrict dst, const float *restrict src, int n) {
    for (int i = 0; i < n; i++) dst[i] = src[i];
}
#define PACK_INLINE_COPIES __attribute__((optimize("no-tree-loop-distribute-patterns")))

/* One full panel of MR rows, not transposed: k outer, so MR source rows stream together and the
 * panel is written in order; the next panel's rows are fetched one block behind. MR is a constant
 * at each call, so the inner loop unrolls. */
static inline __attribute__((always_inline)) void pack_a_panel(float *d, const float *a, size_t lda, int kc,
                                                               int MR, int next) {
    for (int k0 = 0; k0 < kc; k0 += PACK_K_BLOCK) {
        const int k1 = kc - k0 < PACK_K_BLOCK ? kc : k0 + PACK_K_BLOCK;
        if (next)
            for (int i = 0; i < MR; i++) __builtin_prefetch(a + (size_t)(MR + i) * lda + k0);
        for (int k = k0; k < k1; k++)
            for (int i = 0; i < MR; i++) d[(size_t)k * MR + i] = a[(size_t)i * lda + k];
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
/* rows[0..3][k0..k0+7] transposed into o: o[j * ldo + i] = rows[i][k0 + j], 8 rows of 4 floats. */
__attribute__((target("avx2"))) static inline void transpose4x8_avx2(float *o, size_t ldo, const float *const *rows,
                                                                     int k0) {
    const __m256 r0 = _mm256_loadu_ps(rows[0] + k0), r1 = _mm256_loadu_ps(rows[1] + k0);
    const __m256 r2 = _mm256_loadu_ps(rows[2] + k0), r3 = _mm256_loadu_ps(rows[3] + k0);
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    const __m256 u[4] = {_mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)),
                         _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2))};
    for (int j = 0; j < 4; j++) { /* u[j] holds k0 + j in its low half, k0 + 4 + j in its high one */
        _mm_storeu_ps(o + (size_t)j * ldo, _mm256_castps256_ps128(u[j]));
        _mm_storeu_ps(o + (size_t)(j + 4) * ldo, _mm256_extractf128_ps(u[j], 1));
    }
}

/* pack_a_panel for a full panel of 12 rows (the AVX-512 kernel's MR) through transposes, 8 k at a
 * time: rows 0-7 as an 8 x 8 block (gk_transpose8_avx2), rows 8-11 as a 4 x 8 one; the last kc % 8
 * k element by element. The scalar loop gathers one float per load from 12 rows: 5.5% of small's
 * training step on AVX-512. The same floats in the same places. */
__attribute__((target("avx2"))) static void pack_a_panel12_avx2(float *d, const float *a, size_t lda, int kc,
                                                                int next) {
    const float *rows[12];
    for (int i = 0; i < 12; i++) rows[i] = a + (size_t)i * lda;
    const int k8 = kc & ~7;
    for (int k0 = 0; k0 < k8; k0 += 8) {
        if (next && k0 % PACK_K_BLOCK == 0)
            for (int i = 0; i < 12; i++) __builtin_prefetch(a + (size_t)(12 + i) * lda + k0);
        float *o = d + (size_t)k0 * 12;
        gk_transpose8_avx2(o, 12, rows, k0);
        transpose4x8_avx2(o + 8, 12, rows + 8, k0);
    }
    for (int k = k8; k < kc; k++)
        for (int i = 0; i < 12; i++) d[(size_t)k * 12 + i] = rows[i][k];
}

/* pack_a_panel for a full panel of 6 rows (the AVX2 kernel's MR), 8 k at a time: rows 0-3 as a
 * 4 x 8 transpose, rows 4-5 interleaved in pairs; the last kc % 8 k element by element. The same
 * floats in the same places as the scalar loop, which gathers one float per load from 6 rows. */
__attribute__((target("avx2"))) static void pack_a_panel6_avx2(float *d, const float *a, size_t lda, int kc,
                                                               int next) {
    const float *rows[6];
    for (int i = 0; i < 6; i++) rows[i] = a + (size_t)i * lda;
    const int k8 = kc & ~7;
    for (int k0 = 0; k0 < k8; k0 += 8) {
        if (next && k0 % PACK_K_BLOCK == 0)
            for (int i = 0; i < 6; i++) __builtin_prefetch(a + (size_t)(6 + i) * lda + k0);
        float *o = d + (size_t)k0 * 6;
        transpose4x8_avx2(o, 6, rows, k0);
        /* rows 4 and 5: p[0] = (k0, k0+1 | k0+4, k0+5) pairs, p[1] = (k0+2, k0+3 | k0+6, k0+7) */
        const __m256 r4 = _mm256_loadu_ps(rows[4] + k0), r5 = _mm256_loadu_ps(rows[5] + k0);
        const __m256 p[2] = {_mm256_unpacklo_ps(r4, r5), _mm256_unpackhi_ps(r4, r5)};
        for (int h = 0; h < 2; h++) { /* h: the lane, k0 + 4h ... */
            const __m128 lo = h ? _mm256_extractf128_ps(p[0], 1) : _mm256_castps256_ps128(p[0]);
            const __m128 hi = h ? _mm256_extractf128_ps(p[1], 1) : _mm256_castps256_ps128(p[1]);
            float *ok = o + (size_t)(4 * h) * 6 + 4;
            _mm_storel_pi((__m64 *)ok, lo);
            _mm_storeh_pi((__m64 *)(ok + 6), lo);
            _mm_storel_pi((__m64 *)(ok + 12), hi);
            _mm_storeh_pi((__m64 *)(ok + 18), hi);
        }
    }
    for (int k = k8; k < kc; k++)
        for (int i = 0; i < 6; i++) d[(size_t)k * 6 + i] = rows[i][k];
}
#endif

/* op(A)[m0:m0+mc, p0:p0+kc] into MR-row panels dst[panel][k*MR + i], zero-padded. Source rows are
 * read contiguously: along k when A is not transposed, along m (the whole block per k) when it is,
 * so a large lda never means one page per element. */
PACK_INLINE_COPIES static void pack_a(float *dst, const float *A, int lda, int trans, int m0, int mc, int p0, int kc,
                                      int MR) {
    if (trans) {
        for (int k = 0; k < kc; k++) {
            const float *src = A + (size_t)(p0 + k) * lda + m0;
            if (k + PACK_ROWS_AHEAD < kc) {
                const float *ahead = src + (size_t)PACK_ROWS_AHEAD * lda;
                for (int i = 0; i < mc; i += 16) __builtin_prefetch(ahead + i);
                __builtin_prefetch(ahead + mc - 1);
            }
            float *d = dst + (size_t)k * MR;
            const size_t panel = (size_t)MR * kc;
            int ir = 0;
            if (MR == 6)
                for (; ir + 6 <= mc; ir += 6, d += panel) copy_floats(d, src + ir, 6);
            else if (MR == 12)
                for (; ir + 12 <= mc; ir += 12, d += panel) copy_floats(d, src + ir, 12);
            else
                for (; ir + MR <= mc; ir += MR, d += panel) copy_floats(d, src + ir, MR);
            if (ir < mc) {
                int i = 0;
                for (; i < mc - ir; i++) d[i] = src[ir + i];
                for (; i < MR; i++) d[i] = 0;
            }
        }
        return;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    const int avx2 = (MR == 12 || MR == 6) && __builtin_cpu_supports("avx2");
#endif
    for (int ir = 0; ir < mc; ir += MR, dst += (size_t)MR * kc) {
        const int rows = mc - ir < MR ? mc - ir : MR;
        const float *a = A + (size_t)(m0 + ir) * lda + p0;
        if (rows == MR) {
            const int next = mc - ir >= 2 * MR;
#if defined(__x86_64__) && defined(__GNUC__)
            if (avx2) {
                if (MR == 6)
                    pack_a_panel6_avx2(dst, a, (size_t)lda, kc, next);
                else
                    pack_a_panel12_avx2(dst, a, (size_t)lda, kc, next);
                continue;
            }
#endif
            if (MR == 6)
                pack_a_panel(dst, a, (size_t)lda, kc, 6, next);
            else if (MR == 12)
                pack_a_panel(dst, a, (size_t)lda, kc, 12, next);
            else
                pack_a_panel(dst, a, (size_t)lda, kc, MR, next);
            continue;
        }
        for (int i = 0; i < MR; i++) {
            if (i < rows) {
                const float *src = a + (size_t)i * lda;
                for (int k = 0; k < kc; k++) dst[(size_t)k * MR + i] = src[k];
            } else {
                for (int k = 0; k < kc; k++) dst[(size_t)k * MR + i] = 0;
            }
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The first cols / 8 groups of 8 columns of a transposed-B panel (column j is row j of b, ldb
 * apart) through the 8 x 8 transpose, instead of one scattered store per element; the last kc % 8
 * rows element by element. Returns the columns done; pack_b does the rest. The same floats in the
 * same places. */
__attribute__((target("avx2"))) static int pack_b_trans_cols8_avx2(float *d, const float *b, int ldb, int kc, int cols,
                                                                   int NR) {
    const int k8 = kc & ~7;
    int j0 = 0;
    for (; j0 + 8 <= cols; j0 += 8) {
        const float *rows[8];
        for (int l = 0; l < 8; l++) rows[l] = b + (size_t)(j0 + l) * ldb;
        for (int k = 0; k < k8; k += 8) gk_transpose8_avx2(d + (size_t)k * NR + j0, NR, rows, k);
        for (int k = k8; k < kc; k++)
            for (int l = 0; l < 8; l++) d[(size_t)k * NR + j0 + l] = rows[l][k];
    }
    return j0;
}
#endif

/* op(B)[p0:p0+kc, n0:n0+nc] into NR-column panels dst[panel][k*NR + j], zero-padded; rows of the
 * source are read contiguously (along n per k, or along k per column when B is transposed). */
PACK_INLINE_COPIES static void pack_b(float *dst, const float *B, int ldb, int trans, int p0, int kc, int n0, int nc,
                                      int NR) {
    const int panels = (nc + NR - 1) / NR;
    if (trans) {
#if defined(__x86_64__) && defined(__GNUC__)
        const int avx2 = __builtin_cpu_supports("avx2");
#endif
        for (int p = 0; p < panels; p++) {
            float *d = dst + (size_t)p * NR * kc;
            const int cols = nc - p * NR < NR ? nc - p * NR : NR;
            int j = 0;
#if defined(__x86_64__) && defined(__GNUC__)
            if (avx2) j = pack_b_trans_cols8_avx2(d, B + (size_t)(n0 + p * NR) * ldb + p0, ldb, kc, cols, NR);
#endif
            for (; j < NR; j++) {
                if (j < cols) {
                    const float *src = B + (size_t)(n0 + p * NR + j) * ldb + p0;
                    for (int k = 0; k < kc; k++) d[(size_t)k * NR + j] = src[k];
                } else {
                    for (int k = 0; k < kc; k++) d[(size_t)k * NR + j] = 0;
                }
            }
        }
        return;
    }
    for (int k = 0; k < kc; k++) {
        const float *src = B + (size_t)(p0 + k) * ldb + n0;
        for (int p = 0; p < panels; p++) {
            float *d = dst + (size_t)p * NR * kc + (size_t)k * NR;
            const int cols = nc - p * NR < NR ? nc - p * NR : NR;
            /* Full AVX2 and AVX-512 panels: constant lengths, so the copies stay inline. */
            if (cols == NR && NR == 16) {
                copy_floats(d, src + p * NR, 16);
                continue;
            }
            if (cols == NR && NR == 32) {
                copy_floats(d, src + p * NR, 32);
                continue;
            }
            copy_floats(d, src + p * NR, cols);
            for (int j = cols; j < NR; j++) d[j] = 0;
        }
    }
}

static void scale_c(int M, int N, float beta, float *C, int ldc) {
    for (int i = 0; i < M; i++) {
        float *c = C + (size_t)i * ldc;
        if (beta == 0)
            memset(c, 0, sizeof(float) * N);
        else if (beta != 1)
            for (int j = 0; j < N; j++) c[j] *= beta;
    }
}

/* op(B) already packed (gk_linear_pack): K-slices of KC rows, each npad columns as NR-wide panels,
 * so slice pc starts at npad * pc and column n0 (a multiple of NR) of it at n0 * kc. */
typedef struct {
    const float *panels;
    long npad;
} packed_b;

/* The microkernel over one K slice of kc of packed operands: C[m,n] = alpha a b + beta C, panel i of
 * a at a + i * astride, panel j of b at b + j * bstride, B's panels outer (each stays in L1 while
 * the row tiles pass). Every packed product goes through here, so all give the same bits. */
static inline void sweep(const gk_microkernel *uk, int m, int n, int kc, float alpha, const float *a, long astride,
                         const float *b, long bstride, float beta, float *C, int ldc) {
    const int MR = uk->mr, NR = uk->nr;
    for (int j = 0; j < n; j += NR) {
        const float *bp = b + (long)(j / NR) * bstride;
        const int cols = n - j < NR ? n - j : NR;
        for (int i = 0; i < m; i += MR)
            uk->fn(kc, a + (long)(i / MR) * astride, bp, C + (size_t)i * ldc + j, ldc, alpha, beta,
                   m - i < MR ? m - i : MR, cols, NULL, 0, 1);
    }
}

/* One work unit: C[m0:m1, n0:n1] over all of K. The unit packs its own B slice, so threads never
 * wait on each other until the end (a preempted thread only delays its own units). */
static void sgemm_unit(const gk_microkernel *uk, int trans_a, int trans_b, int K, float alpha, const float *A,
                       int lda, const float *B, int ldb, float beta, float *C, int ldc, int m0, int m1, int n0,
                       int n1, float *apack, float *bpack, const packed_b *pre) {
    const int MR = uk->mr, NR = uk->nr, MC = MR * GK_MC_PANELS_FOR(MR);
    const int nc = n1 - n0;
    for (int pc = 0; pc < K; pc += KC) {
        const int kc = K - pc < KC ? K - pc : KC;
        const float b_eff = pc == 0 ? beta : 1.0f;
        if (pre) /* already in panel order: this slice's panels from column n0 on */
            bpack = (float *)pre->panels + (size_t)pre->npad * pc + (size_t)n0 * kc;
        else
            pack_b(bpack, B, ldb, trans_b, pc, kc, n0, nc, NR);
        for (int ic = m0; ic < m1; ic += MC) {
            const int mc = m1 - ic < MC ? m1 - ic : MC;
            pack_a(apack, A, lda, trans_a, ic, mc, pc, kc, MR);
            sweep(uk, mc, nc, kc, alpha, apack, (long)MR * kc, bpack, (long)NR * kc, b_eff, C + (size_t)ic * ldc + n0,
                  ldc);
        }
    }
}

/* Tiles: small products inside other kernels' parallel loops (attention's), whose operands are packed
 * once and used many times. An operand is packed whole along K: A as MR-row panels of [k][MR], B as
 * NR-column panels of [k][NR]; a K slice of a panel starts pc rows in. gk_tile_product sweeps the
 * same KC slices with the same alpha and beta as sgemm_unit, so it gives gk_sgemm_serial's bits.
 * Panel strides are explicit so that a product may use a prefix of a packed operand: fewer columns
 * (n), or fewer rows of K than a B panel holds. */
void gk_tile_dims(int *mr, int *nr) {
    gk_sgemm_select_kernel();
    *mr = active->mr;
    *nr = active->nr;
}

void gk_tile_pack_a(float *dst, const float *A, int lda, int trans, int m, int k) {
    gk_sgemm_select_kernel();
    pack_a(dst, A, lda, trans, 0, m, 0, k, active->mr);
}

void gk_tile_pack_b(float *dst, const float *B, int ldb, int trans, int k, int n) {
    gk_sgemm_select_kernel();
    pack_b(dst, B, ldb, trans, 0, k, 0, n, active->nr);
}

void gk_tile_product(int m, int n, int k, float alpha, const float *a, long astride, const float *b, long bstride,
                     float beta, float *C, int ldc) {
    for (int pc = 0; pc < k; pc += KC)
        sweep(active, m, n, k - pc < KC ? k - pc : KC, alpha, a + (long)pc * active->mr, astride,
              b + (long)pc * active->nr, bstride, pc == 0 ? beta : 1.0f, C, ldc);
}

/* Few rows of C with B not packed ahead: packing B would cost more than the product, so C's
 * columns are split across threads and read B in place. A is contiguous rows here. */
enum { SMALL_M = 8, SMALL_COLS = 128 };

typedef float small_v8 __attribute__((vector_size(32)));
typedef float small_v8u __attribute__((vector_size(32), aligned(4)));

/* gk_dot's end: the K % 8 tail into its lanes, then its reduction tree. */
static inline float small_dot_end(const small_v8 *v, const float *a, const float *b, int k0, int K) {
    float lane[8];
    memcpy(lane, v, sizeof lane);
    for (int i = k0; i < K; i++) lane[i & 7] += a[i] * b[i];
    return ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
}

/* The MR (<= 8) rows of A against one row of B (C = A B^T): MR gk_dot products at once, each in its
 * own 8-lane accumulator with gk_dot's lanes and order (so the same bits), but MR independent
 * chains instead of one, and each vector of B, streamed from memory once, used MR times. */
#ifndef SMALL_AHEAD
#define SMALL_AHEAD 1024 /* floats of B prefetched ahead: 1–2 rows of the model's weights */
#endif
static inline __attribute__((always_inline)) void small_nt_row(float *acc, int w, int MR, const float *const *a,
                                                               const float *b, int K) {
    const int K8 = K & ~7;
    small_v8 c[8];
    for (int r = 0; r < MR; r++) c[r] = (small_v8){0, 0, 0, 0, 0, 0, 0, 0};
    for (int k = 0; k < K8; k += 8) {
        __builtin_prefetch(b + SMALL_AHEAD + k);
        const small_v8 y = *(const small_v8u *)(b + k);
        for (int r = 0; r < MR; r++) c[r] += *(const small_v8u *)(a[r] + k) * y;
    }
    for (int r = 0; r < MR; r++) acc[r * w] = small_dot_end(&c[r], a[r], b, K8, K);
}

GK_VECTORIZED
static void small_m_cols(int trans_b, int M, int n0, int n1, int K, float alpha, const float *A, int lda,
                         const float *B, int ldb, float beta, float *C, int ldc) {
    float acc[SMALL_M * SMALL_COLS];
    const int w = n1 - n0;
    if (trans_b) { /* C[m][n] = A[m] . B[n]: gk_dot, every row of A against one row of B at a time */
        const float *a[8];
        for (int r = 0; r < 8; r++) a[r] = A + (size_t)(r < M ? r : 0) * lda;
        for (int n = 0; n < w; n++) {
            const float *b = B + (size_t)(n0 + n) * ldb;
            switch (M) { /* MR a constant in each call, so the accumulators stay in registers */
            case 1: small_nt_row(acc + n, w, 1, a, b, K); break;
            case 2: small_nt_row(acc + n, w, 2, a, b, K); break;
            case 3: small_nt_row(acc + n, w, 3, a, b, K); break;
            case 4: small_nt_row(acc + n, w, 4, a, b, K); break;
            case 5: small_nt_row(acc + n, w, 5, a, b, K); break;
            case 6: small_nt_row(acc + n, w, 6, a, b, K); break;
            case 7: small_nt_row(acc + n, w, 7, a, b, K); break;
            default: small_nt_row(acc + n, w, 8, a, b, K);
            }
        }
    } else { /* C[m][:] = sum_k A[m][k] B[k][:] */
        memset(acc, 0, sizeof(float) * M * w);
        for (int k = 0; k < K; k++) {
            const float *b = B + (size_t)k * ldb + n0;
            for (int m = 0; m < M; m++) {
                const float a = A[(size_t)m * lda + k];
                float *row = acc + m * w;
                for (int n = 0; n < w; n++) row[n] += a * b[n];
            }
        }
    }
    for (int m = 0; m < M; m++) {
        float *c = C + (size_t)m * ldc + n0;
        for (int n = 0; n < w; n++) c[n] = beta == 0 ? alpha * acc[m * w + n] : alpha * acc[m * w + n] + beta * c[n];
    }
}

static void sgemm_small_m(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                          const float *B, int ldb, float beta, float *C, int ldc) {
    float *At = NULL;
    if (trans_a) { /* op(A) into contiguous rows */
        At = malloc(sizeof(float) * (size_t)M * K);
        for (int k = 0; k < K; k++)
            for (int m = 0; m < M; m++) At[(size_t)m * K + k] = A[(size_t)k * lda + m];
        A = At;
        lda = K;
    }
    const int blocks = (N + SMALL_COLS - 1) / SMALL_COLS;
    GK_PARALLEL_FOR(gk_threads_if((long)N * K >= 65536), for (int blk = 0; blk < blocks; blk++) {
        const int n0 = blk * SMALL_COLS, n1 = n0 + SMALL_COLS < N ? n0 + SMALL_COLS : N;
        small_m_cols(trans_b, M, n0, n1, K, alpha, A, lda, B, ldb, beta, C, ldc);
    });
    free(At);
}

/* The product on the calling thread alone, with the microkernel uk: column slices of NC_UNIT, each
 * one sgemm_unit, so every element sees the K slices and microkernel calls it sees in
 * sgemm_parallel — the same bits. pre, when not NULL, is op(B) already packed. */
static void sgemm_serial(const gk_microkernel *uk, int trans_a, int trans_b, int M, int N, int K, float alpha,
                         const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc,
                         const packed_b *pre) {
    const int MR = uk->mr, NR = uk->nr, MC = MR * GK_MC_PANELS_FOR(MR);
    const int kcmax = K < KC ? K : KC, ncu = N < NC_UNIT ? N : NC_UNIT;
    float *apack = gk_scratch(GK_SCRATCH_SERIAL_A, (size_t)MC * kcmax);
    float *bpack = pre ? NULL : gk_scratch(GK_SCRATCH_SERIAL_B, (size_t)kcmax * ((ncu + NR - 1) / NR * NR));
    if (!apack || (!pre && !bpack)) {
        gk_set_error("sgemm: out of memory for packing");
        return;
    }
    for (int n0 = 0; n0 < N; n0 += ncu)
        sgemm_unit(uk, trans_a, trans_b, K, alpha, A, lda, B, ldb, beta, C, ldc, 0, M, n0, n0 + ncu < N ? n0 + ncu : N,
                   apack, bpack, pre);
}

/* The parallel product with the microkernel uk; pre, when not NULL, is op(B) already packed. */
static void sgemm_parallel(const gk_microkernel *uk, int trans_a, int trans_b, int M, int N, int K, float alpha,
                           const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc,
                           const packed_b *pre) {
    const int MR = uk->mr, NR = uk->nr, MC = MR * GK_MC_PANELS_FOR(MR);
    const int nt = gk_threads();
    /* Units: column slices of at most NC_UNIT, and row slices when there are fewer slices than
     * threads. Each unit packs its own B slice, so row slices cost one B packing each: one per thread
     * is the least, and equal sizes balance a quiet machine — so the column slices come in a
     * multiple of the threads, equal to an NR panel (1,536 columns on 2 threads: 768 + 768, not
     * 1,024 + 512), and row slices split the MR panels evenly, not whole MC blocks. With B
     * prepacked, column slices cost nothing extra, so there are several per thread for the dynamic
     * schedule to balance. No split changes a bit of C: each element sees the same K order. */
    const int want = pre ? 4 * nt : nt;
    int nparts_n = (N + NC_UNIT - 1) / NC_UNIT;
    if (nparts_n >= nt) nparts_n = (nparts_n + nt - 1) / nt * nt;
    int ncu = ((N + nparts_n - 1) / nparts_n + NR - 1) / NR * NR;
    nparts_n = (N + ncu - 1) / ncu;
    const int mpanels = (M + MR - 1) / MR;
    int nparts_m = 1;
    if (nparts_n < want) nparts_m = (want + nparts_n - 1) / nparts_n < mpanels ? (want + nparts_n - 1) / nparts_n : mpanels;
    while (nparts_n * nparts_m < want && ncu > 4 * NR) {
        ncu = (ncu / 2 + NR - 1) / NR * NR;
        nparts_n = (N + ncu - 1) / ncu;
    }
    const int units = nparts_n * nparts_m;
    const int kcmax = K < KC ? K : KC;
    const size_t bfloats = pre ? 0 : (size_t)kcmax * ncu, afloats = (size_t)MC * kcmax;

#pragma omp parallel for num_threads(units < nt ? units : nt) schedule(dynamic, 1)
    for (int u = 0; u < units; u++) {
        float *apack = gk_scratch(GK_SCRATCH_A, afloats), *bpack = pre ? NULL : gk_scratch(GK_SCRATCH_B, bfloats);
        if (!apack || (!pre && !bpack)) {
            gk_set_error("sgemm: out of memory for packing");
            continue;
        }
        const int um = u / nparts_n, un = u % nparts_n;
        const int m0 = (int)((long)mpanels * um / nparts_m) * MR;
        const int m1 = um == nparts_m - 1 ? M : (int)((long)mpanels * (um + 1) / nparts_m) * MR;
        const int n0 = un * ncu, n1 = n0 + ncu < N ? n0 + ncu : N;
        sgemm_unit(uk, trans_a, trans_b, K, alpha, A, lda, B, ldb, beta, C, ldc, m0, m1, n0, n1, apack, bpack, pre);
    }
}

void gk_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0) {
        scale_c(M, N, beta, C, ldc);
        return;
    }
    if (M <= SMALL_M) {
        sgemm_small_m(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    if (gk_accelerate_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
    gk_sgemm_select_kernel();
    if ((long)M * N * K < GK_SERIAL_WORK)
        sgemm_serial(active, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
    else
        sgemm_parallel(active, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

void gk_sgemm_serial(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0) {
        scale_c(M, N, beta, C, ldc);
        return;
    }
    gk_sgemm_select_kernel();
    sgemm_serial(active, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

static void fill_bias(float *y, const float *b, int T, int out) {
    GK_PARALLEL_FOR(gk_threads_if((long)T * out > 65536),
                    for (int t = 0; t < T; t++) memcpy(y + (size_t)t * out, b, sizeof(float) * out););
}

void gk_linear_forward(float *y, const float *x, const float *W, const float *b, int T, int in, int out) {
    if (b) fill_bias(y, b, T, out);
    gk_sgemm(0, 1, T, out, in, 1.0f, x, in, W, in, b ? 1.0f : 0.0f, y, out);
}

/* Packed weights: a header of PACK_HEADER floats (kernel, sizes; 64 bytes keep the panels aligned),
 * then W^T as sgemm_unit packs it: for each KC-row slice of K, npad columns in NR-wide panels. */
enum { PACK_HEADER = 16, PACK_MAGIC = 0x67736b70 /* "gskp" */ };

static long packed_npad(int out, int NR) { return (long)(out + NR - 1) / NR * NR; }

long gk_linear_packed_floats(int in, int out) {
    gk_sgemm_select_kernel();
    return PACK_HEADER + packed_npad(out, active->nr) * in;
}

void gk_linear_pack(float *Wp, const float *W, int in, int out) {
    gk_sgemm_select_kernel();
    const int NR = active->nr;
    const long npad = packed_npad(out, NR);
    int32_t *hdr = (int32_t *)Wp;
    memset(Wp, 0, sizeof(float) * PACK_HEADER);
    hdr[0] = PACK_MAGIC;
    hdr[1] = (int32_t)(active - gk_microkernels);
    hdr[2] = in;
    hdr[3] = out;
    hdr[4] = KC;
    /* Each (K slice, block of panels) is independent; a block is 64 panels. */
    const int slices = (in + KC - 1) / KC, blocks = (int)((npad / NR + 63) / 64);
#pragma omp parallel for num_threads(gk_threads()) schedule(static) if ((long)in * out > 65536)
    for (int i = 0; i < slices * blocks; i++) {
        const int pc = i / blocks * KC, kc = in - pc < KC ? in - pc : KC;
        const int n0 = i % blocks * 64 * NR, nc = out - n0 < 64 * NR ? out - n0 : 64 * NR;
        if (nc > 0) pack_b(Wp + PACK_HEADER + npad * pc + (size_t)n0 * kc, W, in, 1, pc, kc, n0, nc, NR);
    }
}

/* The products C_i[M,N_i] = A[M,K] * op(B_i) + beta_i * C_i, i < n, for M within one MC block and each
 * op(B_i) prepacked (a decode step: q, k and v, or gate and up, of one input): the threads pack A
 * once, together, then share out NR-panel column ranges of all n products dynamically, in one
 * parallel region. Each element sees sgemm_unit's K slices and microkernel calls, so the bits match
 * gk_sgemm's. */
enum { MULTI_MAX = 4 };
static void sgemm_one_block_packed(const gk_microkernel *uk, int n, int M, const int *Ns, int K, const float *A,
                                   int lda, const packed_b *pres, const float *betas, float *const *Cs) {
    const int MR = uk->mr, NR = uk->nr, nt = gk_threads();
    const long mpad = (long)(M + MR - 1) / MR * MR;
    const int slices = (K + KC - 1) / KC, tiles = (M + MR - 1) / MR;
    float *apack = gk_scratch(GK_SCRATCH_SHARED_A, (size_t)mpad * K);
    if (!apack) {
        gk_set_error("sgemm: out of memory for packing");
        return;
    }
    /* About four column ranges per thread over all the products, at least two panels each; first[i]
     * is product i's first unit. */
    int panels[MULTI_MAX], first[MULTI_MAX + 1], total = 0;
    for (int i = 0; i < n; i++) total += panels[i] = (Ns[i] + NR - 1) / NR;
    int per = total / (4 * nt);
    if (per < 2) per = 2;
    first[0] = 0;
    for (int i = 0; i < n; i++) first[i + 1] = first[i] + (panels[i] + per - 1) / per;
    const int units = first[n];
#pragma omp parallel num_threads(nt)
    {
#pragma omp for schedule(static)
        for (int s = 0; s < slices; s++) {
            const int pc = s * KC, kc = K - pc < KC ? K - pc : KC;
            pack_a(apack + mpad * pc, A, lda, 0, 0, M, pc, kc, MR);
        }
#pragma omp for schedule(dynamic, 1)
        for (int u = 0; u < units; u++) {
            int i = 0;
            while (u >= first[i + 1]) i++;
            const int N = Ns[i], ldc = N;
            const packed_b *pre = &pres[i];
            float *C = Cs[i];
            const int p0 = (u - first[i]) * per, p1 = p0 + per < panels[i] ? p0 + per : panels[i];
            for (int pc = 0; pc < K; pc += KC) {
                const int kc = K - pc < KC ? K - pc : KC;
                const float b_eff = pc == 0 ? betas[i] : 1.0f;
                const float *ap = apack + mpad * pc, *bslice = pre->panels + (size_t)pre->npad * pc;
                for (int p = p0; p < p1; p++) {
                    const int cols = N - p * NR < NR ? N - p * NR : NR;
                    const float *bp = bslice + (size_t)p * NR * kc;
                    /* The weights stream from memory once per step: the row tiles fetch the next
                     * panel (this slice's, or the next slice's first) into L2 as they go — tile t
                     * its rows t, t + tiles, ... inside the microkernel where it has the registers,
                     * else a share of the panel's lines before each tile. */
                    const float *next = NULL;
                    int nk = kc;
                    if (p + 1 < p1)
                        next = bp + (size_t)NR * kc;
                    else if (pc + KC < K) {
                        nk = K - pc - KC < KC ? K - pc - KC : KC;
                        next = pre->panels + (size_t)pre->npad * (pc + KC) + (size_t)p0 * NR * nk;
                    }
                    const long next_lines = next && !uk->paced_prefetch ? (long)NR * nk / 16 : 0;
                    for (int ir = 0, t = 0; ir < M; ir += MR, t++) {
                        const int rows = M - ir < MR ? M - ir : MR;
                        for (long l = next_lines * t / tiles; l < next_lines * (t + 1) / tiles; l++)
                            __builtin_prefetch(next + l * 16, 0, 2);
                        uk->fn(kc, ap + (size_t)ir * kc, bp, C + (size_t)ir * ldc + p * NR, ldc, 1.0f, b_eff, rows,
                               cols, uk->paced_prefetch ? next : NULL, t, tiles);
                    }
                }
            }
        }
    }
}

/* Whether T rows fit the one MC block sgemm_one_block_packed takes. */
static int one_block(const gk_microkernel *uk, int T) { return T <= uk->mr * GK_MC_PANELS_FOR(uk->mr); }

/* Whether Wp holds W[out,in] packed for the kernel in use. */
static int packed_for(const float *Wp, int in, int out) {
    const int32_t *hdr = (const int32_t *)Wp;
    return hdr[0] == PACK_MAGIC && hdr[1] == (int32_t)(active - gk_microkernels) && hdr[2] == in && hdr[3] == out &&
           hdr[4] == KC;
}

/* y = x W^T (+ b) with W prepacked (Wp): the microkernel at every row count — a decode step of one
 * or eight sequences gives each row the bits a training forward of many rows gives it (its short
 * tiles sum the same products in the same order), and from weights streamed out of memory it is as
 * fast as the in-place few-row path at 1-2 rows and 1.2-1.5x it at 8 (kernels/README.md). */
void gk_linear_forward_packed(float *y, const float *x, const float *W, const float *Wp, const float *b, int T, int in,
                              int out) {
    gk_sgemm_select_kernel();
    if (!packed_for(Wp, in, out)) {
        gk_linear_forward(y, x, W, b, T, in, out); /* packed for another kernel or shape: W is the truth */
        return;
    }
    if (T <= 0 || out <= 0) return;
    if (b) fill_bias(y, b, T, out);
    if (in <= 0) {
        if (!b) scale_c(T, out, 0, y, out);
        return;
    }
    const packed_b pre = {Wp + PACK_HEADER, packed_npad(out, active->nr)};
    const gk_microkernel *uk = active;
    const float beta = b ? 1.0f : 0.0f;
    if ((long)T * out * in < GK_SERIAL_WORK)
        sgemm_serial(uk, 0, 1, T, out, in, 1.0f, x, in, W, in, beta, y, out, &pre);
    else if (one_block(uk, T))
        sgemm_one_block_packed(uk, 1, T, &out, in, x, in, &pre, &beta, &y);
    else
        sgemm_parallel(uk, 0, 1, T, out, in, 1.0f, x, in, W, in, beta, y, out, &pre);
}

/* Test hook: gk_linear_forward_packed n times in a row from C, with no Go in between; the baseline
 * of the same calls made one by one from Go (BenchmarkLinearForwardPackedCalls). */
void gk_linear_forward_packed_repeat(int n, float *y, const float *x, const float *W, const float *Wp, const float *b,
                                     int T, int in, int out) {
    for (int i = 0; i < n; i++) gk_linear_forward_packed(y, x, W, Wp, b, T, in, out);
}

void gk_linear_forward_packed_multi(int n, float *const *ys, const float *x, const float *const *Ws,
                                    const float *const *Wps, const float *const *bs, int T, int in, const int *outs) {
    gk_sgemm_select_kernel();
    const gk_microkernel *uk = active;
    long work = 0;
    int together = n >= 2 && n <= MULTI_MAX && one_block(uk, T) && in > 0;
    for (int i = 0; together && i < n; i++) {
        together = outs[i] > 0 && packed_for(Wps[i], in, outs[i]);
        work += (long)T * outs[i] * in;
    }
    if (!together || work < GK_SERIAL_WORK) { /* one at a time, as gk_linear_forward_packed does each */
        for (int i = 0; i < n; i++) gk_linear_forward_packed(ys[i], x, Ws[i], Wps[i], bs[i], T, in, outs[i]);
        return;
    }
    packed_b pres[MULTI_MAX];
    float betas[MULTI_MAX];
    for (int i = 0; i < n; i++) {
        if (bs[i]) fill_bias(ys[i], bs[i], T, outs[i]);
        pres[i] = (packed_b){Wps[i] + PACK_HEADER, packed_npad(outs[i], uk->nr)};
        betas[i] = bs[i] ? 1.0f : 0.0f;
    }
    sgemm_one_block_packed(uk, n, T, outs, in, x, in, pres, betas, ys);
}

void gk_linear_backward(float *dx, float *dW, float *db, const float *dy, const float *x, const float *W,
                        int T, int in, int out) {
    if (dx) gk_sgemm(0, 0, T, in, out, 1.0f, dy, out, W, in, 1.0f, dx, in);
    if (dW) gk_sgemm(1, 0, out, in, T, 1.0f, dy, out, x, in, 1.0f, dW, in);
    if (db) {
        /* Column sums: threads split the columns and walk the rows in order. */
        int nt = (long)T * out > 65536 ? gk_threads() : 1;
#pragma omp parallel num_threads(nt)
        {
            int th = omp_get_thread_num(), n = omp_get_num_threads();
            int o0 = (int)((long)out * th / n), o1 = (int)((long)out * (th + 1) / n);
            for (int t = 0; t < T; t++) {
                const float *d = dy + (size_t)t * out;
                for (int o = o0; o < o1; o++) db[o] += d[o];
            }
        }
    }
}
