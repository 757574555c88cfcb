/* sgemm.h — the SGEMM microkernel interface shared by matmul.c and sgemm_kernels.c. */
#ifndef GORSTAR_SGEMM_H
#define GORSTAR_SGEMM_H

typedef void (*gk_microkernel_fn)(int kc, const float *restrict a, const float *restrict b, float *restrict c,
                                  long ldc, float alpha, float beta, int mr, int nr,
                                  const float *pf, int pf_first, int pf_every);

typedef struct {
    const char *name; /* also the backend name when this kernel is in use */
    int mr, nr;       /* rows of A and columns of B per packed panel */
    gk_microkernel_fn fn;
    /* Whether fn takes the next panel's prefetch in its loop (pf): AVX-512's body inline (32
     * registers to spare), AVX2's in a body compiled apart from the plain one; otherwise fn ignores
     * pf and the caller prefetches a share of the next panel before each row tile. */
    int paced_prefetch;
} gk_microkernel;

extern const gk_microkernel gk_microkernels[]; /* ends with a NULL name */
const gk_microkernel *gk_microkernel_best(void);
const gk_microkernel *gk_microkernel_at(int i); /* NULL past the end */
int gk_microkernel_runs(const gk_microkernel *k);

#if defined(__aarch64__)
void gk_kernel_neon(int kc, const float *restrict a, const float *restrict b, float *restrict c, long ldc,
                    float alpha, float beta, int mr, int nr, const float *pf, int pf_first, int pf_every);
#endif

/* Select a kernel by name ("" = the best this CPU runs); 0 on success. For tests and benchmarks. */
int gk_sgemm_use_kernel(const char *name);

#endif
