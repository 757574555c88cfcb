/* sgemm_kernels.c — SGEMM microkernels: an MR x NR block of C from packed panels of A and B.
 *
 * One kernel body, written with GCC vector types, is instantiated per instruction set:
 * AVX-512 (12 x 32: 24 zmm accumulators), AVX2+FMA (6 x 16: 12 ymm accumulators) and a plain-C
 * build (4 x 8, 4-wide vectors that every target lowers). Because the AVX-512 text is the AVX2 text
 * at a wider vector, the tests also run the 12 x 32 instantiation built for AVX2 to check its
 * packing and edge handling on machines without AVX-512.
 *
 * Packed layouts: a[k*MR + i] (A panel, MR rows), b[k*NR + j] (B panel, NR columns), both 64-byte
 * aligned and zero-padded at the edges. The kernel writes C = alpha*a*b + beta*C (C not read when
 * beta == 0) for the mr x nr corner that lies inside the matrix. */
#include <string.h>

#include "sgemm.h"

/* The body for the first R rows of a panel (R <= MR: the rest of an edge panel is zero padding),
 * R a constant after inlining. Each element of C sees the same products in the same order whatever
 * R is, so a short tile gives the bits of a full one. */
#define GK_MICROKERNEL(NAME, ATTR, VEC, VW, MR, NV, WIDE)                                                 \
    ATTR static inline __attribute__((always_inline)) void NAME##_rows(                                   \
        const int R, const int PF, int kc, const float *restrict a, const float *restrict b,              \
        float *restrict c, long ldc, float alpha, float beta, int mr, int nr, const float *pf,            \
        int pf_first, int pf_every) {                                                                     \
        typedef float vec __attribute__((vector_size(VEC)));                                              \
        typedef float uvec __attribute__((vector_size(VEC), aligned(4)));                                 \
        enum { NR = VW * NV };                                                                            \
        vec acc[MR][NV];                                                                                  \
        /* C is usually far from cache: start fetching it now, it is needed at the end. */                \
        for (int i = 0; i < R; i++) {                                                                     \
            __builtin_prefetch(c + i * ldc, 1, 3);                                                        \
            __builtin_prefetch(c + i * ldc + NR - 1, 1, 3);                                               \
        }                                                                                                 \
        for (int i = 0; i < R; i++)                                                                       \
            for (int v = 0; v < NV; v++) acc[i][v] = (vec){0};                                            \
        int pf_due = pf_first;                                                                            \
        _Pragma("GCC unroll 4") for (int k = 0; k < kc; k++) {                                            \
            vec bv[NV];                                                                                   \
            for (int v = 0; v < NV; v++) bv[v] = *(const vec *)(b + (long)k * NR + v * VW);               \
            if (PF && k == pf_due) {                                                                      \
                for (int l = 0; l < NR; l += 16) __builtin_prefetch(pf + (long)k * NR + l, 0, 2);         \
                pf_due += pf_every;                                                                       \
            }                                                                                             \
            for (int i = 0; i < R; i++) {                                                                 \
                vec av = a[(long)k * MR + i] - (vec){0};                                                  \
                for (int v = 0; v < NV; v++) acc[i][v] += av * bv[v];                                     \
            }                                                                                             \
        }                                                                                                 \
        if (mr == R && nr == NR) {                                                                        \
            for (int i = 0; i < R; i++)                                                                   \
                for (int v = 0; v < NV; v++) {                                                            \
                    uvec *cp = (uvec *)(c + i * ldc + v * VW);                                            \
                    vec r = acc[i][v] * alpha;                                                            \
                    if (beta != 0) r += *cp * beta;                                                       \
                    *cp = r;                                                                              \
                }                                                                                         \
            return;                                                                                       \
        }                                                                                                 \
        float tile[MR][NR] __attribute__((aligned(64)));                                                  \
        for (int i = 0; i < R; i++)                                                                       \
            for (int v = 0; v < NV; v++) *(vec *)&tile[i][v * VW] = acc[i][v];                            \
        for (int i = 0; i < mr; i++)                                                                      \
            for (int j = 0; j < nr; j++) {                                                                \
                float r = alpha * tile[i][j];                                                             \
                c[i * ldc + j] = beta != 0 ? r + beta * c[i * ldc + j] : r;                               \
            }                                                                                             \
    }                                                                                                     \
    /* A panel's last rows often hold a few real rows (a decode step of 16 sequences: 12 + 4; a step of    \
     * one or two sequences): with WIDE, those run one or two rows, or a third or two thirds of the       \
     * multiply-adds. Only where the registers allow: on AVX2 (16 registers) the extra bodies made GCC    \
     * compile the full one worse (64-row products 150-160 -> 112-129 GFLOP/s): the AVX2 kernel gets     \
     * them as functions of their own instead (GK_ROWS_FN, kernel_avx2_split). */                          \
    ATTR static inline __attribute__((always_inline)) void NAME##_pf(                                     \
        const int PF, int kc, const float *restrict a, const float *restrict b, float *restrict c,        \
        long ldc, float alpha, float beta, int mr, int nr, const float *pf, int pf_first,                 \
        int pf_every) {                                                                                   \
        if (WIDE && mr == 1)                                                                              \
            NAME##_rows(1, PF, kc, a, b, c, ldc, alpha, beta, mr, nr, pf, pf_first, pf_every);            \
        else if (WIDE && mr == 2)                                                                         \
            NAME##_rows(2, PF, kc, a, b, c, ldc, alpha, beta, mr, nr, pf, pf_first, pf_every);            \
        else if (WIDE && mr <= MR / 3)                                                                    \
            NAME##_rows(MR / 3, PF, kc, a, b, c, ldc, alpha, beta, mr, nr, pf, pf_first, pf_every);       \
        else if (WIDE && mr <= 2 * MR / 3)                                                                \
            NAME##_rows(2 * MR / 3, PF, kc, a, b, c, ldc, alpha, beta, mr, nr, pf, pf_first, pf_every);   \
        else                                                                                              \
            NAME##_rows(MR, PF, kc, a, b, c, ldc, alpha, beta, mr, nr, pf, pf_first, pf_every);           \
    }                                                                                                     \
    /* pf, when not NULL, is a panel of kc x NR floats to fetch into L2 while this one runs (the next     \
     * panel of weights streaming from memory): its rows pf_first, pf_first + pf_every, ..., each at the  \
     * iteration that reads the same row here, so that the row tiles of a panel share the fetching        \
     * evenly and none waits on a burst of it. */                                                         \
    ATTR static void NAME(int kc, const float *restrict a, const float *restrict b, float *restrict c,    \
                          long ldc, float alpha, float beta, int mr, int nr, const float *pf,             \
                          int pf_first, int pf_every) {                                                   \
        if (WIDE && pf) /* the paced prefetch, also only with registers to spare */                       \
            NAME##_pf(1, kc, a, b, c, ldc, alpha, beta, mr, nr, pf, pf_first, pf_every);                  \
        else                                                                                              \
            NAME##_pf(0, kc, a, b, c, ldc, alpha, beta, mr, nr, pf, 0, 1);                                \
    }                                                                                                     \
    enum { NAME##_paced = WIDE };

/* One row count R of NAME##_rows, with (PF 1) or without the paced prefetch, compiled as a function
 * of its own: GCC allocates the registers of each body alone, so a kernel with few registers gets
 * short row tiles and the paced prefetch without the full body losing any (see the WIDE note). */
#define GK_ROWS_FN(NAME, ATTR, R, PF)                                                                     \
    ATTR static __attribute__((noinline)) void NAME##_r##R##_pf##PF(                                      \
        int kc, const float *restrict a, const float *restrict b, float *restrict c, long ldc,            \
        float alpha, float beta, int mr, int nr, const float *pf, int pf_first, int pf_every) {           \
        NAME##_rows(R, PF, kc, a, b, c, ldc, alpha, beta, mr, nr, pf, pf_first, pf_every);               \
    }

#if defined(__x86_64__) && defined(__GNUC__)
GK_MICROKERNEL(kernel_avx512, __attribute__((target("avx512f,avx2,fma"))), 64, 16, 12, 2, 1)
GK_MICROKERNEL(kernel_avx2, __attribute__((target("avx2,fma"))), 32, 8, 6, 2, 0)
#define AVX2_ROWS(R) GK_ROWS_FN(kernel_avx2, __attribute__((target("avx2,fma"))), R, 0) \
    GK_ROWS_FN(kernel_avx2, __attribute__((target("avx2,fma"))), R, 1)
AVX2_ROWS(1)
AVX2_ROWS(2)
AVX2_ROWS(4)
GK_ROWS_FN(kernel_avx2, __attribute__((target("avx2,fma"))), 6, 1)
/* The AVX2 kernel as the table runs it: a panel's last 1, 2 or up to 4 real rows run that many (a
 * decode step of 8 sequences is panels of 6 + 2, of 16 is 6 + 6 + 4), and a caller streaming the next
 * panel of weights has it fetched in the loop. Each case is one call into a body compiled alone;
 * every element sees the same products in the same order, so the bits do not change. */
static void kernel_avx2_split(int kc, const float *restrict a, const float *restrict b, float *restrict c, long ldc,
                              float alpha, float beta, int mr, int nr, const float *pf, int pf_first, int pf_every) {
    static const gk_microkernel_fn body[2][4] = {
        {kernel_avx2_r1_pf0, kernel_avx2_r2_pf0, kernel_avx2_r4_pf0, kernel_avx2},
        {kernel_avx2_r1_pf1, kernel_avx2_r2_pf1, kernel_avx2_r4_pf1, kernel_avx2_r6_pf1}};
    const int rows = mr == 1 ? 0 : mr == 2 ? 1 : mr <= 4 ? 2 : 3;
    body[pf != NULL][rows](kc, a, b, c, ldc, alpha, beta, mr, nr, pf, pf_first, pf_every);
}

/* The AVX-512 body built for AVX2, so its shape is tested where AVX-512 is missing. */
GK_MICROKERNEL(kernel_avx512_shape_on_avx2, __attribute__((target("avx2,fma"))), 64, 16, 12, 2, 1)
#endif
GK_MICROKERNEL(kernel_generic, , 16, 4, 4, 2, 0)

const gk_microkernel gk_microkernels[] = {
#if defined(__x86_64__) && defined(__GNUC__)
    {"cpu-avx512", 12, 32, kernel_avx512, kernel_avx512_paced},
    {"cpu-avx2", 6, 16, kernel_avx2_split, 1},
    {"cpu-avx2-one-body", 6, 16, kernel_avx2, kernel_avx2_paced}, /* the body alone: the split's baseline */
    {"cpu-avx512-shape-on-avx2", 12, 32, kernel_avx512_shape_on_avx2, kernel_avx512_shape_on_avx2_paced},
#endif
#if defined(__aarch64__)
    {"cpu-neon", 12, 8, gk_kernel_neon, 1}, /* sgemm_neon.c */
#endif
    {"cpu-generic", 4, 8, kernel_generic, kernel_generic_paced},
    {NULL, 0, 0, NULL},
};

const gk_microkernel *gk_microkernel_at(int i) {
    int n = 0;
    while (gk_microkernels[n].name) n++;
    return i >= 0 && i < n ? &gk_microkernels[i] : NULL;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* Whether the AVX-512 kernel may run: the CPU has it and the build allows it (-tags noavx512 does
 * not). */
static int cpu_avx512(void) {
#ifdef GK_NO_AVX512
    return 0;
#else
    return __builtin_cpu_supports("avx512f");
#endif
}
#endif

/* Whether this CPU can run kernel k. */
int gk_microkernel_runs(const gk_microkernel *k) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (strcmp(k->name, "cpu-avx512") == 0) return cpu_avx512();
    if (strncmp(k->name, "cpu-avx", 7) == 0) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return 1;
}

/* The best kernel this CPU runs (tests and benchmarks switch kernels with gk_sgemm_use_kernel). */
const gk_microkernel *gk_microkernel_best(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (cpu_avx512()) return &gk_microkernels[0];
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &gk_microkernels[1];
#endif
#if defined(__aarch64__)
    return &gk_microkernels[0]; /* cpu-neon: every AArch64 CPU has NEON */
#endif
    for (const gk_microkernel *k = gk_microkernels; k->name; k++)
        if (strcmp(k->name, "cpu-generic") == 0) return k;
    return NULL;
}
