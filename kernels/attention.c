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
/* Queries per row from which the forward packs key tiles first (a variable for tests, which run
 * both paths: the same bits either way). */
int gk_attention_prepack_queries = 512;

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

/* exp over a row less its maximum (sub), with the masked head and tail zeroed (all of it when
 * lo >= hi). Inlined into the vectorized callers below. */
static inline __attribute__((always_inline)) void exp_row(float *row, float sub, int lo, int hi, int n) {
    for (int jj = 0; jj < lo; jj++) row[jj] = 0;
    for (int jj = lo; jj < hi; jj++) row[jj] = gk_expf_nonpos(row[jj] - sub);
    for (int jj = hi; jj < n; jj++) row[jj] = 0;
}

/* The forward's online softmax over one block of scores (S, rows BK apart; keys lo[i]..hi[i]-1
 * visible to row i), in two passes compiled for this CPU's vectors, one call each per block. The
 * steps between stay in the baseline caller: the correction exp(m - mx) and l = l * corr + sum,
 * which GCC would fuse into one rounding in the FMA clones (and on AArch64, where every function
 * may fuse, in some places and not others: gk_rounded keeps the product's rounding). gk_max and
 * gk_sum keep their 8 fixed lanes, so every clone gives the same bits. */
GK_VECTORIZED
static void block_max(const float *S, const int *lo, const int *hi, const float *m, float *mx, int nq) {
    for (int i = 0; i < nq; i++) mx[i] = lo[i] < hi[i] ? gk_max(S + (size_t)i * BK + lo[i], hi[i] - lo[i], m[i]) : m[i];
}

/* P = exp(S - mx) row by row (rows without a visible key zeroed), their sums, and the rows of the
 * output so far (O, hd apart) scaled by corr. */
GK_VECTORIZED
static void block_exp(float *S, float *O, const int *lo, const int *hi, const float *mx, const float *corr,
                      float *sum, int nq, int nk, int hd) {
    for (int i = 0; i < nq; i++) {
        float *row = S + (size_t)i * BK;
        exp_row(row, mx[i], lo[i], hi[i], nk);
        if (lo[i] >= hi[i]) continue;
        sum[i] = gk_sum(row + lo[i], hi[i] - lo[i]);
        if (corr[i] != 1.0f)
            for (int d = 0; d < hd; d++) O[(size_t)i * hd + d] *= corr[i];
    }
}

/* out = O / l row by row. */
GK_VECTORIZED
static void block_normalize(float *out, long ldo, const float *O, const float *l, int nq, int hd) {
    for (int i = 0; i < nq; i++) {
        const float inv = 1.0f / l[i];
        for (int d = 0; d < hd; d++) out[i * ldo + d] = O[(size_t)i * hd + d] * inv;
    }
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

static inline int round_up(int x, int r) { return (x + r - 1) / r * r; }

/* Packed operands are read with aligned vector loads: every piece of a workspace or of a table of
 * packed tiles starts 64 bytes from the last. take carves n floats off *at (at NULL: only counts). */
static inline size_t align16(size_t n) { return (n + 15) / 16 * 16; }
static inline float *take(float **at, size_t *used, size_t n) {
    float *p = *at ? *at + *used : NULL;
    *used += align16(n);
    return p;
}

/* Packed tiles: every tile product reads operands packed for the microkernel (gk_tile_*), each
 * packed once rather than once per product (a 48 x 64 x 64 product does fewer multiply-adds per
 * float than packing moves). The tiles of one row b: key tiles (BK keys from each document's first)
 * and query tiles (BQ queries from each document's first), found at their first position:
 * at[b * L + p] is the tile's offset in its (b, head) block, n its length; the blocks of row b
 * are size[b] floats apart and start at base[b]. */
typedef struct {
    long off;
    int n;
} tile_at;

typedef struct {
    tile_at *at;
    long *base, *size;
    long total;
} tile_table;

/* Floats of an operand packed for gk_tile_product (m rows of A, or n columns of B, k deep), rounded
 * to 64 bytes so that the next piece stays aligned. */
static size_t a_floats(int m, int k, int MR) { return align16((size_t)round_up(m, MR) * k); }
static size_t b_floats(int k, int n, int NR) { return align16((size_t)k * round_up(n, NR)); }

/* A packed key tile of n keys (the forward's): k^T as B (hd deep), then v as B (n deep), from
 * key_tile_v on. A packed query tile of n queries (the backward's): q and dout as A (hd deep), then
 * q and dout as B (n deep), where query_tile finds them. */
static size_t key_tile_v(int n, int hd, int NR) { return b_floats(hd, n, NR); }
static long key_tile_floats(int n, int hd, int NR) { return (long)(key_tile_v(n, hd, NR) + b_floats(n, hd, NR)); }

typedef struct {
    float *qa, *da, *qb, *db;
} query_packs;

static query_packs query_tile(float *p, int n, int hd, int MR, int NR) {
    const size_t a = a_floats(n, hd, MR), bf = b_floats(n, hd, NR);
    return (query_packs){p, p + a, p + 2 * a, p + 2 * a + bf};
}
static long query_tile_floats(int n, int hd, int MR, int NR) {
    return 2 * (long)(a_floats(n, hd, MR) + b_floats(n, hd, NR));
}

/* The tiles of every row: key tiles (keys = 1; positions are keys, L = Lk) or query tiles (positions
 * are queries, L = Lq; a document's queries are its keys less the offset Lk - Lq); heads blocks per
 * row. -1 when out of memory (free the table either way). */
static int tile_table_make(tile_table *t, const attn_shape *s, int keys, int heads, int MR, int NR) {
    const int L = keys ? s->Lk : s->Lq, offset = s->Lk - s->Lq, width = keys ? BK : BQ;
    t->at = malloc(sizeof(tile_at) * ((size_t)s->B * L + 1));
    t->base = malloc(sizeof(long) * ((size_t)s->B + 1));
    t->size = malloc(sizeof(long) * ((size_t)s->B + 1));
    t->total = 0;
    if (!t->at || !t->base || !t->size) return -1;
    for (size_t i = 0; i < (size_t)s->B * L; i++) t->at[i] = (tile_at){-1, 0};
    for (int b = 0; b < s->B; b++) {
        long off = 0;
        for (int first = 0, end; first < s->Lk; first = end) {
            end = doc_end(s, b, first);
            const int lo = keys ? first : (first - offset < 0 ? 0 : first - offset), hi = keys ? end : end - offset;
            for (int p = lo; p < hi; p += width) {
                const int n = hi - p < width ? hi - p : width;
                t->at[(size_t)b * L + p] = (tile_at){off, n};
                off += keys ? key_tile_floats(n, s->hd, NR) : query_tile_floats(n, s->hd, MR, NR);
            }
        }
        t->base[b] = t->total;
        t->size[b] = off;
        t->total += off * heads;
    }
    return 0;
}

static void tile_table_free(tile_table *t) {
    free(t->at);
    free(t->base);
    free(t->size);
}

/* Packs the key tile of n keys from key j0 of row b, kv head g (key_tile_v). */
static void pack_key_tile(float *dst, const float *k, const float *v, const attn_shape *s, int b, int g, int j0,
                          int n, int NR) {
    const int ldk = s->nkv * s->hd;
    gk_tile_pack_b(dst, k + k_row(s, b, j0, g), ldk, 1, s->hd, n);
    gk_tile_pack_b(dst + key_tile_v(n, s->hd, NR), v + k_row(s, b, j0, g), ldk, 0, n, s->hd);
}

/* The forward's workspace (ws NULL: *used counts its floats): the tile's output O, scores S, row
 * maxima m and sums l, q and p packed as A, and a key tile packed here when not beforehand. */
typedef struct {
    float *O, *S, *m, *l, *mx, *corr, *sum, *qa, *pa, *own;
    int *lo, *hi;
} fwd_ws;

static fwd_ws fwd_ws_carve(float *ws, size_t *used, int hd, int MR, int NR) {
    fwd_ws w;
    w.O = take(&ws, used, (size_t)BQ * hd);
    w.S = take(&ws, used, (size_t)BQ * BK);
    w.m = take(&ws, used, BQ);
    w.l = take(&ws, used, BQ);
    w.mx = take(&ws, used, BQ);
    w.corr = take(&ws, used, BQ);
    w.sum = take(&ws, used, BQ);
    w.lo = (int *)take(&ws, used, BQ); /* sizeof(int) == sizeof(float) */
    w.hi = (int *)take(&ws, used, BQ);
    w.qa = take(&ws, used, a_floats(BQ, hd, MR));
    w.pa = take(&ws, used, a_floats(BQ, BK, MR));
    w.own = take(&ws, used, (size_t)key_tile_floats(BK, hd, NR));
    return w;
}

static size_t head_ws_floats(int hd) {
    int MR, NR;
    gk_tile_dims(&MR, &NR);
    size_t used = 0;
    fwd_ws_carve(NULL, &used, hd, MR, NR);
    return used;
}

/* Forward for tile t of head h. ws holds head_ws_floats(hd) floats, 64-byte aligned; kv, when not
 * NULL, is row t->b's key tiles of this head's kv head (at: their places), else each key tile is
 * packed here. */
static void attention_forward_tile(float *out, float *lse, const float *q, const float *k, const float *v,
                                   const attn_shape *s, const q_tile *t, int h, float *ws, const float *kv,
                                   const tile_at *at) {
    const int hd = s->hd, g = h / (s->nh / s->nkv), offset = s->Lk - s->Lq;
    const int ldq = s->nh * hd, b = t->b, i0 = t->i0, nq = t->nq;
    int MR, NR;
    gk_tile_dims(&MR, &NR);
    size_t used = 0;
    const fwd_ws w = fwd_ws_carve(ws, &used, hd, MR, NR);
    float *O = w.O, *S = w.S, *m = w.m, *l = w.l, *qa = w.qa, *pa = w.pa, *own = w.own;
    float *mx = w.mx, *corr = w.corr, *sum = w.sum;
    int *lo = w.lo, *hi = w.hi;
    memset(O, 0, sizeof(float) * nq * hd);
    for (int i = 0; i < nq; i++) m[i] = -INFINITY, l[i] = 0;
    gk_tile_pack_a(qa, q + q_row(s, b, i0, h), ldq, 0, nq, hd);
    const int jend = offset + i0 + nq; /* keys jlo..jend-1 are visible to some row of the tile */
    for (int j0 = t->jlo; j0 < jend; j0 += BK) {
        const int nk = jend - j0 < BK ? jend - j0 : BK;
        const tile_at *ta = at ? &at[(size_t)b * s->Lk + j0] : NULL;
        const float *kp = own;
        int depth = nk; /* keys each packed v panel holds */
        if (ta && ta->off >= 0 && ta->n >= nk) {
            kp = kv + ta->off;
            depth = ta->n;
        } else {
            pack_key_tile(own, k, v, s, b, g, j0, nk, NR);
        }
        const float *vp = kp + key_tile_v(depth, hd, NR);
        gk_tile_product(nq, nk, hd, s->scale, qa, (long)MR * hd, kp, (long)NR * hd, 0.0f, S, BK);
        for (int i = 0; i < nq; i++) {
            const int p = offset + i0 + i;
            visible_range(p, doc_first(s, b, p), j0, nk, &lo[i], &hi[i]);
        }
        block_max(S, lo, hi, m, mx, nq);
        for (int i = 0; i < nq; i++) corr[i] = lo[i] < hi[i] ? gk_expf(m[i] - mx[i]) : 1.0f;
        block_exp(S, O, lo, hi, mx, corr, sum, nq, nk, hd);
        for (int i = 0; i < nq; i++)
            if (lo[i] < hi[i]) {
                l[i] = gk_rounded(l[i] * corr[i]) + sum[i];
                m[i] = mx[i];
            }
        gk_tile_pack_a(pa, S, BK, 0, nq, nk);
        gk_tile_product(nq, hd, nk, 1.0f, pa, (long)MR * nk, vp, (long)NR * depth, 1.0f, O, hd);
    }
    block_normalize(out + q_row(s, b, i0, h), (long)s->nh * hd, O, l, nq, hd);
    if (lse)
        for (int i = 0; i < nq; i++) lse[((size_t)b * s->nh + h) * s->Lq + i0 + i] = m[i] + logf(l[i]);
}

void gk_attention_forward(float *out, float *lse, const float *q, const float *k, const float *v,
                          const int32_t *doc_start, int B, int Lq, int Lk, int nh, int nkv, int hd, float scale) {
    attn_shape s = {B, Lq, Lk, nh, nkv, hd, scale, doc_start};
    int MR, NR;
    gk_tile_dims(&MR, &NR);
    q_tile *tiles = malloc(sizeof(q_tile) * ((size_t)B * Lq + 1));
    if (!tiles) {
        gk_set_error("attention forward: out of memory");
        return;
    }
    tile_table kt = {0};
    float *packs = NULL;
    /* Every key tile packed once, before the query tiles, when enough query tiles meet each: with
     * fewer, the extra pass and its barrier cost more than the repacking they save (2 threads,
     * 8 / 4 heads x 64: one row of 64 queries 102-119 -> 73-84 us without it; 256-512 queries
     * about even; 8 rows of 512, a training batch, 16.7-20.1 -> 15.0-15.8 ms with it). */
    if (Lq >= gk_attention_prepack_queries && tile_table_make(&kt, &s, 1, nkv, MR, NR) == 0)
        packs = gk_scratch(GK_SCRATCH_ATTN_TILES, (size_t)kt.total + 1);
    const int ntiles = query_tiles(tiles, &s);
    /* Larger tiles (later in their document) first, for balance; the order changes no result. */
    qsort(tiles, ntiles, sizeof(q_tile), by_cost_descending);
    const long units = (long)ntiles * nh;
    const size_t wsf = head_ws_floats(hd);
#pragma omp parallel num_threads(gk_threads())
    {
        float *ws = gk_scratch(GK_SCRATCH_ATTN_WS, wsf);
        if (packs) { /* every kv head's key tiles, each packed once */
#pragma omp for schedule(dynamic, 1)
            for (int bg = 0; bg < B * nkv; bg++) {
                const int b = bg / nkv, g = bg % nkv;
                float *dst = packs + kt.base[b] + (size_t)g * kt.size[b];
                for (int j = 0; j < Lk; j++) {
                    const tile_at *ta = &kt.at[(size_t)b * Lk + j];
                    if (ta->off >= 0) pack_key_tile(dst + ta->off, k, v, &s, b, g, j, ta->n, NR);
                }
            }
        }
#pragma omp for schedule(dynamic, 1)
        for (long u = 0; u < units; u++) {
            if (!ws) {
                gk_set_error("attention forward: out of memory");
                continue;
            }
            const q_tile *t = &tiles[u / nh];
            const int h = (int)(u % nh), g = h / (nh / nkv);
            attention_forward_tile(out, lse, q, k, v, &s, t, h, ws,
                                   packs ? packs + kt.base[t->b] + (size_t)g * kt.size[t->b] : NULL,
                                   packs ? kt.at : NULL);
        }
    }
    tile_table_free(&kt);
    free(tiles);
}

size_t gk_attention_head_ws_floats(int hd) { return head_ws_floats(hd); }

/* Forward of head h for the Lq <= BQ queries of one sequence (B = 1, one document), on the calling
 * thread: what gk_attention_forward computes for them, bit for bit. ws holds
 * gk_attention_head_ws_floats(hd) floats. Used by gk_attention_decode (attention_decode.c), so a
 * decode step gives the same bits either way. */
void gk_attention_forward_head(float *out, const float *q, const float *k, const float *v, int Lq, int Lk,
                               int nh, int nkv, int hd, float scale, int h, float *ws) {
    attn_shape s = {1, Lq, Lk, nh, nkv, hd, scale, NULL};
    q_tile t = {0, 0, Lq, 0, 0};
    attention_forward_tile(out, NULL, q, k, v, &s, &t, h, ws, NULL, NULL);
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
 * laid out per document, and a key tile meets only the queries of its own document. The group's
 * query tiles are packed first (qt: their places), each key tile once as it comes; per product
 * only the tile's probabilities and their gradient are packed. ws: bwd_ws_carve's floats. */
typedef struct {
    float *qpack, *dK, *dV, *S, *dP, *kb, *vb, *kn, *pta, *dsta, *dsa;
} bwd_ws;

static bwd_ws bwd_ws_carve(float *ws, size_t *used, long query_packs, int hd, int MR, int NR) {
    bwd_ws w;
    w.qpack = take(&ws, used, (size_t)query_packs); /* the group's query tiles */
    w.dK = take(&ws, used, (size_t)BK * hd);
    w.dV = take(&ws, used, (size_t)BK * hd);
    w.S = take(&ws, used, (size_t)BQ * BK);
    w.dP = take(&ws, used, (size_t)BQ * BK);
    w.kb = take(&ws, used, b_floats(hd, BK, NR)); /* k^T, v^T and k as B */
    w.vb = take(&ws, used, b_floats(hd, BK, NR));
    w.kn = take(&ws, used, b_floats(BK, hd, NR));
    w.pta = take(&ws, used, a_floats(BK, BQ, MR)); /* P^T, dS^T, dS as A */
    w.dsta = take(&ws, used, a_floats(BK, BQ, MR));
    w.dsa = take(&ws, used, a_floats(BQ, BK, MR));
    return w;
}

static void attention_backward_group(float *dq, float *dk, float *dv, const float *dout, const float *q,
                                     const float *k, const float *v, const float *lse_all, const float *D_all,
                                     const attn_shape *s, int b, int g, const tile_table *qt, float *ws) {
    const int hd = s->hd, group = s->nh / s->nkv, offset = s->Lk - s->Lq;
    const int ldq = s->nh * hd, ldk = s->nkv * hd;
    int MR, NR;
    gk_tile_dims(&MR, &NR);
    const long head_floats = qt->size[b];
    size_t used = 0;
    const bwd_ws w = bwd_ws_carve(ws, &used, group * head_floats, hd, MR, NR);
    float *qpack = w.qpack, *dK = w.dK, *dV = w.dV, *S = w.S, *dP = w.dP, *kb = w.kb, *vb = w.vb, *kn = w.kn;
    float *pta = w.pta, *dsta = w.dsta, *dsa = w.dsa;
    /* Each query tile of each head of the group: q and dout as A (hd deep), then as B (nq deep). */
    for (int h = g * group; h < (g + 1) * group; h++)
        for (int i0 = 0; i0 < s->Lq; i0++) {
            const tile_at *ta = &qt->at[(size_t)b * s->Lq + i0];
            if (ta->off < 0) continue;
            const int nq = ta->n;
            const query_packs d = query_tile(qpack + (size_t)(h - g * group) * head_floats + ta->off, nq, hd, MR, NR);
            gk_tile_pack_a(d.qa, q + q_row(s, b, i0, h), ldq, 0, nq, hd);
            gk_tile_pack_a(d.da, dout + q_row(s, b, i0, h), ldq, 0, nq, hd);
            gk_tile_pack_b(d.qb, q + q_row(s, b, i0, h), ldq, 0, nq, hd);
            gk_tile_pack_b(d.db, dout + q_row(s, b, i0, h), ldq, 0, nq, hd);
        }
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
        gk_tile_pack_b(kb, kt, ldk, 1, hd, nk);
        gk_tile_pack_b(vb, vt, ldk, 1, hd, nk);
        if (dq) gk_tile_pack_b(kn, kt, ldk, 0, nk, hd);
        memset(dK, 0, sizeof(float) * BK * hd);
        memset(dV, 0, sizeof(float) * BK * hd);
        for (int h = g * group; h < (g + 1) * group; h++) {
            for (int i0 = ifirst; i0 < qend; i0 += BQ) {
                const int nq = qend - i0 < BQ ? qend - i0 : BQ;
                const query_packs d =
                    query_tile(qpack + (size_t)(h - g * group) * head_floats + qt->at[(size_t)b * s->Lq + i0].off, nq,
                               hd, MR, NR);
                const float *qa = d.qa, *doa = d.da, *qb = d.qb, *dob = d.db;
                gk_tile_product(nq, nk, hd, s->scale, qa, (long)MR * hd, kb, (long)NR * hd, 0.0f, S, BK);
                gk_tile_product(nq, nk, hd, 1.0f, doa, (long)MR * hd, vb, (long)NR * hd, 0.0f, dP, BK);
                for (int i = 0; i < nq; i++) {
                    const size_t r = ((size_t)b * s->nh + h) * s->Lq + i0 + i;
                    const int p = offset + i0 + i;
                    int lo, hi;
                    visible_range(p, doc_first(s, b, p), j0, nk, &lo, &hi);
                    softmax_grad_row(S + i * BK, dP + i * BK, lse_all[r], D_all[r], s->scale, lo, hi, nk);
                }
                gk_tile_pack_a(pta, S, BK, 1, nk, nq);
                gk_tile_product(nk, hd, nq, 1.0f, pta, (long)MR * nq, dob, (long)NR * nq, 1.0f, dV, hd);
                gk_tile_pack_a(dsta, dP, BK, 1, nk, nq);
                gk_tile_product(nk, hd, nq, 1.0f, dsta, (long)MR * nq, qb, (long)NR * nq, 1.0f, dK, hd);
                if (dq) {
                    gk_tile_pack_a(dsa, dP, BK, 0, nq, nk);
                    gk_tile_product(nq, hd, nk, 1.0f, dsa, (long)MR * nk, kn, (long)NR * nk, 1.0f,
                                    dq + q_row(s, b, i0, h), ldq);
                }
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
    int MR, NR;
    gk_tile_dims(&MR, &NR);
    const size_t rows = (size_t)B * nh * Lq;
    tile_table qt;
    if (tile_table_make(&qt, &s, 0, 1, MR, NR) != 0) {
        tile_table_free(&qt);
        gk_set_error("attention backward: out of memory");
        return;
    }
    long most = 0;
    for (int b = 0; b < B; b++) most = qt.size[b] > most ? qt.size[b] : most;
    /* D = rowsum(dout * out) per (b, h, i), and lse when the forward did not save it. */
    float *D = gk_scratch(GK_SCRATCH_ATTN_ROWS, 2 * (rows ? rows : 1));
    if (!D) {
        tile_table_free(&qt);
        gk_set_error("attention backward: out of memory");
        return;
    }
    float *L = lse ? NULL : D + rows;
#pragma omp parallel for num_threads(gk_threads()) schedule(static)
    for (size_t r = 0; r < rows; r++) {
        int i = (int)(r % Lq), h = (int)(r / Lq % nh), b = (int)(r / Lq / nh);
        D[r] = gk_dot(out + q_row(&s, b, i, h), dout + q_row(&s, b, i, h), hd);
        if (L) L[r] = row_lse(q, k, &s, b, h, i);
    }
    size_t wsf = 0;
    bwd_ws_carve(NULL, &wsf, most * (nh / nkv), hd, MR, NR);
#pragma omp parallel num_threads(gk_threads())
    {
        float *ws = gk_scratch(GK_SCRATCH_ATTN_WS, wsf);
#pragma omp for schedule(dynamic, 1)
        for (int bg = 0; bg < B * nkv; bg++) {
            if (!ws) {
                gk_set_error("attention backward: out of memory");
                continue;
            }
            attention_backward_group(dq, dk, dv, dout, q, k, v, lse ? lse : L, D, &s, bg / nkv, bg % nkv, &qt, ws);
        }
    }
    tile_table_free(&qt);
}
