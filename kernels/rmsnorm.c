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

/* y_c = w_c x_c r with r = (mean(x^2) + eps)^-1/2, so
 * dx_c = r w_c dy_c - r^3 x_c / C * sum_j dy_j w_j x_j and dw_c = sum_t dy_c x_c r. */
void gk_rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w,
                         const float *rstd, int T, int C) {
    int nt = (long)T * C > 16384 ? gk_threads() : 1;
#pragma omp parallel num_threads(nt)
    {
        if (dx) {
#pragma omp for schedule(static)
            for (int t = 0; t < T; t++) {
                const float *xt = x + (size_t)t * C, *dyt = dy + (size_t)t * C;
                float *dxt = dx + (size_t)t * C;
                float r = rstd[t];
                double dot = 0;
                for (int c = 0; c < C; c++) dot += (double)dyt[c] * w[c] * xt[c];
                float k = (float)(dot * r * r * r / C);
                for (int c = 0; c < C; c++) dxt[c] += r * w[c] * dyt[c] - k * xt[c];
            }
        }
        if (dw) {
            /* Split over channels; each thread walks the tokens in order. */
            int th = omp_get_thread_num(), n = omp_get_num_threads();
            int c0 = (int)((long)C * th / n), c1 = (int)((long)C * (th + 1) / n);
            for (int t = 0; t < T; t++) {
                const float *xt = x + (size_t)t * C, *dyt = dy + (size_t)t * C;
                float r = rstd[t];
                for (int c = c0; c < c1; c++) dw[c] += dyt[c] * xt[c] * r;
            }
        }
    }
}
