//go:build !rocm

/* rmsnorm.c — RMSNorm forward and backward (statistics accumulated in double). */
#include <math.h>
#include <omp.h>

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

/* dx of rows t0..t0+n-1 (n <= 4; added). Each row's sum of dy_j w_j x_j is one sequential chain of
 * double additions, as it always was (so the same bits); the rows' chains run side by side, since
 * one alone waits on every addition's latency. Not cloned: compiled for baseline x86-64, nothing
 * here fuses a multiply-add, as before. */
static void rmsnorm_backward_rows(float *dx, const float *dy, const float *x, const float *w, const float *rstd,
                                  int t0, int n, int C) {
    double dot[4] = {0, 0, 0, 0};
    const float *xs[4], *dys[4];
    for (int i = 0; i < 4; i++) {
        const size_t t = (size_t)t0 + (i < n ? i : 0);
        xs[i] = x + t * C, dys[i] = dy + t * C;
    }
    if (n == 4)
        for (int c = 0; c < C; c++) {
            dot[0] += (double)dys[0][c] * w[c] * xs[0][c];
            dot[1] += (double)dys[1][c] * w[c] * xs[1][c];
            dot[2] += (double)dys[2][c] * w[c] * xs[2][c];
            dot[3] += (double)dys[3][c] * w[c] * xs[3][c];
        }
    else
        for (int i = 0; i < n; i++)
            for (int c = 0; c < C; c++) dot[i] += (double)dys[i][c] * w[c] * xs[i][c];
    for (int i = 0; i < n; i++) {
        const float *xt = xs[i], *dyt = dys[i];
        float *dxt = dx + (size_t)(t0 + i) * C;
        const float r = rstd[t0 + i];
        const float k = (float)(dot[i] * r * r * r / C);
        for (int c = 0; c < C; c++) dxt[c] += r * w[c] * dyt[c] - k * xt[c];
    }
}

/* dw over n channels (dw, dy and x offset to the first): every channel adds its tokens' terms in
 * token order, as one sequential sum (the same bits for any split of the channels), vectorized
 * across channels now that the pointers are known not to overlap. Not cloned, as before: no fused
 * multiply-add. */
static void rmsnorm_dw_cols(float *restrict dw, const float *restrict dy, const float *restrict x,
                            const float *restrict rstd, int T, int C, int n) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * C, *dyt = dy + (size_t)t * C;
        const float r = rstd[t];
        for (int c = 0; c < n; c++) dw[c] += dyt[c] * xt[c] * r;
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
#pragma omp for schedule(static)
            for (int t0 = 0; t0 < T; t0 += 4) rmsnorm_backward_rows(dx, dy, x, w, rstd, t0, T - t0 < 4 ? T - t0 : 4, C);
        }
        if (dw) {
            /* Split over channels; each thread walks the tokens in order. */
            int th = omp_get_thread_num(), n = omp_get_num_threads();
            int c0 = (int)((long)C * th / n), c1 = (int)((long)C * (th + 1) / n);
            if (c1 > c0) rmsnorm_dw_cols(dw + c0, dy + c0, x + c0, rstd, T, C, c1 - c0);
        }
    }
}
