/* gemm.cu — gorstar's own GEMM (the fallback where cuBLAS / rocBLAS is absent or slower for a
 * shape): C = alpha op(A) op(B) + beta C, row-major, 64 x 64 tiles in shared memory, 4 x 4 outputs
 * per thread of 256. Operands are float32 or bfloat16 (rounded values, widened to float), products
 * summed in float32; a bfloat16 C is rounded once, at the end. Grid: (ceil(N/64), ceil(M/64)). */
#include "gk_compat.h"

#define TM 64
#define TN 64
#define TK 16
#define GEMM_THREADS 256

template <typename TA, typename TB, typename TC>
__device__ inline void gemm_tile(int ta, int tb, int M, int N, int K, float alpha, const TA *__restrict__ A, int lda,
                                 const TB *__restrict__ B, int ldb, float beta, TC *__restrict__ C, int ldc) {
    __shared__ float As[TK][TM + 4]; /* As[k][m] = op(A)[m0+m][k0+k] */
    __shared__ float Bs[TK][TN + 4]; /* Bs[k][n] = op(B)[k0+k][n0+n] */
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int m0 = blockIdx.y * TM, n0 = blockIdx.x * TN;
    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = 0;
    for (int k0 = 0; k0 < K; k0 += TK) {
        /* Consecutive threads read consecutive addresses in either layout. */
        for (int e = threadIdx.x; e < TM * TK; e += GEMM_THREADS) {
            int m, k;
            if (ta) m = e % TM, k = e / TM;
            else k = e % TK, m = e / TK;
            const int gm = m0 + m, gk = k0 + k;
            float val = 0;
            if (gm < M && gk < K) val = ta ? gk_ld(A + (gk_size)gk * lda + gm) : gk_ld(A + (gk_size)gm * lda + gk);
            As[k][m] = val;
        }
        for (int e = threadIdx.x; e < TK * TN; e += GEMM_THREADS) {
            int k, n;
            if (tb) k = e % TK, n = e / TK;
            else n = e % TN, k = e / TN;
            const int gk = k0 + k, gn = n0 + n;
            float val = 0;
            if (gk < K && gn < N) val = tb ? gk_ld(B + (gk_size)gn * ldb + gk) : gk_ld(B + (gk_size)gk * ldb + gn);
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
                TC *c = C + (gk_size)m * ldc + n;
                const float r = alpha * acc[i][j];
                gk_st(c, beta == 0 ? r : r + beta * gk_ld(c));
            }
        }
}

/* gk_gemm_<A><B><C>: f = float32, h = bfloat16. */
#define GK_GEMM(name, TA, TB, TC)                                                                             \
    GK_KERNEL __launch_bounds__(GEMM_THREADS) void name(int ta, int tb, int M, int N, int K, float alpha,     \
                                                        const TA *A, int lda, const TB *B, int ldb, float beta, \
                                                        TC *C, int ldc) {                                     \
        gemm_tile<TA, TB, TC>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);                          \
    }
GK_GEMM(gk_gemm_fff, float, float, float)
GK_GEMM(gk_gemm_hhf, gk_u16, gk_u16, float)
GK_GEMM(gk_gemm_hhh, gk_u16, gk_u16, gk_u16)

/* C = beta C over M x N (K = 0 or alpha = 0). */
GK_KERNEL void gk_scale_c(int M, int N, float beta, float *C, int ldc) {
    const gk_size e = gk_index();
    if (e >= (gk_size)M * N) return;
    float *c = C + (e / N) * ldc + e % N;
    *c = beta == 0 ? 0.0f : beta * *c;
}

/* y[t][o] = b[o]: the bias, before y += x W^T. */
GK_KERNEL void gk_bias_rows(float *y, const float *b, int T, int out) {
    const gk_size e = gk_index();
    if (e < (gk_size)T * out) y[e] = b[e % out];
}

/* db[o] += sum_t dy[t][o]: one thread per column, rows in order. */
GK_KERNEL void gk_column_sum(float *db, const float *dy, int T, int out) {
    const int o = (int)gk_index();
    if (o >= out) return;
    float s = 0;
    for (int t = 0; t < T; t++) s += dy[(gk_size)t * out + o];
    db[o] += s;
}
