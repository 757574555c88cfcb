/* sgemm_accelerate.c — on macOS, large products through Apple's Accelerate framework.
 *
 * Accelerate's cblas_sgemm runs on the matrix units of Apple's chips (AMX), which gorstar's NEON
 * kernel cannot reach. The framework is opened with dlopen when the backend starts, so the build
 * needs no SDK flags and a binary without it still runs: when the framework or its symbol is
 * missing, every product stays on gorstar's own kernels. Only gk_sgemm's large products (more than
 * 8 rows: training steps and prefills) go there; decode steps (packed weights, few rows), attention's
 * tiles and everything inside other kernels' parallel loops stay on the microkernels.
 *
 * Accelerate sums in its own order, so its products are not the same bits as gorstar's kernels:
 * a prefill and the decode steps after it then agree to rounding, not bit for bit. GORSTAR_ACCELERATE=0
 * keeps every product on gorstar's kernels (the same bits as on every other CPU), and a test or
 * benchmark that selects a microkernel by name turns Accelerate off until the default is selected
 * again. The backend's name says which is in use: "cpu-neon+accelerate" or "cpu-neon". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

const char *gk_sgemm_kernel_name(void); /* matmul.c */

#if defined(__APPLE__)
#include <dlfcn.h>

/* CBLAS's enumerations (cblas.h). */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };
typedef void (*cblas_sgemm_fn)(int order, int trans_a, int trans_b, int M, int N, int K, float alpha,
                               const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);

static cblas_sgemm_fn accelerate_sgemm;
#define ACCELERATE_PATH "/System/Library/Frameworks/Accelerate.framework/Accelerate"

static void accelerate_open(void) {
    static int tried;
    if (tried) return;
    tried = 1;
    void *lib = dlopen(ACCELERATE_PATH, RTLD_NOW | RTLD_LOCAL);
    if (lib) accelerate_sgemm = (cblas_sgemm_fn)dlsym(lib, "cblas_sgemm");
}
#endif

static int accelerate_wanted = 1; /* GORSTAR_ACCELERATE and gk_sgemm_use_kernel decide */
static int accelerate_allowed = 1;

/* Called by gk_init: opens the framework once, unless GORSTAR_ACCELERATE=0. */
void gk_accelerate_init(void) {
    const char *env = getenv("GORSTAR_ACCELERATE");
    accelerate_wanted = !(env && strcmp(env, "0") == 0);
#if defined(__APPLE__)
    if (accelerate_wanted) accelerate_open();
#endif
}

/* gk_sgemm_use_kernel: a kernel chosen by name runs every product (tests and benchmarks of that
 * kernel); the default choice lets Accelerate take the large ones again. */
void gk_accelerate_allow(int allow) { accelerate_allowed = allow; }

int gk_accelerate_active(void) {
#if defined(__APPLE__)
    return accelerate_sgemm != NULL && accelerate_wanted && accelerate_allowed;
#else
    return 0;
#endif
}

/* C = alpha op(A) op(B) + beta C through Accelerate when it is active and the product has more
 * than 8 rows; returns whether it did. */
int gk_accelerate_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                        const float *B, int ldb, float beta, float *C, int ldc) {
#if defined(__APPLE__)
    if (M <= 8 || !gk_accelerate_active()) return 0;
    accelerate_sgemm(CBLAS_ROW_MAJOR, trans_a ? CBLAS_TRANS : CBLAS_NO_TRANS, trans_b ? CBLAS_TRANS : CBLAS_NO_TRANS,
                     M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return 1;
#else
    (void)trans_a, (void)trans_b, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb;
    (void)beta, (void)C, (void)ldc;
    return 0;
#endif
}

/* The backend's name: the microkernel's, with "+accelerate" when Accelerate takes the large
 * products. */
const char *gk_backend_name(void) {
    static __thread char name[64];
    const char *kernel = gk_sgemm_kernel_name();
    if (!gk_accelerate_active()) return kernel;
    snprintf(name, sizeof name, "%s+accelerate", kernel);
    return name;
}
