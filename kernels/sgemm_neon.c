/* sgemm_neon.c — the SGEMM microkernel for 64-bit ARM (NEON, which every AArch64 CPU has): a 12 x 8
 * block of C from packed panels, 24 accumulators of 4 floats in 32 vector registers.
 *
 * Per k the kernel loads a 12-row column of the A panel as three vectors and an 8-column row of the
 * B panel as two, and multiplies with the lane forms of the fused multiply-add (vfmaq_laneq_f32:
 * one row of A broadcast from a lane, no separate broadcast load). Every element of C is the fused
 * multiply-add chain over k from 0 that the x86 kernels compute (a[k][i] * b[k][j] added in k order,
 * each step rounded once), then alpha times it and beta times C added with one more fused
 * multiply-add, as theirs: the same bits as the AVX-512 and AVX2 kernels. The operations are
 * written as intrinsics, so no compiler's contraction settings can change them.
 *
 * The packed layouts are sgemm_kernels.c's: a[k*MR + i], b[k*NR + j], 64-byte aligned and zero
 * padded. A panel's last rows run as 4, 8 or 12 (each element sums the same products in the same
 * order, so a short tile gives a full one's bits), and a caller streaming the next panel of weights
 * (pf) has its rows fetched at the iterations that read the same rows here (the paced prefetch of
 * the x86 kernels). */
#include "sgemm.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#include <math.h>

enum { NEON_MR = 12, NEON_NR = 8 };

/* The first R rows (4, 8 or 12, a constant after inlining) of a panel. */
static inline __attribute__((always_inline)) void neon_rows(const int R, int kc, const float *restrict a,
                                                            const float *restrict b, float *restrict c, long ldc,
                                                            float alpha, float beta, int mr, int nr,
                                                            const float *pf, int pf_first, int pf_every) {
    float32x4_t acc[NEON_MR][2];
    for (int i = 0; i < R; i++) {
        __builtin_prefetch(c + i * ldc, 1, 3);
        acc[i][0] = vdupq_n_f32(0);
        acc[i][1] = vdupq_n_f32(0);
    }
    int pf_due = pf ? pf_first : -1;
    for (int k = 0; k < kc; k++) {
        const float *ak = a + (long)k * NEON_MR, *bk = b + (long)k * NEON_NR;
        const float32x4_t b0 = vld1q_f32(bk), b1 = vld1q_f32(bk + 4);
        if (k == pf_due) {
            __builtin_prefetch(pf + (long)k * NEON_NR, 0, 2);
            pf_due += pf_every;
        }
        for (int g = 0; g < R / 4; g++) {
            const float32x4_t av = vld1q_f32(ak + 4 * g);
            acc[4 * g + 0][0] = vfmaq_laneq_f32(acc[4 * g + 0][0], b0, av, 0);
            acc[4 * g + 0][1] = vfmaq_laneq_f32(acc[4 * g + 0][1], b1, av, 0);
            acc[4 * g + 1][0] = vfmaq_laneq_f32(acc[4 * g + 1][0], b0, av, 1);
            acc[4 * g + 1][1] = vfmaq_laneq_f32(acc[4 * g + 1][1], b1, av, 1);
            acc[4 * g + 2][0] = vfmaq_laneq_f32(acc[4 * g + 2][0], b0, av, 2);
            acc[4 * g + 2][1] = vfmaq_laneq_f32(acc[4 * g + 2][1], b1, av, 2);
            acc[4 * g + 3][0] = vfmaq_laneq_f32(acc[4 * g + 3][0], b0, av, 3);
            acc[4 * g + 3][1] = vfmaq_laneq_f32(acc[4 * g + 3][1], b1, av, 3);
        }
    }
    if (mr == R && nr == NEON_NR) {
        const float32x4_t va = vdupq_n_f32(alpha), vb = vdupq_n_f32(beta);
        for (int i = 0; i < R; i++)
            for (int v = 0; v < 2; v++) {
                float *cp = c + i * ldc + 4 * v;
                float32x4_t r = vmulq_f32(acc[i][v], va);
                if (beta != 0) r = vfmaq_f32(r, vld1q_f32(cp), vb);
                vst1q_f32(cp, r);
            }
        return;
    }
    float tile[NEON_MR][NEON_NR] __attribute__((aligned(64)));
    for (int i = 0; i < R; i++) {
        vst1q_f32(&tile[i][0], acc[i][0]);
        vst1q_f32(&tile[i][4], acc[i][1]);
    }
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            const float r = alpha * tile[i][j];
            c[i * ldc + j] = beta != 0 ? fmaf(beta, c[i * ldc + j], r) : r;
        }
}

void gk_kernel_neon(int kc, const float *restrict a, const float *restrict b, float *restrict c, long ldc,
                    float alpha, float beta, int mr, int nr, const float *pf, int pf_first, int pf_every) {
    if (mr <= 4)
        neon_rows(4, kc, a, b, c, ldc, alpha, beta, mr, nr, pf, pf_first, pf_every);
    else if (mr <= 8)
        neon_rows(8, kc, a, b, c, ldc, alpha, beta, mr, nr, pf, pf_first, pf_every);
    else
        neon_rows(12, kc, a, b, c, ldc, alpha, beta, mr, nr, pf, pf_first, pf_every);
}
#endif
