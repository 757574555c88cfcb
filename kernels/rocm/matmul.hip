/* matmul.hip — SGEMM (64x64 shared-memory tiles, 4x4 outputs per thread) and the linear layer.
 * rocBLAS is not used: these are gorstar's own kernels, a correct baseline rather than a tuned one. */
#include "common.h"

enum { TM = 64, TN = 64, TK = 16, THREADS = 256 };

__global__ __launch_bounds__(THREADS) void sgemm_kernel(int ta, int tb, int M, int N, int K, float alpha,
                                                         const float *__restrict__ A, int lda,
                                                         const float *__restrict__ B, int ldb, float beta,
                                                         float *__restrict__ C, int ldc) {
    __shared__ float As[TK][TM + 4]; /* As[k][m] = op(A)[m0+m][k0+k] */
    __shared__ float Bs[TK][TN + 4]; /* Bs[k][n] = op(B)[k0+k][n0+n] */
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int m0 = blockIdx.y * TM, n0 = blockIdx.x * TN;
    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = 0;
    for (int k0 = 0; k0 < K; k0 += TK) {
        /* Consecutive threads read consecutive addresses in either layout. */
        for (int e = threadIdx.x; e < TM * TK; e += THREADS) {
            int m, k;
            if (ta) m = e % TM, k = e / TM;
            else k = e % TK, m = e / TK;
            const int gm = m0 + m, gk = k0 + k;
            float val = 0;
            if (gm < M && gk < K) val = ta ? A[(size_t)gk * lda + gm] : A[(size_t)gm * lda + gk];
            As[k][m] = val;
        }
        for (int e = threadIdx.x; e < TK * TN; e += THREADS) {
            int k, n;
            if (tb) k = e % TK, n = e / TK;
            else n = e % TN, k = e / TN;
            const int gk = k0 + k, gn = n0 + n;
            float val = 0;
            if (gk < K && gn < N) val = tb ? B[(size_t)gn * ldb + gk] : B[(size_t)gk * ldb + gn];
            Bs[k][n] = val;
        }
        __syncthreads();
        for (int k = 0; k < TK; k++) {
            float a[4], b[4];
            for (int i = 0; i < 4; i++) a[i] = As[k][ty + 16 * i];
            for (int j = 0; j < 4; j++) b[j] = Bs[k][tx + 16 * j];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            const int m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
            if (m < M && n < N) {
                float *c = C + (size_t)m * ldc + n;
                const float r = alpha * acc[i][j];
                *c = beta == 0 ? r : r + beta * *c;
            }
        }
}

__global__ void scale_c_kernel(int M, int N, float beta, float *C, int ldc) {
    const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)M * N) return;
    float *c = C + (e / N) * ldc + e % N;
    *c = beta == 0 ? 0.0f : beta * *c;
}

__global__ void bias_rows_kernel(float *y, const float *b, int T, int out) {
    const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e < (size_t)T * out) y[e] = b[e % out];
}

/* db[o] += sum_t dy[t][o]: one thread per column, rows in order. */
__global__ void column_sum_kernel(float *db, const float *dy, int T, int out) {
    const int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= out) return;
    float s = 0;
    for (int t = 0; t < T; t++) s += dy[(size_t)t * out + o];
    db[o] += s;
}

extern "C" {

void gk_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc) {
    gk_rocm_bind();
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0) {
        if (beta != 1) GK_LAUNCH(scale_c_kernel, dim3(gk_blocks((size_t)M * N, 256)), dim3(256), 0, M, N, beta, C, ldc);
        return;
    }
    dim3 grid(gk_blocks(N, TN), gk_blocks(M, TM));
    GK_LAUNCH(sgemm_kernel, grid, dim3(THREADS), 0, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gk_linear_forward(float *y, const float *x, const float *W, const float *b, int T, int in, int out) {
    gk_rocm_bind();
    if (b && T > 0 && out > 0)
        GK_LAUNCH(bias_rows_kernel, dim3(gk_blocks((size_t)T * out, 256)), dim3(256), 0, y, b, T, out);
    gk_sgemm(0, 1, T, out, in, 1.0f, x, in, W, in, b ? 1.0f : 0.0f, y, out);
}

/* No prepacking on ROCm: the GEMM reads W in place, so the packed form is an empty header. */
long gk_linear_packed_floats(int in, int out) { return 16; }

void gk_linear_pack(float *Wp, const float *W, int in, int out) {}

void gk_linear_forward_packed(float *y, const float *x, const float *W, const float *Wp, const float *b, int T, int in,
                              int out) {
    gk_linear_forward(y, x, W, b, T, in, out);
}

void gk_linear_forward_packed_multi(int n, float *const *ys, const float *x, const float *const *Ws,
                                    const float *const *Wps, const float *const *bs, int T, int in, const int *outs) {
    for (int i = 0; i < n; i++) gk_linear_forward(ys[i], x, Ws[i], bs[i], T, in, outs[i]);
}

void gk_linear_backward(float *dx, float *dW, float *db, const float *dy, const float *x, const float *W,
                        int T, int in, int out) {
    gk_rocm_bind();
    if (dx) gk_sgemm(0, 0, T, in, out, 1.0f, dy, out, W, in, 1.0f, dx, in);
    if (dW) gk_sgemm(1, 0, out, in, T, 1.0f, dy, out, x, in, 1.0f, dW, in);
    if (db && out > 0) GK_LAUNCH(column_sum_kernel, dim3(gk_blocks(out, 256)), dim3(256), 0, db, dy, T, out);
}

} /* extern "C" */
