//go:build !rocm

/* rmsnorm.c — RMSNorm forward and backward (statistics accumulated in double). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>

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

/* sum_c dy_c w_c x_c in double, in 8 fixed lanes: vectorized for this CPU, with fused
 * multiply-adds off so that every clone adds the same products in the same order (the same bits on
 * every machine). A single chain of double additions used to bound the whole backward. */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
GK_VECTORIZED
static double rms_dot(const float *restrict dy, const float *restrict w, const float *restrict x, int C) {
    double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int c = 0;
    for (; c + 8 <= C; c += 8)
        for (int l = 0; l < 8; l++) lane[l] += (double)dy[c + l] * w[c + l] * x[c + l];
    for (; c < C; c++) lane[c & 7] += (double)dy[c] * w[c] * x[c];
    return ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
}
#pragma GCC pop_options

/* dx of rows t0..t0+n-1 (added). Not cloned: compiled for baseline x86-64, nothing here fuses a
 * multiply-add. */
static void rmsnorm_backward_rows(float *dx, const float *dy, const float *x, const float *w, const float *rstd,
                                  int t0, int n, int C) {
    for (int i = 0; i < n; i++) {
        const size_t t = (size_t)t0 + i;
        const float *xt = x + t * C, *dyt = dy + t * C;
        float *dxt = dx + t * C;
        const float r = rstd[t];
        const float k = (float)(rms_dot(dyt, w, xt, C) * r * r * r / C);
        for (int c = 0; c < C; c++) dxt[c] += r * w[c] * dyt[c] - k * xt[c];
    }
}

/* dw over n channels (dw, dy and x offset to the first) from T tokens: every channel adds its
 * tokens' terms in token order, vectorized across channels now that the pointers are known not to
 * overlap. Not cloned, as before: no fused multiply-add. */
static void rmsnorm_dw_cols(float *restrict dw, const float *restrict dy, const float *restrict x,
                            const float *restrict rstd, int T, int C, int n) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * C, *dyt = dy + (size_t)t * C;
        const float r = rstd[t];
        for (int c = 0; c < n; c++) dw[c] += dyt[c] * xt[c] * r;
    }
}

/* Tokens per partial dw: a split that depends on T alone (a multiple of dx's 4-row groups). */
enum { RMS_DW_ROWS = 256 };

/* One buffer per calling OS thread for the partial dw, kept between calls. */
static float *dw_parts(size_t floats) {
    static __thread float *buf;
    static __thread size_t cap;
    if (cap < floats) {
        free(buf);
        buf = malloc(sizeof(float) * floats);
        cap = buf ? floats : 0;
    }
    return buf;
}

/* y_c = w_c x_c r with r = (mean(x^2) + eps)^-1/2, so
 * dx_c = r w_c dy_c - r^3 x_c / C * sum_j dy_j w_j x_j and dw_c = sum_t dy_c x_c r.
 * One pass over dy and x: each chunk of RMS_DW_ROWS tokens writes its dx rows 4 at a time and, while
 * those rows are in cache, adds them into the chunk's own partial dw (token order); the partials
 * are then added into dw in chunk order. The same bits for any thread count. */
void gk_rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w,
                         const float *rstd, int T, int C) {
    const int nt = (long)T * C > 16384 ? gk_threads() : 1, chunks = (T + RMS_DW_ROWS - 1) / RMS_DW_ROWS;
    float *part = dw ? dw_parts((size_t)chunks * C) : NULL;
    if (dw && !part) {
        gk_set_error("rmsnorm backward: out of memory");
        return;
    }
#pragma omp parallel num_threads(nt)
    {
#pragma omp for schedule(static)
        for (int k = 0; k < chunks; k++) {
            const int t1 = (k + 1) * RMS_DW_ROWS < T ? (k + 1) * RMS_DW_ROWS : T;
            float *p = part ? part + (size_t)k * C : NULL;
            if (p) memset(p, 0, sizeof(float) * C);
            for (int t0 = k * RMS_DW_ROWS; t0 < t1; t0 += 4) {
                const int n = t1 - t0 < 4 ? t1 - t0 : 4;
                if (dx) rmsnorm_backward_rows(dx, dy, x, w, rstd, t0, n, C);
                if (p) rmsnorm_dw_cols(p, dy + (size_t)t0 * C, x + (size_t)t0 * C, rstd + t0, n, C, C);
            }
        }
        if (dw) {
            /* Split over channels; each adds the partials in chunk order. */
            int th = omp_get_thread_num(), n = omp_get_num_threads();
            int c0 = (int)((long)C * th / n), c1 = (int)((long)C * (th + 1) / n);
            for (int k = 0; k < chunks; k++) {
                const float *p = part + (size_t)k * C;
                for (int c = c0; c < c1; c++) dw[c] += p[c];
            }
        }
    }
}
