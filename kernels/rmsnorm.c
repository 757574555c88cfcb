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
#pragma omp parallel for num_threads(gk_threads()) schedule(static) if ((long)T * C > 16384)
    for (int t = 0; t < T; t++) {
        float r = rmsnorm_row(y + (size_t)t * C, x + (size_t)t * C, w, C, eps);
        if (rstd) rstd[t] = r;
    }
}

/* dx of one row (added): the sum of dy_j w_j x_j in double, 8 fixed lanes like gk_sumsq (one
 * sequential chain of C double additions waited on each one's latency: the backward took 3.5x
 * the forward). */
GK_VECTORIZED
static void rmsnorm_backward_row(float *restrict dxt, const float *restrict dyt, const float *restrict xt,
                                 const float *restrict w, float r, int C) {
    double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int c = 0;
    for (; c + 8 <= C; c += 8)
        for (int l = 0; l < 8; l++) lane[l] += (double)dyt[c + l] * w[c + l] * xt[c + l];
    for (; c < C; c++) lane[c & 7] += (double)dyt[c] * w[c] * xt[c];
    const double dot = ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
    const float k = (float)(dot * r * r * r / C);
    for (c = 0; c < C; c++) dxt[c] += r * w[c] * dyt[c] - k * xt[c];
}

/* dw over n channels (dw, dy and x offset to the first): every channel adds its tokens' terms in
 * token order, as one sequential sum (the same bits for any split of the channels), vectorized
 * across channels. */
GK_VECTORIZED
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
            for (int t = 0; t < T; t++)
                rmsnorm_backward_row(dx + (size_t)t * C, dy + (size_t)t * C, x + (size_t)t * C, w, rstd[t], C);
        }
        if (dw) {
            /* Split over channels; each thread walks the tokens in order. */
            int th = omp_get_thread_num(), n = omp_get_num_threads();
            int c0 = (int)((long)C * th / n), c1 = (int)((long)C * (th + 1) / n);
            if (c1 > c0) rmsnorm_dw_cols(dw + c0, dy + c0, x + c0, rstd, T, C, c1 - c0);
        }
    }
}
