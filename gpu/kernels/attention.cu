/* attention.cu — causal grouped-query attention, one wave (GK_WAVE lanes: 32 on NVIDIA, 64 on AMD
 * CDNA) per query row (forward, dq) or key row (dk, dv); lane l holds head dimensions l, l + GK_WAVE,
 * ... (head_dim <= 256). Online softmax in registers, flash-style: the extra memory is O(L) (the
 * saved lse and D = rowsum(dout * out)), no L x L score matrix. Every output row has one writer, so
 * results are deterministic without atomics.
 *
 * Document masking (doc_start [B, Lk], may be NULL; see kernels/gorstar_kernels.h): a query row
 * loops over its own document's keys only, a key row over the queries of its document.
 * Shapes: q [B, Lq, nh, hd]; k, v [B, Lk, nkv, hd]; query i sits at key position Lk - Lq + i. */
#include "gk_compat.h"

#define ATTN_ARGS int B, int Lq, int Lk, int nh, int nkv, int hd, float scale, const gk_i32 *doc_start

__device__ inline gk_size q_row(int Lq, int nh, int hd, int b, int i, int h) {
    return (((gk_size)b * Lq + i) * nh + h) * hd;
}
__device__ inline gk_size k_row(int Lk, int nkv, int hd, int b, int j, int g) {
    return (((gk_size)b * Lk + j) * nkv + g) * hd;
}

/* The first key position of the document holding key position p of row b, clamped to [0, p]. */
__device__ inline int doc_first(const gk_i32 *doc_start, int Lk, int b, int p) {
    if (!doc_start) return 0;
    const int d = doc_start[(gk_size)b * Lk + p];
    return d < 0 ? 0 : (d > p ? p : d);
}

__device__ inline float wave_dot(const float *a, const float *x, int hd, int lane) {
    float p = 0;
    for (int r = 0; r < GK_MAXR; r++) {
        const int d = lane + GK_WAVE * r;
        if (d < hd) p += a[r] * x[d];
    }
    return gk_wave_sum(p);
}

/* Grid: B * nh * Lq blocks of GK_WAVE threads. */
GK_KERNEL __launch_bounds__(GK_WAVE) void gk_attention_forward(float *out, float *lse, const float *q, const float *k,
                                                               const float *v, ATTN_ARGS) {
    const int row = blockIdx.x, lane = threadIdx.x;
    const int i = row % Lq, h = row / Lq % nh, b = row / Lq / nh;
    const int g = h / (nh / nkv), last = Lk - Lq + i, first = doc_first(doc_start, Lk, b, last);
    float qv[GK_MAXR], acc[GK_MAXR];
    const float *qi = q + q_row(Lq, nh, hd, b, i, h);
    for (int r = 0; r < GK_MAXR; r++) {
        const int d = lane + GK_WAVE * r;
        qv[r] = d < hd ? qi[d] * scale : 0.0f;
        acc[r] = 0;
    }
    float m = -GK_INF, l = 0;
    for (int j = first; j <= last; j++) {
        const float sc = wave_dot(qv, k + k_row(Lk, nkv, hd, b, j, g), hd, lane);
        const float mn = fmaxf(m, sc), corr = expf(m - mn), p = expf(sc - mn);
        const float *vj = v + k_row(Lk, nkv, hd, b, j, g);
        l = l * corr + p;
        for (int r = 0; r < GK_MAXR; r++) {
            const int d = lane + GK_WAVE * r;
            acc[r] = acc[r] * corr + (d < hd ? p * vj[d] : 0.0f);
        }
        m = mn;
    }
    float *oi = out + q_row(Lq, nh, hd, b, i, h);
    for (int r = 0; r < GK_MAXR; r++) {
        const int d = lane + GK_WAVE * r;
        if (d < hd) oi[d] = acc[r] / l;
    }
    if (lse && lane == 0) lse[((gk_size)b * nh + h) * Lq + i] = m + logf(l);
}

/* Per query row: D = dout . out, the lse (recomputed when not saved) into L_out, and dq (added).
 * Grid: B * nh * Lq blocks of GK_WAVE threads. */
GK_KERNEL __launch_bounds__(GK_WAVE) void gk_attention_backward_q(float *dq, float *D_out, float *L_out,
                                                                  const float *dout, const float *q, const float *k,
                                                                  const float *v, const float *out, const float *lse,
                                                                  ATTN_ARGS) {
    const int row = blockIdx.x, lane = threadIdx.x;
    const int i = row % Lq, h = row / Lq % nh, b = row / Lq / nh;
    const int g = h / (nh / nkv), last = Lk - Lq + i, first = doc_first(doc_start, Lk, b, last);
    const gk_size r_lse = ((gk_size)b * nh + h) * Lq + i;
    float qv[GK_MAXR], dov[GK_MAXR], acc[GK_MAXR];
    const float *qi = q + q_row(Lq, nh, hd, b, i, h), *doi = dout + q_row(Lq, nh, hd, b, i, h);
    for (int r = 0; r < GK_MAXR; r++) {
        const int d = lane + GK_WAVE * r;
        qv[r] = d < hd ? qi[d] * scale : 0.0f;
        dov[r] = d < hd ? doi[d] : 0.0f;
        acc[r] = 0;
    }
    const float D = wave_dot(dov, out + q_row(Lq, nh, hd, b, i, h), hd, lane);
    float L;
    if (lse) {
        L = lse[r_lse];
    } else {
        float m = -GK_INF, l = 0;
        for (int j = first; j <= last; j++) {
            const float sc = wave_dot(qv, k + k_row(Lk, nkv, hd, b, j, g), hd, lane);
            const float mn = fmaxf(m, sc);
            l = l * expf(m - mn) + expf(sc - mn);
            m = mn;
        }
        L = m + logf(l);
    }
    for (int j = first; j <= last; j++) {
        const float *kj = k + k_row(Lk, nkv, hd, b, j, g);
        const float p = expf(wave_dot(qv, kj, hd, lane) - L);
        const float ds = p * (wave_dot(dov, v + k_row(Lk, nkv, hd, b, j, g), hd, lane) - D) * scale;
        for (int r = 0; r < GK_MAXR; r++) {
            const int d = lane + GK_WAVE * r;
            if (d < hd) acc[r] += ds * kj[d];
        }
    }
    if (dq) {
        float *dqi = dq + q_row(Lq, nh, hd, b, i, h);
        for (int r = 0; r < GK_MAXR; r++) {
            const int d = lane + GK_WAVE * r;
            if (d < hd) dqi[d] += acc[r];
        }
    }
    if (lane == 0) {
        D_out[r_lse] = D;
        L_out[r_lse] = L;
    }
}

/* Per key row (b, kv head g, j): dk and dv (added) over every query head of the group and every
 * query that sees key j, from j to the end of j's document. Grid: B * nkv * Lk blocks. */
GK_KERNEL __launch_bounds__(GK_WAVE) void gk_attention_backward_kv(float *dk, float *dv, const float *dout,
                                                                   const float *q, const float *k, const float *v,
                                                                   const float *D_all, const float *L_all, ATTN_ARGS) {
    const int row = blockIdx.x, lane = threadIdx.x;
    const int j = row % Lk, g = row / Lk % nkv, b = row / Lk / nkv;
    const int group = nh / nkv, offset = Lk - Lq;
    float kv[GK_MAXR], vv[GK_MAXR], dka[GK_MAXR], dva[GK_MAXR];
    const float *kj = k + k_row(Lk, nkv, hd, b, j, g), *vj = v + k_row(Lk, nkv, hd, b, j, g);
    for (int r = 0; r < GK_MAXR; r++) {
        const int d = lane + GK_WAVE * r;
        kv[r] = d < hd ? kj[d] * scale : 0.0f;
        vv[r] = d < hd ? vj[d] : 0.0f;
        dka[r] = dva[r] = 0;
    }
    const int ifirst = j - offset < 0 ? 0 : j - offset;
    for (int h = g * group; h < (g + 1) * group; h++) {
        for (int i = ifirst; i < Lq; i++) {
            if (doc_first(doc_start, Lk, b, offset + i) > j) break;
            const gk_size r_lse = ((gk_size)b * nh + h) * Lq + i;
            const float *qi = q + q_row(Lq, nh, hd, b, i, h), *doi = dout + q_row(Lq, nh, hd, b, i, h);
            const float p = expf(wave_dot(kv, qi, hd, lane) - L_all[r_lse]);
            const float ds = p * (wave_dot(vv, doi, hd, lane) - D_all[r_lse]) * scale;
            for (int r = 0; r < GK_MAXR; r++) {
                const int d = lane + GK_WAVE * r;
                if (d < hd) {
                    dka[r] += ds * qi[d];
                    dva[r] += p * doi[d];
                }
            }
        }
    }
    for (int r = 0; r < GK_MAXR; r++) {
        const int d = lane + GK_WAVE * r;
        if (d < hd) {
            if (dk) dk[k_row(Lk, nkv, hd, b, j, g) + d] += dka[r];
            if (dv) dv[k_row(Lk, nkv, hd, b, j, g) + d] += dva[r];
        }
    }
}

/* One decode step: row lens[s]-1 of each cache := the new key and value (grid nseq * nkv). kc and
 * vc are device arrays of nseq cache pointers, each cache [capacity, nkv, hd]. */
GK_KERNEL void gk_attention_decode_append(float *const *kc, float *const *vc, const gk_i32 *lens, const float *k_new,
                                          const float *v_new, int nkv, int hd) {
    const int s = blockIdx.x / nkv, g = blockIdx.x % nkv;
    const gk_size dst = ((gk_size)(lens[s] - 1) * nkv + g) * hd, src = ((gk_size)s * nkv + g) * hd;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        if (k_new) kc[s][dst + d] = k_new[src + d];
        if (v_new) vc[s][dst + d] = v_new[src + d];
    }
}

/* The query of sequence s at position lens[s]-1 over every row of its cache: grid nseq * nh
 * blocks of GK_WAVE threads. q and out are [nseq, nh, hd]. */
GK_KERNEL __launch_bounds__(GK_WAVE) void gk_attention_decode(float *out, const float *q, float *const *kc,
                                                              float *const *vc, const gk_i32 *lens, int nh, int nkv,
                                                              int hd, float scale) {
    const int s = blockIdx.x / nh, h = blockIdx.x % nh, lane = threadIdx.x;
    const int g = h / (nh / nkv), len = lens[s], ld = nkv * hd;
    const float *qi = q + ((gk_size)s * nh + h) * hd, *k = kc[s] + g * hd, *v = vc[s] + g * hd;
    float qv[GK_MAXR], acc[GK_MAXR];
    for (int r = 0; r < GK_MAXR; r++) {
        const int d = lane + GK_WAVE * r;
        qv[r] = d < hd ? qi[d] * scale : 0.0f;
        acc[r] = 0;
    }
    float m = -GK_INF, l = 0;
    for (int j = 0; j < len; j++) {
        const float *kj = k + (gk_size)j * ld, *vj = v + (gk_size)j * ld;
        const float sc = wave_dot(qv, kj, hd, lane);
        const float mn = fmaxf(m, sc), corr = expf(m - mn), e = expf(sc - mn);
        l = l * corr + e;
        for (int r = 0; r < GK_MAXR; r++) {
            const int d = lane + GK_WAVE * r;
            acc[r] = acc[r] * corr + (d < hd ? e * vj[d] : 0.0f);
        }
        m = mn;
    }
    float *oi = out + ((gk_size)s * nh + h) * hd;
    for (int r = 0; r < GK_MAXR; r++) {
        const int d = lane + GK_WAVE * r;
        if (d < hd) oi[d] = acc[r] / l;
    }
}
