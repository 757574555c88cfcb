/* decode_layer.c — one decoder layer of a bf16 decode step in one parallel region.
 *
 * A decode step of a few sequences runs each of a layer's products in a few microseconds; one
 * OpenMP region per product, with the small operations between them on the calling thread, left the
 * second thread waiting (spinning, then asleep and woken again) for half of the products' time.
 * Here the team enters once per layer and meets at six barriers: each thread norms and packs the
 * layer's input itself (a few thousand floats), takes a static range of the products' column
 * panels, and adds the residual over its own columns; the attention's units are shared out as
 * gk_attention_decode shares them. Every element sees the same kernel calls as through the
 * per-operation path (gk_rmsnorm_forward, gk_linear_forward_bf16_packed_multi, gk_rope_apply,
 * gk_attention_decode, gk_add, gk_swiglu_forward), so the bits are the same. */
#include "cpu.h"

int gk_bf16_decode_products_ready(int T, int in, int n, const uint32_t *const *Wps, const int *outs);
void gk_bf16_decode_products_team(int n, float *const *ys, const float *A, const uint32_t *const *Wps,
                                  const float *const *bs, int T, int in, const int *outs);
void gk_bf16_decode_products_cols(int n, const int *outs, int i, int *c0, int *c1);
void gk_attention_decode_team(float *out, const float *q, const float *k_new, const float *v_new,
                              void *const *k_caches, void *const *v_caches, void *const *k_tiles,
                              const int32_t *kv_lens, const int32_t *shared, int nseq, int nh, int nkv, int hd,
                              float scale, int kv_dt);

/* y[t][c0:c1] += x[t][c0:c1] over T rows of ld floats: gk_add's sums. */
static void add_cols(float *y, const float *x, int T, int ld, int c0, int c1) {
    for (int t = 0; t < T; t++)
        for (int j = c0; j < c1; j++) y[(size_t)t * ld + j] += x[(size_t)t * ld + j];
}

static void layer_team(const gk_decode_layer_args *a) {
    const int T = a->T, C = a->C, I = a->I, nh = a->nh, nkv = a->nkv, hd = a->hd, Q = nh * hd, KV = nkv * hd;
    float *ws = gk_scratch(GK_SCRATCH_DECODE, (size_t)T * (C > I ? C : I));
    int c0, c1;
    /* The input's norm (each thread its own copy), then q, k and v. */
    if (ws) gk_rmsnorm_forward(ws, NULL, a->x, a->in_norm, T, C, a->eps);
    {
        float *const ys[3] = {a->q_raw ? a->q_raw : a->q, a->k_raw ? a->k_raw : a->k, a->v};
        const uint32_t *const wps[3] = {a->wq, a->wk, a->wv};
        const float *const bs[3] = {a->bq, a->bk, a->bv};
        const int outs[3] = {Q, KV, KV};
        if (ws) gk_bf16_decode_products_team(3, ys, ws, wps, bs, T, C, outs);
    }
#pragma omp barrier
    /* q_norm, k_norm and RoPE, rows shared out. */
#pragma omp for schedule(static)
    for (int t = 0; t < T; t++) {
        if (a->q_raw) {
            gk_rmsnorm_forward(a->q + (size_t)t * Q, NULL, a->q_raw + (size_t)t * Q, a->q_norm, nh, hd, a->eps);
            gk_rmsnorm_forward(a->k + (size_t)t * KV, NULL, a->k_raw + (size_t)t * KV, a->k_norm, nkv, hd, a->eps);
        }
        gk_rope_apply(a->q + (size_t)t * Q, a->rope + (size_t)t * hd, 1, nh, hd);
        gk_rope_apply(a->k + (size_t)t * KV, a->rope + (size_t)t * hd, 1, nkv, hd);
    }
    /* The new keys and values into the caches, attention (ends at a barrier). */
    gk_attention_decode_team(a->att, a->q, a->k, a->v, a->k_caches, a->v_caches, a->k_tiles, a->kv_lens, a->shared, T,
                             nh, nkv, hd, a->scale, a->kv_dt);
    /* o, and the residual over this thread's columns. */
    {
        float *const ys[1] = {a->mid};
        const uint32_t *const wps[1] = {a->wo};
        const float *const bs[1] = {a->bo};
        const int outs[1] = {C};
        gk_bf16_decode_products_team(1, ys, a->att, wps, bs, T, Q, outs);
        gk_bf16_decode_products_cols(1, outs, 0, &c0, &c1);
        add_cols(a->mid, a->x, T, C, c0, c1);
    }
#pragma omp barrier
    /* The second norm (each thread its own copy), gate and up. */
    if (ws) gk_rmsnorm_forward(ws, NULL, a->mid, a->post_norm, T, C, a->eps);
    {
        float *const ys[2] = {a->gate, a->up};
        const uint32_t *const wps[2] = {a->wgate, a->wup};
        const float *const bs[2] = {NULL, NULL};
        const int outs[2] = {I, I};
        if (ws) gk_bf16_decode_products_team(2, ys, ws, wps, bs, T, C, outs);
    }
#pragma omp barrier
    /* SwiGLU (each thread its own copy), down, and the residual over this thread's columns. */
    if (ws) gk_swiglu_forward(ws, a->gate, a->up, (size_t)T * I);
    {
        float *const ys[1] = {a->x};
        const uint32_t *const wps[1] = {a->wdown};
        const float *const bs[1] = {NULL};
        const int outs[1] = {C};
        if (ws) gk_bf16_decode_products_team(1, ys, ws, wps, bs, T, I, outs);
        gk_bf16_decode_products_cols(1, outs, 0, &c0, &c1);
        add_cols(a->x, a->mid, T, C, c0, c1);
    }
    if (!ws) gk_set_error("decode layer: out of memory");
}

/* Multiply-adds of a layer below which it runs on the calling thread (tests set 0). */
long gk_decode_layer_serial_work = 4 * GK_SERIAL_WORK;

int gk_decode_layer_bf16(const gk_decode_layer_args *a) {
    const int T = a->T, C = a->C, I = a->I, Q = a->nh * a->hd, KV = a->nkv * a->hd;
    const uint32_t *const qkv[3] = {a->wq, a->wk, a->wv}, *const gu[2] = {a->wgate, a->wup};
    const int qkv_outs[3] = {Q, KV, KV}, c_out[1] = {C}, i_outs[2] = {I, I};
    if (!gk_bf16_decode_products_ready(T, C, 3, qkv, qkv_outs) ||
        !gk_bf16_decode_products_ready(T, Q, 1, &a->wo, c_out) || !gk_bf16_decode_products_ready(T, C, 2, gu, i_outs) ||
        !gk_bf16_decode_products_ready(T, I, 1, &a->wdown, c_out))
        return -1;
    /* A layer of a few rows of a small model (`small` at one row: 3 M multiply-adds) runs on the
     * calling thread: six barriers cost more than a second thread saves there, and much more on a
     * busy machine, where the partner thread is often off its core (GK_SERIAL_WORK). */
    const long work = (long)T * ((long)C * (Q + 2 * KV) + (long)Q * C + 3L * C * I);
    GK_PARALLEL(work < gk_decode_layer_serial_work ? 1 : gk_threads(), layer_team(a));
    return 0;
}
