/*
 * cpu.h — what the CPU kernel files share: the thread count every OpenMP region uses.
 *
 * libgomp keeps omp_set_num_threads per calling OS thread, and Go calls in from any OS thread, so
 * every parallel region names its thread count explicitly with num_threads(gk_threads()).
 */
#ifndef GORSTAR_CPU_H
#define GORSTAR_CPU_H

#include <string.h>

#include "gorstar_kernels.h"

#ifdef _OPENMP
#include <omp.h>
#else
/* A compiler without OpenMP (Apple's clang, unless given libomp): every region runs on the
 * calling thread, its pragmas ignored; the same bits, since no result depends on the thread count
 * beyond what the kernels fix themselves. */
static inline int omp_get_num_procs(void) { return 1; }
static inline int omp_get_num_threads(void) { return 1; }
static inline int omp_get_thread_num(void) { return 0; }
static inline int omp_in_parallel(void) { return 0; }
#endif

/* No code here reads floating-point exception flags or errno, and without these GCC will not turn
 * the selects in gk_expf or the lane reductions into vector code (cgo rejects the flags on the
 * command line). Neither changes any result. sqrtf stays scalar even so (GCC takes whether the math
 * builtins may set errno from the command line only): adamw.c vectorizes its square roots itself. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math", "no-math-errno")
#endif

void gk_set_error(const char *msg);

/* sgemm_accelerate.c: Apple's Accelerate for gk_sgemm's large products on macOS (never elsewhere). */
void gk_accelerate_init(void);
void gk_accelerate_allow(int allow);
int gk_accelerate_active(void);
int gk_accelerate_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                        const float *B, int ldb, float beta, float *C, int ldc);

/* Buffers kept per OS thread between calls (libgomp keeps its worker threads), 64-byte aligned and
 * grown as needed: packing buffers and workspaces would otherwise be mapped and faulted in afresh
 * each call (a page fault costs microseconds on a VM). One slot per use, so that nested users
 * never share one; NULL when out of memory. */
enum {
    GK_SCRATCH_B,          /* gk_sgemm's packed B */
    GK_SCRATCH_A,          /* gk_sgemm's packed A */
    GK_SCRATCH_SERIAL_A,   /* gk_sgemm_serial's (inside other kernels' parallel regions) */
    GK_SCRATCH_SERIAL_B,
    GK_SCRATCH_SHARED_A,   /* the calling thread's A, shared by a packed-weights product */
    GK_SCRATCH_ATTN_TILES, /* the calling thread's packed key tiles (attention forward) */
    GK_SCRATCH_ATTN_WS,    /* each thread's attention workspace (forward, backward, decode) */
    GK_SCRATCH_ATTN_ROWS,  /* the attention backward's row terms */
    GK_SCRATCH_RMS,        /* each thread's RMSNorm backward products */
    GK_SCRATCH_DECODE,     /* each thread's normed rows and activations in a decode layer */
    GK_SCRATCH_SLOTS
};
float *gk_scratch(int slot, size_t floats);

/* gk_sgemm on the calling thread only, for small products inside other kernels' parallel loops. */
void gk_sgemm_serial(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc);

/* Tiles (matmul.c): small products whose packed operands are reused, with the bits of
 * gk_sgemm_serial. A packed A of m rows and k columns holds ceil(m / MR) panels of MR * k floats, a
 * packed B of k rows and n columns ceil(n / NR) panels of NR * k; op(X) is X or its transpose as in
 * gk_sgemm. gk_tile_product: C[m,n] = alpha a b + beta C, with panel i of a at a + i * astride and
 * panel j of b at b + j * bstride (a stride may exceed the packed k: a prefix of K). The kernel may
 * not change between packing and product (tests switch it only between calls). */
void gk_tile_dims(int *mr, int *nr);
void gk_tile_pack_a(float *dst, const float *A, int lda, int trans, int m, int k);
void gk_tile_pack_b(float *dst, const float *B, int ldb, int trans, int k, int n);
void gk_tile_product(int m, int n, int k, float alpha, const float *a, long astride, const float *b, long bstride,
                     float beta, float *C, int ldc);

/* GK_PARALLEL_FOR(nt, for (...) body): the loop split statically over nt threads, or run on the
 * calling thread alone when nt < 2, without entering OpenMP. A region of one thread (num_threads(1)
 * or a false if clause) still goes through libgomp, whose team ends at a barrier that wakes its
 * waiters with a futex system call whether any wait or not: 1.6 µs a region on a 2-core VM, paid
 * some 60 times in a decode step of one sequence of `tiny`. The iterations of a parallel loop are
 * independent, so either path gives the same bits. */
#define GK_PARALLEL_FOR(nt, ...)                                                               \
    do {                                                                                       \
        const int gk_pf_nt_ = (nt);                                                            \
        if (gk_pf_nt_ > 1) {                                                                   \
            _Pragma("omp parallel for num_threads(gk_pf_nt_) schedule(static)") __VA_ARGS__ \
        } else {                                                                               \
            __VA_ARGS__                                                                        \
        }                                                                                      \
    } while (0)

/* GK_PARALLEL(nt, call): call run by each of nt threads in a parallel region (its orphaned
 * `omp for` loops share out their iterations), or once on the calling thread when nt < 2, without
 * entering OpenMP (see GK_PARALLEL_FOR); an `omp for` outside a region runs every iteration. */
#define GK_PARALLEL(nt, ...)                                                                   \
    do {                                                                                       \
        const int gk_p_nt_ = (nt);                                                             \
        if (gk_p_nt_ > 1) {                                                                    \
            _Pragma("omp parallel num_threads(gk_p_nt_)") { __VA_ARGS__; }                    \
        } else {                                                                               \
            __VA_ARGS__;                                                                       \
        }                                                                                      \
    } while (0)

/* Multiply-adds below which a kernel runs on the calling thread alone: a second thread that has gone
 * to sleep since the last region takes longer to wake than this much work takes (on a 2-core VM
 * with AVX-512, 30–100 µs against ~15 µs; `tiny` decoded 16 sequences faster on one thread than
 * on two before). Products and attention of decode steps of a few sequences fall below it;
 * training and prefill never do. */
#define GK_SERIAL_WORK (1L << 21)

/* x rounded on its own, never fused into the addition that uses it: what baseline x86-64 code
 * (no FMA) computes. GCC for AArch64, where every function has FMA, fused the softmax's
 * l * corr + sum in the decode kernel and not in the forward, whose bits the decode must match. */
static inline float gk_rounded(float x) {
#if defined(__aarch64__) && defined(__GNUC__)
    __asm__("" : "+w"(x));
#endif
    return x;
}

/* The kernels' thread count when the work is worth splitting, else 1; 1 inside a parallel region
 * (a decode layer's, decode_layer.c), where a nested region would get one thread anyway. */
static inline int gk_threads_if(int worth) { return worth && !omp_in_parallel() ? gk_threads() : 1; }

/* A work split that depends only on n and the chunk size, never on the thread count, so sums that
 * combine per-chunk partials in chunk order give the same bits for any number of threads. */
#define GK_CHUNK 4096

/* Functions marked GK_VECTORIZED are compiled for AVX-512, AVX2+FMA and baseline x86-64, and the
 * loader picks one for this CPU. They must not contain OpenMP regions (those are outlined into
 * functions that are not cloned): parallel loops call them instead. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(GK_NO_AVX512)
#define GK_VECTORIZED __attribute__((target_clones("arch=x86-64-v3", "default"))) /* -tags noavx512 */
#elif defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GK_VECTORIZED __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GK_VECTORIZED
#endif

/* Sum, max and dot product over n floats in 8 fixed lanes, so they vectorize without -ffast-math
 * and still add in one fixed order. */
static inline float gk_sum(const float *x, int n) {
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) lane[l] += x[i + l];
    for (; i < n; i++) lane[i & 7] += x[i];
    return ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
}

static inline float gk_max(const float *x, int n, float init) {
    float lane[8] = {init, init, init, init, init, init, init, init};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) lane[l] = x[i + l] > lane[l] ? x[i + l] : lane[l];
    for (; i < n; i++) lane[i & 7] = x[i] > lane[i & 7] ? x[i] : lane[i & 7];
    float m = lane[0];
    for (int l = 1; l < 8; l++) m = lane[l] > m ? lane[l] : m;
    return m;
}

static inline float gk_dot(const float *a, const float *b, int n) {
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) lane[l] += a[i + l] * b[i + l];
    for (; i < n; i++) lane[i & 7] += a[i] * b[i];
    return ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
}

/* Sum of squares accumulated in double, 8 fixed lanes (vectorizes; fixed order). */
static inline double gk_sumsq(const float *x, size_t n) {
    double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) lane[l] += (double)x[i + l] * x[i + l];
    for (; i < n; i++) lane[i & 7] += (double)x[i] * x[i];
    return ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
}

/* exp(x) for float with relative error below 2e-7, as branch-free arithmetic so loops of it
 * vectorize (glibc's expf does not without -ffast-math): x = n ln2 + r, |r| <= ln2/2, e^r by a
 * degree-7 polynomial (Cephes' expf coefficients), 2^n through the exponent bits. Below -87 it
 * returns exactly 0, so masked scores contribute nothing. gk_expf_core computes it from xc, x
 * clamped to where the exponent bits hold 2^n; its result is thrown away when x < -87. */
static inline float gk_expf_core(float x, float xc) {
    const float lo = -87.0f;
    const float shifter = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    float t = xc * 1.44269504088896341f + shifter;
    float n = t - shifter;
    int32_t ti, si;
    memcpy(&ti, &t, 4);
    float sh = shifter;
    memcpy(&si, &sh, 4);
    int32_t ni = ti - si;
    float r = xc - n * 0.693359375f - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = (ni + 127) << 23;
    float scale;
    memcpy(&scale, &bits, 4);
    float y = p * scale;
    return x < lo ? 0.0f : y;
}

static inline float gk_expf(float x) {
    const float hi = 88.0f, lo = -87.0f;
    return gk_expf_core(x, x > hi ? hi : (x < lo ? lo : x));
}

/* gk_expf(x), the same bits, for x <= 88 or NaN (a score less the maximum it was taken from, or
 * less a log-sum-exp): there the clamp to 88 never acts, and where the clamp to -87 would act (x <
 * -87) the result is 0 whatever the arithmetic gave. Dropping both takes 7 of a vector's 33
 * instructions, a quarter of a softmax's exponentials. TestExpfNonpos checks every float of that
 * range through the vectorized loops. */
static inline float gk_expf_nonpos(float x) { return gk_expf_core(x, x); }

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Columns c..c+7 of eight rows, transposed: dst + l * ldd gets column c + l of rows[0..7]. Pure data
 * movement (unpack, shuffle, permute), for packing panels 8 lanes at a time. */
__attribute__((target("avx2"))) static inline void gk_transpose8_avx2(float *dst, size_t ldd, const float *const *rows,
                                                                      int c) {
    __m256 r[8], t[8], u[8];
    for (int l = 0; l < 8; l++) r[l] = _mm256_loadu_ps(rows[l] + c);
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
        _mm256_storeu_ps(dst + (size_t)l * ldd, _mm256_permute2f128_ps(u[l], u[l + 4], 0x20));
        _mm256_storeu_ps(dst + (size_t)(l + 4) * ldd, _mm256_permute2f128_ps(u[l], u[l + 4], 0x31));
    }
}
#endif

#endif
