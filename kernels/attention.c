//go:build !rocm

/* attention.c — causal grouped-query attention, forward and backward, with an online softmax so
 * nothing of size L x L is ever stored: forward keeps a running max and sum per query row and saves
 * the log-sum-exp; backward recomputes each probability from it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

static inline float dot(const float *a, const float *b, int n) {
    float s = 0;
    for (int d = 0; d < n; d++) s += a[d] * b[d];
    return s;
}

void gk_attention_forward(float *out, float *lse, const float *q, const float *k, const float *v,
                          int B, int Lq, int Lk, int nh, int nkv, int hd, float scale) {
    int group = nh / nkv;
    long rows = (long)B * nh * Lq;
#pragma omp parallel num_threads(gk_threads())
    {
        float *acc = malloc(sizeof(float) * hd);
#pragma omp for schedule(static)
        for (long r = 0; r < rows; r++) {
            int i = (int)(r % Lq), h = (int)(r / Lq % nh), b = (int)(r / Lq / nh);
            int g = h / group, last = Lk - Lq + i;
            const float *qi = q + (((size_t)b * Lq + i) * nh + h) * hd;
            float mx = -INFINITY, sum = 0;
            memset(acc, 0, sizeof(float) * hd);
            for (int j = 0; j <= last; j++) {
                const float *kj = k + (((size_t)b * Lk + j) * nkv + g) * hd;
                const float *vj = v + (((size_t)b * Lk + j) * nkv + g) * hd;
                float s = scale * dot(qi, kj, hd);
                if (s > mx) {
                    float c = expf(mx - s);
                    sum *= c;
                    for (int d = 0; d < hd; d++) acc[d] *= c;
                    mx = s;
                }
                float p = expf(s - mx);
                sum += p;
                for (int d = 0; d < hd; d++) acc[d] += p * vj[d];
            }
            float *oi = out + (((size_t)b * Lq + i) * nh + h) * hd;
            for (int d = 0; d < hd; d++) oi[d] = acc[d] / sum;
            if (lse) lse[((size_t)b * nh + h) * Lq + i] = mx + logf(sum);
        }
        free(acc);
    }
}

/* With P = softmax(S), S = scale * q k^T and D_i = dout_i . out_i:
 * dS_ij = P_ij (dout_i . v_j - D_i); dq_i += scale dS_ij k_j; dk_j += scale dS_ij q_i; dv_j += P_ij dout_i.
 * Work is split over (batch, kv head) so every dk/dv row has one writer: no atomics, fixed order. */
void gk_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                           const float *k, const float *v, const float *out, const float *lse,
                           int B, int Lq, int Lk, int nh, int nkv, int hd, float scale) {
    int group = nh / nkv;
#pragma omp parallel for num_threads(gk_threads()) schedule(static)
    for (int bg = 0; bg < B * nkv; bg++) {
        int b = bg / nkv, g = bg % nkv;
        for (int h = g * group; h < (g + 1) * group; h++) {
            for (int i = 0; i < Lq; i++) {
                size_t qoff = (((size_t)b * Lq + i) * nh + h) * hd;
                const float *qi = q + qoff, *doi = dout + qoff, *oi = out + qoff;
                int last = Lk - Lq + i;
                float l;
                if (lse) {
                    l = lse[((size_t)b * nh + h) * Lq + i];
                } else { /* recompute the log-sum-exp when the forward did not save it */
                    float mx = -INFINITY;
                    double sum = 0;
                    for (int j = 0; j <= last; j++) {
                        float s = scale * dot(qi, k + (((size_t)b * Lk + j) * nkv + g) * hd, hd);
                        mx = s > mx ? s : mx;
                    }
                    for (int j = 0; j <= last; j++)
                        sum += expf(scale * dot(qi, k + (((size_t)b * Lk + j) * nkv + g) * hd, hd) - mx);
                    l = mx + (float)log(sum);
                }
                float D = dot(doi, oi, hd);
                for (int j = 0; j <= last; j++) {
                    size_t koff = (((size_t)b * Lk + j) * nkv + g) * hd;
                    const float *kj = k + koff, *vj = v + koff;
                    float p = expf(scale * dot(qi, kj, hd) - l);
                    float ds = p * (dot(doi, vj, hd) - D) * scale;
                    if (dq) for (int d = 0; d < hd; d++) dq[qoff + d] += ds * kj[d];
                    if (dk) for (int d = 0; d < hd; d++) dk[koff + d] += ds * qi[d];
                    if (dv) for (int d = 0; d < hd; d++) dv[koff + d] += p * doi[d];
                }
            }
        }
    }
}
