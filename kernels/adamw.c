/* adamw.c — global gradient norm (sum of squares) and the AdamW update with decoupled weight decay. */
#include <math.h>
#include <stdlib.h>

#include "cpu.h"

GK_VECTORIZED
static double sumsq_chunk(const float *x, size_t n) { return gk_sumsq(x, n); }

/* Chunks of GK_CHUNK summed in double, then the chunk sums in order: the same bits for any thread count. */
double gk_sum_squares(const float *x, size_t n) {
    size_t nchunks = (n + GK_CHUNK - 1) / GK_CHUNK;
    if (nchunks == 0) return 0;
    double *part = malloc(sizeof(double) * nchunks);
#pragma omp parallel for num_threads(gk_threads()) schedule(static) if (nchunks > 4)
    for (size_t ch = 0; ch < nchunks; ch++) {
        size_t i0 = ch * GK_CHUNK, i1 = i0 + GK_CHUNK < n ? i0 + GK_CHUNK : n;
        part[ch] = sumsq_chunk(x + i0, i1 - i0);
    }
    double total = 0;
    for (size_t ch = 0; ch < nchunks; ch++) total += part[ch];
    free(part);
    return total;
}

/* PyTorch's AdamW: p -= lr*wd*p; m,v moments of g = grad*grad_scale;
 * p -= lr * (m / (1-beta1^step)) / (sqrt(v / (1-beta2^step)) + eps). One element at a time: GCC keeps
 * this loop scalar (sqrtf may set errno; cgo rejects -fno-math-errno and cpu.h's optimize pragma does
 * not reach the builtin), so adamw_avx2 does its work 8 at a time where it can. */
GK_VECTORIZED
static void adamw_chunk(float *restrict param, const float *restrict grad, float *restrict m, float *restrict v,
                        size_t n, float lr, float beta1, float beta2, float eps, float decay, float grad_scale,
                        float bc1, float bc2) {
    for (size_t i = 0; i < n; i++) {
        float g = grad[i] * grad_scale;
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        param[i] = param[i] * decay - lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* adamw_chunk's arithmetic on 8 elements at a time (n a multiple of 8), operation for operation as
 * its x86-64-v3 and v4 clones compile it (GCC 12): m and v each one fused multiply-add (beta * old +
 * the product of g), everything else rounded on its own, square root and divisions correctly
 * rounded in every lane as in one. So the same bits, which TestAdamWVectorBits checks. */
__attribute__((target("avx2,fma"))) static void adamw_avx2(float *restrict param, const float *restrict grad,
                                                            float *restrict m, float *restrict v, size_t n, float lr,
                                                            float beta1, float beta2, float eps, float decay,
                                                            float grad_scale, float bc1, float bc2) {
    const __m256 gs = _mm256_set1_ps(grad_scale), b1 = _mm256_set1_ps(beta1), b2 = _mm256_set1_ps(beta2),
                 c1 = _mm256_set1_ps(1.0f - beta1), c2 = _mm256_set1_ps(1.0f - beta2), dec = _mm256_set1_ps(decay),
                 vlr = _mm256_set1_ps(lr), vbc1 = _mm256_set1_ps(bc1), vbc2 = _mm256_set1_ps(bc2),
                 veps = _mm256_set1_ps(eps);
    for (size_t i = 0; i < n; i += 8) {
        const __m256 g = _mm256_mul_ps(_mm256_loadu_ps(grad + i), gs);
        const __m256 mi = _mm256_fmadd_ps(_mm256_loadu_ps(m + i), b1, _mm256_mul_ps(g, c1));
        const __m256 vi = _mm256_fmadd_ps(_mm256_loadu_ps(v + i), b2, _mm256_mul_ps(_mm256_mul_ps(g, c2), g));
        _mm256_storeu_ps(m + i, mi);
        _mm256_storeu_ps(v + i, vi);
        const __m256 step = _mm256_mul_ps(_mm256_div_ps(mi, vbc1), vlr);
        const __m256 den = _mm256_add_ps(_mm256_sqrt_ps(_mm256_div_ps(vi, vbc2)), veps);
        __m256 kept = _mm256_mul_ps(_mm256_loadu_ps(param + i), dec);
        __asm__("" : "+x"(kept)); /* rounded on its own, as in adamw_chunk: never fused into the subtraction */
        _mm256_storeu_ps(param + i, _mm256_sub_ps(kept, _mm256_div_ps(step, den)));
    }
}
#endif

/* gk_adamw; vector = 0 keeps every element in adamw_chunk (TestAdamWVectorBits' reference). */
static void adamw(float *param, const float *grad, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                  float eps, float weight_decay, float grad_scale, int step, int vector) {
    float bc1 = (float)(1.0 - pow((double)beta1, step));
    float bc2 = (float)(1.0 - pow((double)beta2, step));
    float decay = 1.0f - lr * weight_decay;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    const int avx2 = vector && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    (void)vector;
#endif
    const size_t chunks = (n + GK_CHUNK - 1) / GK_CHUNK;
#pragma omp parallel for num_threads(gk_threads()) schedule(static) if (chunks > 4)
    for (size_t c = 0; c < chunks; c++) {
        size_t i = c * GK_CHUNK, k = n - i < GK_CHUNK ? n - i : GK_CHUNK, done = 0;
#if defined(__x86_64__) && defined(__GNUC__)
        if (avx2) {
            done = k / 8 * 8;
            adamw_avx2(param + i, grad + i, m + i, v + i, done, lr, beta1, beta2, eps, decay, grad_scale, bc1, bc2);
        }
#endif
        adamw_chunk(param + i + done, grad + i + done, m + i + done, v + i + done, k - done, lr, beta1, beta2, eps, decay,
                    grad_scale, bc1, bc2);
    }
}

void gk_adamw(float *param, const float *grad, float *m, float *v, size_t n, float lr, float beta1,
              float beta2, float eps, float weight_decay, float grad_scale, int step) {
    adamw(param, grad, m, v, n, lr, beta1, beta2, eps, weight_decay, grad_scale, step, 1);
}

/* For tests: gk_adamw with every element in adamw_chunk's own loop. */
void gk_adamw_scalar(float *param, const float *grad, float *m, float *v, size_t n, float lr, float beta1,
                     float beta2, float eps, float weight_decay, float grad_scale, int step) {
    adamw(param, grad, m, v, n, lr, beta1, beta2, eps, weight_decay, grad_scale, step, 0);
}
