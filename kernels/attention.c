//go:build !rocm

/* attention.c — causal grouped-query attention, forward and backward, flash-style, with optional
 * document masking (several sequences packed into one row).
 *
 * Nothing of size L x L is stored. Forward walks key tiles with an online softmax (running max and
 * sum per query row) and saves the log-sum-exp; backward recomputes each tile's probabilities from
 * it. Every tile product (q k^T, p v, and in backward dout v^T, p^T dout, ds^T q, ds k) is a small
 * GEMM on the SGEMM microkernels, read straight from the [B, L, heads, hd] layouts.
 *
 * Tiles are laid out per document: query tiles start at multiples of BQ from their document's first
 * query and key tiles at multiples of BK from its first key, and both stop at the document's end.
 * So a tile never mixes documents, the tiles of other documents are never visited (no compute on
 * cross-document pairs), and a document gets the tiling it would have alone in a row. Without
 * documents the row is one document and the tiling is the plain causal one.
 *
 * Parallel work: forward over (query tile, head); backward over (batch, kv head), so each
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
    const int32_t *doc_start; /* [B, Lk] or NULL */
} attn_shape;

static inline size_t q_row(const attn_shape *s, int b, int i, int h) {
    return (((size_t)b * s->Lq + i) * s->nh + h) * s->hd;
}
static inline size_t k_row(const attn_shape *s, int b, int j, int g) {
    return (((size_t)b * s->Lk + j) * s->nkv + g) * s->hd;
}

/* The first key position of the document holding key position p of row b, clamped to [0, p]. */
static inline int doc_first(const attn_shape *s, int b, int p) {
    if (!s->doc_start) return 0;
    const int d = s->doc_start[(size_t)b * s->Lk + p];
    return d < 0 ? 0 : (d > p ? p : d);
}

static inline int begins_doc(const attn_shape *s, int b, int p) { return doc_first(s, b, p) == p; }

/* Key position p's document ends before the returned position (the next document's first, or Lk). */
static int doc_end(const attn_shape *s, int b, int p) {
    if (!s->doc_start) return s->Lk;
    do p++;
    while (p < s->Lk && !begins_doc(s, b, p));
    return p;
}

/* Keys lo..hi-1 of a key tile starting at j0 with nk keys are visible to the query at key position
 * p whose document begins at first: not in its future, not before its document. */
static inline void visible_range(int p, int first, int j0, int nk, int *lo, int *hi) {
    const int l = first - j0, h = p - j0 + 1;
    *lo = l < 0 ? 0 : (l > nk ? nk : l);
    *hi = h < 0 ? 0 : (h > nk ? nk : h);
}

/* exp over a row less its maximum (sub), with the masked head and tail zeroed. */
GK_VECTORIZED
static void exp_row(float *row, float sub, int lo, int hi, int n) {
    for (int jj = 0; jj < lo; jj++) row[jj] = 0;
    for (int jj = lo; jj < hi; jj++) row[jj] = gk_expf_nonpos(row[jj] - sub);
    for (int jj = hi; jj < n; jj++) row[jj] = 0;
}

/* Query rows i0..i0+nq-1 of row b, all in one document, whose keys start at jlo. */
typedef struct {
    int b, i0, nq, jlo;
    long cost; /* score cells visited, for handing out the largest tiles first */
} q_tile;

/* Fills tiles (room for B*Lq) with the forward's query tiles and returns their count. */
static int query_tiles(q_tile *tiles, const attn_shape *s) {
    const int offset = s->Lk - s->Lq;
    int n = 0;
    for (int b = 0; b < s->B; b++) {
        for (int i0 = 0; i0 < s->Lq;) {
            int nq = 1, jlo = doc_first(s, b, offset + i0);
            while (nq < BQ && i0 + nq < s->Lq && !begins_doc(s, b, offset + i0 + nq)) {
                const int f = doc_first(s, b, offset + i0 + nq);
                jlo = f < jlo ? f : jlo; /* equal for valid documents; the least keeps any input in range */
                nq++;
            }
            tiles[n] = (q_tile){b, i0, nq, jlo, (long)nq * (offset + i0 + nq - jlo)};
            n++;
            i0 += nq;
        }
    }
    return n;
}

static int by_cost_descending(const void *a, const void *b) {
    const long ca = ((const q_tile *)a)->cost, cb = ((const q_tile *)b)->cost;
    return ca < cb ? 1 : (ca > cb ? -1 : 0);
}

/* Forward for tile t of head h. ws holds BQ*hd + BQ*BK + 2*BQ floats. */
static void attention_forward_tile(float *out, float *lse, const float *q, const float *k, const float *v,
                                   const attn_shape *s, const q_tile *t, int h, float *ws) {
    const int hd = s->hd, g = h / (s->nh / s->nkv), offset = s->Lk - s->Lq;
    const int ldq = s->nh * hd, ldk = s->nkv * hd, b = t->b, i0 = t->i0, nq = t->nq;
    float *O = ws, *S = O + BQ * hd, *m = S + BQ * BK, *l = m + BQ;
    memset(O, 0, sizeof(float) * nq * hd);
    for (int i = 0; i < nq; i++) m[i] = -INFINITY, l[i] = 0;
    const float *qt = q + q_row(s, b, i0, h);
    const int jend = offset + i0 + nq; /* keys jlo..jend-1 are visible to some row of the tile */
    for (int j0 = t->jlo; j0 < jend; j0 += BK) {
        const int nk = jend - j0 < BK ? jend - j0 : BK;
        const float *kt = k + k_row(s, b, j0, g), *vt = v + k_row(s, b, j0, g);
        gk_sgemm_serial(0, 1, nq, nk, hd, s->scale, qt, ldq, kt, ldk, 0.0f, S, BK);
        for (int i = 0; i < nq; i++) {
            float *srow = S + i * BK;
            const int p = offset + i0 + i;
            int lo, hi;
            visible_range(p, doc_first(s, b, p), j0, nk, &lo, &hi);
            if (lo >= hi) {
                memset(srow, 0, sizeof(float) * nk);
                continue;
            }
            const float mx = gk_max(srow + lo, hi - lo, m[i]), corr = gk_expf(m[i] - mx);
            exp_row(srow, mx, lo, hi, nk);
            l[i] = l[i] * corr + gk_sum(srow + lo, hi - lo);
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
                          const int32_t *doc_start, int B, int Lq, int Lk, int nh, int nkv, int hd, float scale) {
    attn_shape s = {B, Lq, Lk, nh, nkv, hd, scale, doc_start};
    q_tile *tiles = malloc(sizeof(q_tile) * ((size_t)B * Lq + 1));
    const int ntiles = query_tiles(tiles, &s);
    /* Larger tiles (later in their document) first, for balance; the order changes no result. */
    qsort(tiles, ntiles, sizeof(q_tile), by_cost_descending);
    const long units = (long)ntiles * nh;
#pragma omp parallel num_threads(gk_threads())
    {
        float *ws = malloc(sizeof(float) * ((size_t)BQ * hd + BQ * BK + 2 * BQ));
#pragma omp for schedule(dynamic, 1)
        for (long u = 0; u < units; u++)
            attention_forward_tile(out, lse, q, k, v, &s, &tiles[u / nh], (int)(u % nh), ws);
        free(ws);
    }
    free(tiles);
}

/* Forward of head h for the Lq <= BQ queries of one sequence (B = 1, one document), on the calling
 * thread: what gk_attention_forward computes for them, bit for bit. ws as for
 * attention_forward_tile. Used by gk_attention_decode (attention_decode.c), so a decode step gives
 * the same bits either way. */
void gk_attention_forward_head(float *out, const float *q, const float *k, const float *v, int Lq, int Lk,
                               int nh, int nkv, int hd, float scale, int h, float *ws) {
    attn_shape s = {1, Lq, Lk, nh, nkv, hd, scale, NULL};
    q_tile t = {0, 0, Lq, 0, 0};
    attention_forward_tile(out, NULL, q, k, v, &s, &t, h, ws);
}

/* The log-sum-exp of one query row, for a backward without a saved one. */
static float row_lse(const float *q, const float *k, const attn_shape *s, int b, int h, int i) {
    const int g = h / (s->nh / s->nkv), last = s->Lk - s->Lq + i, first = doc_first(s, b, last);
    const float *qi = q + q_row(s, b, i, h);
    float mx = -INFINITY;
    for (int j = first; j <= last; j++) mx = fmaxf(mx, gk_dot(qi, k + k_row(s, b, j, g), s->hd) * s->scale);
    double sum = 0;
    for (int j = first; j <= last; j++) sum += expf(gk_dot(qi, k + k_row(s, b, j, g), s->hd) * s->scale - mx);
    return mx + (float)log(sum);
}

/* P from scores and lse (masked head and tail zeroed), then dS = scale * P * (dP - D) in place of dP. */
GK_VECTORIZED
static void softmax_grad_row(float *srow, float *dprow, float L, float D, float scale, int lo, int hi, int n) {
    for (int jj = 0; jj < lo; jj++) srow[jj] = 0;
    for (int jj = lo; jj < hi; jj++) srow[jj] = gk_expf_nonpos(srow[jj] - L);
    for (int jj = hi; jj < n; jj++) srow[jj] = 0;
    for (int jj = 0; jj < n; jj++) dprow[jj] = srow[jj] * (dprow[jj] - D) * scale;
}

/* Backward for kv head g of batch b: with P = softmax(S), D_i = dout_i . out_i,
 * dS = P (dout v^T - D); dq += scale dS k; dk += scale dS^T q; dv += P^T dout.
 * Key tiles outer (dk, dv tiles stay local), query tiles of every head in the group inner; both
 * laid out per document, and a key tile meets only the queries of its own document. */
static void attention_backward_group(float *dq, float *dk, float *dv, const float *dout, const float *q,
                                     const float *k, const float *v, const float *lse_all, const float *D_all,
                                     const attn_shape *s, int b, int g, float *ws) {
    const int hd = s->hd, group = s->nh / s->nkv, offset = s->Lk - s->Lq;
    const int ldq = s->nh * hd, ldk = s->nkv * hd;
    float *dK = ws, *dV = dK + BK * hd, *S = dV + BK * hd, *dP = S + BQ * BK;
    int first = 0, end = 0; /* the current document's keys: first..end-1 */
    for (int j0 = 0, nk; j0 < s->Lk; j0 += nk) {
        if (j0 >= end) first = j0, end = doc_end(s, b, j0);
        nk = end - j0 < BK ? end - j0 : BK;
        /* Queries of this document at or after key j0, in query tiles aligned to the document's
         * first query. */
        const int qfirst = first - offset < 0 ? 0 : first - offset, qend = end - offset;
        const int ij0 = j0 - offset < 0 ? 0 : j0 - offset;
        if (qend <= ij0) continue; /* no query sees these keys (before the queries, Lq < Lk) */
        const int ifirst = qfirst + (ij0 - qfirst) / BQ * BQ;
        const float *kt = k + k_row(s, b, j0, g), *vt = v + k_row(s, b, j0, g);
        memset(dK, 0, sizeof(float) * BK * hd);
        memset(dV, 0, sizeof(float) * BK * hd);
        for (int h = g * group; h < (g + 1) * group; h++) {
            for (int i0 = ifirst; i0 < qend; i0 += BQ) {
                const int nq = qend - i0 < BQ ? qend - i0 : BQ;
                const float *qt = q + q_row(s, b, i0, h), *dot = dout + q_row(s, b, i0, h);
                gk_sgemm_serial(0, 1, nq, nk, hd, s->scale, qt, ldq, kt, ldk, 0.0f, S, BK);
                gk_sgemm_serial(0, 1, nq, nk, hd, 1.0f, dot, ldq, vt, ldk, 0.0f, dP, BK);
                for (int i = 0; i < nq; i++) {
                    const size_t r = ((size_t)b * s->nh + h) * s->Lq + i0 + i;
                    const int p = offset + i0 + i;
                    int lo, hi;
                    visible_range(p, doc_first(s, b, p), j0, nk, &lo, &hi);
                    softmax_grad_row(S + i * BK, dP + i * BK, lse_all[r], D_all[r], s->scale, lo, hi, nk);
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
                           const int32_t *doc_start, int B, int Lq, int Lk, int nh, int nkv, int hd,
                           float scale) {
    attn_shape s = {B, Lq, Lk, nh, nkv, hd, scale, doc_start};
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
