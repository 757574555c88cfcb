/* rmsnorm.c — RMSNorm forward and backward (statistics accumulated in double). */
#include <math.h>

#include "bf16.h"
#include "cpu.h"

GK_VECTORIZED
static float rmsnorm_row(float *restrict y, const float *restrict x, const float *restrict w, int C, float eps) {
    float r = (float)(1.0 / sqrt(gk_sumsq(x, C) / C + eps));
    for (int c = 0; c < C; c++) y[c] = w[c] * (x[c] * r);
    return r;
}

void gk_rmsnorm_forward(float *y, float *rstd, const float *x, const float *w, int T, int C, float eps) {
    GK_PARALLEL_FOR(gk_threads_if((long)T * C > 16384), for (int t = 0; t < T; t++) {
        float r = rmsnorm_row(y + (size_t)t * C, x + (size_t)t * C, w, C, eps);
        if (rstd) rstd[t] = r;
    });
}

/* A row of gk_rmsnorm_forward_bf16: the fp32 row's values (the same operations), rounded. */
GK_VECTORIZED
static float rmsnorm_row_bf16(uint16_t *restrict y, const float *restrict x, const float *restrict w, int C, float eps) {
    float r = (float)(1.0 / sqrt(gk_sumsq(x, C) / C + eps));
    for (int c = 0; c < C; c++) y[c] = gk_bf16_round(w[c] * (x[c] * r));
    return r;
}

/* gk_rmsnorm_forward with y stored as bf16: each element is the fp32 forward's, rounded to the
 * nearest bf16 (ties to even); rstd stays fp32. */
void gk_rmsnorm_forward_bf16(uint16_t *y, float *rstd, const float *x, const float *w, int T, int C, float eps) {
    GK_PARALLEL_FOR(gk_threads_if((long)T * C > 16384), for (int t = 0; t < T; t++) {
        float r = rmsnorm_row_bf16(y + (size_t)t * C, x + (size_t)t * C, w, C, eps);
        if (rstd) rstd[t] = r;
    });
}

/* (double) dy_c w_c x_c over a row into p: vectorized for this CPU with fused multiply-adds off,
 * so p holds exactly the products the row's sum has always added. */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
GK_VECTORIZED
static void rms_products(double *restrict p, const float *restrict dy, const float *restrict w,
                         const float *restrict x, int C) {
    for (int c = 0; c < C; c++) p[c] = (double)dy[c] * w[c] * x[c];
}

/* dx += r w dy - k x over a row, the operations of the plain loop in its order (no fusing). */
GK_VECTORIZED
static void rms_dx_row(float *restrict dx, const float *restrict dy, const float *restrict x, const float *restrict w,
                       float r, float k, int C) {
    for (int c = 0; c < C; c++) dx[c] += r * w[c] * dy[c] - k * x[c];
}

/* dw over n channels (dw, dy and x offset to the first): every channel adds its tokens' terms in
 * token order, as one sequential sum (the same bits for any split of the channels), vectorized
 * across channels, without fusing. */
GK_VECTORIZED
static void rmsnorm_dw_cols(float *restrict dw, const float *restrict dy, const float *restrict x,
                            const float *restrict rstd, int T, int C, int n) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * C, *dyt = dy + (size_t)t * C;
        const float r = rstd[t];
        for (int c = 0; c < n; c++) dw[c] += dyt[c] * xt[c] * r;
    }
}
#pragma GCC pop_options

enum { RMS_ROWS = 8 }; /* rows whose sums run side by side */

/* dx of rows t0..t0+n-1 (n <= RMS_ROWS; added); p holds RMS_ROWS * C doubles. Each row's sum of
 * dy_j w_j x_j is one sequential chain of double additions, as it always was (so the same bits): the
 * products come first, vectorized, and the rows' chains then run side by side, since one alone waits
 * on every addition's latency (with the products computed in the chains, 4 of them, the op ran at
 * 11-13 GB/s). The chains are baseline code (no reassociation); the vectorized parts are cloned with
 * fusing off, so every machine gets the bits of the plain loops. */
static void rmsnorm_backward_rows(float *dx, const float *dy, const float *x, const float *w, const float *rstd,
                                  int t0, int n, int C, double *p) {
    double dot[RMS_ROWS] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < n; i++) rms_products(p + (size_t)i * C, dy + (size_t)(t0 + i) * C, w, x + (size_t)(t0 + i) * C, C);
    if (n == RMS_ROWS)
        for (int c = 0; c < C; c++) {
#pragma GCC unroll 8
            for (int i = 0; i < RMS_ROWS; i++) dot[i] += p[(size_t)i * C + c];
        }
    else
        for (int i = 0; i < n; i++)
            for (int c = 0; c < C; c++) dot[i] += p[(size_t)i * C + c];
    for (int i = 0; i < n; i++) {
        const size_t t = (size_t)t0 + i;
        const float r = rstd[t];
        rms_dx_row(dx + t * C, dy + t * C, x + t * C, w, r, (float)(dot[i] * r * r * r / C), C);
    }
}

/* y_c = w_c x_c r with r = (mean(x^2) + eps)^-1/2, so
 * dx_c = r w_c dy_c - r^3 x_c / C * sum_j dy_j w_j x_j and dw_c = sum_t dy_c x_c r. */
void gk_rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w,
                         const float *rstd, int T, int C) {
    int nt = (long)T * C > 16384 ? gk_threads() : 1;
#pragma omp parallel num_threads(nt)
    {
        if (dx) {
            double *p = (double *)gk_scratch(GK_SCRATCH_RMS, (size_t)2 * RMS_ROWS * C);
#pragma omp for schedule(static)
            for (int t0 = 0; t0 < T; t0 += RMS_ROWS) {
                if (!p) {
                    gk_set_error("rmsnorm backward: out of memory");
                    continue;
                }
                rmsnorm_backward_rows(dx, dy, x, w, rstd, t0, T - t0 < RMS_ROWS ? T - t0 : RMS_ROWS, C, p);
            }
        }
        if (dw) {
            /* Split over channels; each thread walks the tokens in order. */
            int th = omp_get_thread_num(), n = omp_get_num_threads();
            int c0 = (int)((long)C * th / n), c1 = (int)((long)C * (th + 1) / n);
            if (c1 > c0) rmsnorm_dw_cols(dw + c0, dy + c0, x + c0, rstd, T, C, c1 - c0);
        }
    }
}
