//go:build !rocm

/* attention.c — causal grouped-query attention, forward and backward, flash-style.
 *
 * Nothing of size L x L is stored. Forward walks key tiles with an online softmax (running max and
 * sum per query row) and saves the log-sum-exp; backward recomputes each tile's probabilities from
 * it. Every tile product (q k^T, p v, and in backward dout v^T, p^T dout, ds^T q, ds k) is a small
 * GEMM on the SGEMM microkernels, read straight from the [B, L, heads, hd] layouts.
 *
 * Parallel work: forward over (batch, head, query tile); backward over (batch, kv head), so each
 * dk/dv/dq row has a single writer. Each unit's arithmetic order is fixed, so results are the same
 * for any thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

enum { BQ = 48, BK = 64 }; /* BQ: a multiple of every microkernel's MR (4, 6, 12) */

typedef struct {
    int B, Lq, Lk, nh, nkv, hd;
    float scale;
} attn_shape;

static inline size_t q_row(const attn_shape *s, int b, int i, int h) {
    return (((size_t)b * s->Lq + i) * s->nh + h) * s->hd;
}
static inline size_t k_row(const attn_shape *s, int b, int j, int g) {
    return (((size_t)b * s->Lk + j) * s->nkv + g) * s->hd;
}

/* Keys jj < visible of a tile starting at j0 are not in the future of query row i. */
static inline int visible_keys(int offset, int i, int j0, int nk) {
    int v = offset + i - j0 + 1;
    return v < 0 ? 0 : (v > nk ? nk : v);
}

/* exp over a row with the masked tail zeroed. */
GK_VECTORIZED
static void exp_row(float *row, float sub, int visible, int n) {
    for (int jj = 0; jj < visible; jj++) row[jj] = gk_expf(row[jj] - sub);
    for (int jj = visible; jj < n; jj++) row[jj] = 0;
}

/* Forward for query rows i0..i0+nq of head h. ws holds BQ*hd + BQ*BK + 2*BQ floats. */
static void attention_forward_tile(float *out, float *lse, const float *q, const float *k, const float *v,
                                   const attn_shape *s, int b, int h, int i0, float *ws) {
    const int hd = s->hd, g = h / (s->nh / s->nkv), offset = s->Lk - s->Lq;
    const int ldq = s->nh * hd, ldk = s->nkv * hd;
    const int nq = s->Lq - i0 < BQ ? s->Lq - i0 : BQ;
    float *O = ws, *S = O + BQ * hd, *m = S + BQ * BK, *l = m + BQ;
    memset(O, 0, sizeof(float) * nq * hd);
    for (int i = 0; i < nq; i++) m[i] = -INFINITY, l[i] = 0;
    const float *qt = q + q_row(s, b, i0, h);
    const int jend = offset + i0 + nq; /* keys 0..jend-1 are visible to some row of the tile */
    for (int j0 = 0; j0 < jend; j0 += BK) {
        const int nk = jend - j0 < BK ? jend - j0 : BK;
        const float *kt = k + k_row(s, b, j0, g), *vt = v + k_row(s, b, j0, g);
        gk_sgemm_serial(0, 1, nq, nk, hd, s->scale, qt, ldq, kt, ldk, 0.0f, S, BK);
        for (int i = 0; i < nq; i++) {
            float *srow = S + i * BK;
            const int vis = visible_keys(offset, i0 + i, j0, nk);
            if (vis == 0) {
                memset(srow, 0, sizeof(float) * nk);
                continue;
            }
            const float mx = gk_max(srow, vis, m[i]), corr = gk_expf(m[i] - mx);
            exp_row(srow, mx, vis, nk);
            l[i] = l[i] * corr + gk_sum(srow, vis);
            m[i] = mx;
            if (corr != 1.0f)
                for (int d = 0; d < hd; d++) O[i * hd + d] *= corr;
        }
        gk_sgemm_serial(0, 0, nq, hd, nk, 1.0f, S, BK, vt, ldk, 1.0f, O, hd);
    }
    for (int i = 0; i < nq; i++) {
        float *oi = out + q_row(s, b, i0 + i, h), inv = 1.0f / l[i];
        for (int d = 0; d < hd; d++) oi[d] = O[i * hd + d] * inv;
        if (lse) lse[((size_t)b * s->nh + h) * s->Lq + i0 + i] = m[i] + logf(l[i]);
    }
}

void gk_attention_forward(float *out, float *lse, const float *q, const float *k, const float *v,
                          int B, int Lq, int Lk, int nh, int nkv, int hd, float scale) {
    attn_shape s = {B, Lq, Lk, nh, nkv, hd, scale};
    const int qtiles = (Lq + BQ - 1) / BQ;
    const long units = (long)B * nh * qtiles;
#pragma omp parallel num_threads(gk_threads())
    {
        float *ws = malloc(sizeof(float) * ((size_t)BQ * hd + BQ * BK + 2 * BQ));
#pragma omp for schedule(dynamic, 1)
        for (long u = 0; u < units; u++) {
            /* Later query tiles see more keys: hand them out first for balance. */
            int it = qtiles - 1 - (int)(u % qtiles), h = (int)(u / qtiles % nh), b = (int)(u / qtiles / nh);
            attention_forward_tile(out, lse, q, k, v, &s, b, h, it * BQ, ws);
        }
        free(ws);
    }
}

/* Forward of head h for the Lq <= BQ queries of one sequence (B = 1), on the calling thread: what
 * gk_attention_forward computes for them, bit for bit. ws as for attention_forward_tile. Used by
 * gk_attention_decode (attention_decode.c), so a decode step gives the same bits either way. */
void gk_attention_forward_head(float *out, const float *q, const float *k, const float *v, int Lq, int Lk,
                               int nh, int nkv, int hd, float scale, int h, float *ws) {
    attn_shape s = {1, Lq, Lk, nh, nkv, hd, scale};
    attention_forward_tile(out, NULL, q, k, v, &s, 0, h, 0, ws);
}

/* The log-sum-exp of one query row, for a backward without a saved one. */
static float row_lse(const float *q, const float *k, const attn_shape *s, int b, int h, int i) {
    const int g = h / (s->nh / s->nkv), last = s->Lk - s->Lq + i;
    const float *qi = q + q_row(s, b, i, h);
    float mx = -INFINITY;
    for (int j = 0; j <= last; j++) mx = fmaxf(mx, gk_dot(qi, k + k_row(s, b, j, g), s->hd) * s->scale);
    double sum = 0;
    for (int j = 0; j <= last; j++) sum += expf(gk_dot(qi, k + k_row(s, b, j, g), s->hd) * s->scale - mx);
    return mx + (float)log(sum);
}

/* P from scores and lse (masked tail zeroed), then dS = scale * P * (dP - D) in place of dP. */
GK_VECTORIZED
static void softmax_grad_row(float *srow, float *dprow, float L, float D, float scale, int visible, int n) {
    for (int jj = 0; jj < visible; jj++) srow[jj] = gk_expf(srow[jj] - L);
    for (int jj = visible; jj < n; jj++) srow[jj] = 0;
    for (int jj = 0; jj < n; jj++) dprow[jj] = srow[jj] * (dprow[jj] - D) * scale;
}

/* Backward for kv head g of batch b: with P = softmax(S), D_i = dout_i . out_i,
 * dS = P (dout v^T - D); dq += scale dS k; dk += scale dS^T q; dv += P^T dout.
 * Key tiles outer (dk, dv tiles stay local), query tiles of every head in the group inner. */
static void attention_backward_group(float *dq, float *dk, float *dv, const float *dout, const float *q,
                                     const float *k, const float *v, const float *lse_all, const float *D_all,
                                     const attn_shape *s, int b, int g, float *ws) {
    const int hd = s->hd, group = s->nh / s->nkv, offset = s->Lk - s->Lq;
    const int ldq = s->nh * hd, ldk = s->nkv * hd;
    float *dK = ws, *dV = dK + BK * hd, *S = dV + BK * hd, *dP = S + BQ * BK;
    for (int j0 = 0; j0 < s->Lk; j0 += BK) {
        const int nk = s->Lk - j0 < BK ? s->Lk - j0 : BK;
        const float *kt = k + k_row(s, b, j0, g), *vt = v + k_row(s, b, j0, g);
        memset(dK, 0, sizeof(float) * BK * hd);
        memset(dV, 0, sizeof(float) * BK * hd);
        /* The first query that sees key j0 is i = j0 - offset. */
        const int ifirst = j0 - offset < 0 ? 0 : (j0 - offset) / BQ * BQ;
        for (int h = g * group; h < (g + 1) * group; h++) {
            for (int i0 = ifirst; i0 < s->Lq; i0 += BQ) {
                const int nq = s->Lq - i0 < BQ ? s->Lq - i0 : BQ;
                const float *qt = q + q_row(s, b, i0, h), *dot = dout + q_row(s, b, i0, h);
                gk_sgemm_serial(0, 1, nq, nk, hd, s->scale, qt, ldq, kt, ldk, 0.0f, S, BK);
                gk_sgemm_serial(0, 1, nq, nk, hd, 1.0f, dot, ldq, vt, ldk, 0.0f, dP, BK);
                for (int i = 0; i < nq; i++) {
                    const size_t r = ((size_t)b * s->nh + h) * s->Lq + i0 + i;
                    softmax_grad_row(S + i * BK, dP + i * BK, lse_all[r], D_all[r], s->scale,
                                     visible_keys(offset, i0 + i, j0, nk), nk);
                }
                gk_sgemm_serial(1, 0, nk, hd, nq, 1.0f, S, BK, dot, ldq, 1.0f, dV, hd);
                gk_sgemm_serial(1, 0, nk, hd, nq, 1.0f, dP, BK, qt, ldq, 1.0f, dK, hd);
                if (dq) gk_sgemm_serial(0, 0, nq, hd, nk, 1.0f, dP, BK, kt, ldk, 1.0f, dq + q_row(s, b, i0, h), ldq);
            }
        }
        for (int jj = 0; jj < nk; jj++) {
            if (dk) {
                float *dkj = dk + k_row(s, b, j0 + jj, g);
                for (int d = 0; d < hd; d++) dkj[d] += dK[jj * hd + d];
            }
            if (dv) {
                float *dvj = dv + k_row(s, b, j0 + jj, g);
                for (int d = 0; d < hd; d++) dvj[d] += dV[jj * hd + d];
            }
        }
    }
}

void gk_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                           const float *k, const float *v, const float *out, const float *lse,
                           int B, int Lq, int Lk, int nh, int nkv, int hd, float scale) {
    attn_shape s = {B, Lq, Lk, nh, nkv, hd, scale};
    const size_t rows = (size_t)B * nh * Lq;
    /* D = rowsum(dout * out) per (b, h, i), and lse when the forward did not save it. */
    float *D = malloc(sizeof(float) * (rows ? rows : 1)), *L = NULL;
    if (!lse) L = malloc(sizeof(float) * (rows ? rows : 1));
#pragma omp parallel for num_threads(gk_threads()) schedule(static)
    for (size_t r = 0; r < rows; r++) {
        int i = (int)(r % Lq), h = (int)(r / Lq % nh), b = (int)(r / Lq / nh);
        D[r] = gk_dot(out + q_row(&s, b, i, h), dout + q_row(&s, b, i, h), hd);
        if (L) L[r] = row_lse(q, k, &s, b, h, i);
    }
#pragma omp parallel num_threads(gk_threads())
    {
        float *ws = malloc(sizeof(float) * ((size_t)2 * BK * hd + 2 * BQ * BK));
#pragma omp for schedule(dynamic, 1)
        for (int bg = 0; bg < B * nkv; bg++)
            attention_backward_group(dq, dk, dv, dout, q, k, v, lse ? lse : L, D, &s, bg / nkv, bg % nkv, ws);
        free(ws);
    }
    free(D);
    free(L);
}
