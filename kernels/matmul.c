//go:build !rocm

/* matmul.c — SGEMM and the linear layer built on it. */
#include "cpu.h"

static inline float at(const float *X, int trans, int r, int c, int ld) {
    return trans ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

void gk_sgemm_select_kernel(void) {}
const char *gk_sgemm_kernel_name(void) { return "cpu-generic"; }

void gk_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc) {
#pragma omp parallel for num_threads(gk_threads()) schedule(static)
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            float s = 0;
            for (int p = 0; p < K; p++) s += at(A, trans_a, i, p, lda) * at(B, trans_b, p, j, ldb);
            float *c = C + (size_t)i * ldc + j;
            *c = beta == 0 ? alpha * s : alpha * s + beta * *c;
        }
    }
}

void gk_linear_forward(float *y, const float *x, const float *W, const float *b, int T, int in, int out) {
    if (b) {
        for (int t = 0; t < T; t++)
            for (int o = 0; o < out; o++) y[(size_t)t * out + o] = b[o];
    }
    gk_sgemm(0, 1, T, out, in, 1.0f, x, in, W, in, b ? 1.0f : 0.0f, y, out);
}

void gk_linear_backward(float *dx, float *dW, float *db, const float *dy, const float *x, const float *W,
                        int T, int in, int out) {
    if (dx) gk_sgemm(0, 0, T, in, out, 1.0f, dy, out, W, in, 1.0f, dx, in);
    if (dW) gk_sgemm(1, 0, out, in, T, 1.0f, dy, out, x, in, 1.0f, dW, in);
    if (db) {
#pragma omp parallel for num_threads(gk_threads()) schedule(static)
        for (int o = 0; o < out; o++) {
            float s = 0;
            for (int t = 0; t < T; t++) s += dy[(size_t)t * out + o];
            db[o] += s;
        }
    }
}
