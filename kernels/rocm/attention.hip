/* attention.hip — causal grouped-query attention, one wavefront (64 lanes) per query row (forward,
 * dq) or key row (dk, dv); each lane holds head dimensions lane, lane+64, ... (head_dim <= 256).
 * Online softmax in registers, so extra memory is O(L): the saved lse and D = rowsum(dout * out).
 * No atomics: every output row has one writer, so results are deterministic.
 *
 * Document masking (doc_start, see gorstar_kernels.h): a query row loops over its own document's
 * keys only, and a key row over the queries of its document (it stops at the first query whose
 * document begins after the key), so pairs across documents cost nothing. */
#include "common.h"

enum { MAXR = 4 }; /* head_dim <= 64 * MAXR */

struct attn_shape {
    int B, Lq, Lk, nh, nkv, hd;
    float scale;
    const int32_t *doc_start; /* [B, Lk] or NULL */
};

__device__ inline size_t q_row(const attn_shape &s, int b, int i, int h) {
    return (((size_t)b * s.Lq + i) * s.nh + h) * s.hd;
}
__device__ inline size_t k_row(const attn_shape &s, int b, int j, int g) {
    return (((size_t)b * s.Lk + j) * s.nkv + g) * s.hd;
}

/* The first key position of the document holding key position p of row b, clamped to [0, p]. */
__device__ inline int doc_first(const attn_shape &s, int b, int p) {
    if (!s.doc_start) return 0;
    const int d = s.doc_start[(size_t)b * s.Lk + p];
    return d < 0 ? 0 : (d > p ? p : d);
}

__device__ inline float wave_dot(const float *a, const float *x, int hd, int lane) {
    float p = 0;
    for (int r = 0; r < MAXR; r++) {
        const int d = lane + GK_WAVE * r;
        if (d < hd) p += a[r] * x[d];
    }
    return gk_wave_sum(p);
}

__global__ __launch_bounds__(GK_WAVE) void attention_forward_kernel(float *out, float *lse, const float *q,
                                                                     const float *k, const float *v, attn_shape s) {
    const int row = blockIdx.x, lane = threadIdx.x;
    const int i = row % s.Lq, h = row / s.Lq % s.nh, b = row / s.Lq / s.nh;
    const int g = h / (s.nh / s.nkv), last = s.Lk - s.Lq + i, first = doc_first(s, b, last);
    float qv[MAXR], acc[MAXR];
    const float *qi = q + q_row(s, b, i, h);
    for (int r = 0; r < MAXR; r++) {
        const int d = lane + GK_WAVE * r;
        qv[r] = d < s.hd ? qi[d] * s.scale : 0.0f;
        acc[r] = 0;
    }
    float m = -INFINITY, l = 0;
    for (int j = first; j <= last; j++) {
        const float sc = wave_dot(qv, k + k_row(s, b, j, g), s.hd, lane);
        const float mn = fmaxf(m, sc), corr = expf(m - mn), p = expf(sc - mn);
        const float *vj = v + k_row(s, b, j, g);
        l = l * corr + p;
        for (int r = 0; r < MAXR; r++) {
            const int d = lane + GK_WAVE * r;
            acc[r] = acc[r] * corr + (d < s.hd ? p * vj[d] : 0.0f);
        }
        m = mn;
    }
    float *oi = out + q_row(s, b, i, h);
    for (int r = 0; r < MAXR; r++) {
        const int d = lane + GK_WAVE * r;
        if (d < s.hd) oi[d] = acc[r] / l;
    }
    if (lse && lane == 0) lse[((size_t)b * s.nh + h) * s.Lq + i] = m + logf(l);
}

/* Per query row: D = dout . out, the lse (recomputed when not saved), and dq. */
__global__ __launch_bounds__(GK_WAVE) void attention_backward_q_kernel(float *dq, float *D_out, float *L_out,
                                                                       const float *dout, const float *q,
                                                                       const float *k, const float *v,
                                                                       const float *out, const float *lse,
                                                                       attn_shape s) {
    const int row = blockIdx.x, lane = threadIdx.x;
    const int i = row % s.Lq, h = row / s.Lq % s.nh, b = row / s.Lq / s.nh;
    const int g = h / (s.nh / s.nkv), last = s.Lk - s.Lq + i, first = doc_first(s, b, last);
    const size_t r_lse = ((size_t)b * s.nh + h) * s.Lq + i;
    float qv[MAXR], dov[MAXR], acc[MAXR];
    const float *qi = q + q_row(s, b, i, h), *doi = dout + q_row(s, b, i, h);
    for (int r = 0; r < MAXR; r++) {
        const int d = lane + GK_WAVE * r;
        qv[r] = d < s.hd ? qi[d] * s.scale : 0.0f;
        dov[r] = d < s.hd ? doi[d] : 0.0f;
        acc[r] = 0;
    }
    const float D = wave_dot(dov, out + q_row(s, b, i, h), s.hd, lane);
    float L;
    if (lse) {
        L = lse[r_lse];
    } else {
        float m = -INFINITY, l = 0;
        for (int j = first; j <= last; j++) {
            const float sc = wave_dot(qv, k + k_row(s, b, j, g), s.hd, lane);
            const float mn = fmaxf(m, sc);
            l = l * expf(m - mn) + expf(sc - mn);
            m = mn;
        }
        L = m + logf(l);
    }
    for (int j = first; j <= last; j++) {
        const float *kj = k + k_row(s, b, j, g);
        const float p = expf(wave_dot(qv, kj, s.hd, lane) - L);
        const float ds = p * (wave_dot(dov, v + k_row(s, b, j, g), s.hd, lane) - D) * s.scale;
        for (int r = 0; r < MAXR; r++) {
            const int d = lane + GK_WAVE * r;
            if (d < s.hd) acc[r] += ds * kj[d];
        }
    }
    if (dq) {
        float *dqi = dq + q_row(s, b, i, h);
        for (int r = 0; r < MAXR; r++) {
            const int d = lane + GK_WAVE * r;
            if (d < s.hd) dqi[d] += acc[r];
        }
    }
    if (lane == 0) {
        D_out[r_lse] = D;
        L_out[r_lse] = L;
    }
}

/* Per key row (b, kv head g, j): dk and dv over every query head of the group and every query
 * that sees key j: from j to the end of j's document (documents are contiguous, so the first query
 * whose document begins after j ends them). */
__global__ __launch_bounds__(GK_WAVE) void attention_backward_kv_kernel(float *dk, float *dv, const float *dout,
                                                                        const float *q, const float *k,
                                                                        const float *v, const float *D_all,
                                                                        const float *L_all, attn_shape s) {
    const int row = blockIdx.x, lane = threadIdx.x;
    const int j = row % s.Lk, g = row / s.Lk % s.nkv, b = row / s.Lk / s.nkv;
    const int group = s.nh / s.nkv, offset = s.Lk - s.Lq;
    float kv[MAXR], vv[MAXR], dka[MAXR], dva[MAXR];
    const float *kj = k + k_row(s, b, j, g), *vj = v + k_row(s, b, j, g);
    for (int r = 0; r < MAXR; r++) {
        const int d = lane + GK_WAVE * r;
        kv[r] = d < s.hd ? kj[d] * s.scale : 0.0f;
        vv[r] = d < s.hd ? vj[d] : 0.0f;
        dka[r] = dva[r] = 0;
    }
    const int ifirst = j - offset < 0 ? 0 : j - offset;
    for (int h = g * group; h < (g + 1) * group; h++) {
        for (int i = ifirst; i < s.Lq; i++) {
            if (doc_first(s, b, offset + i) > j) break;
            const size_t r_lse = ((size_t)b * s.nh + h) * s.Lq + i;
            const float *qi = q + q_row(s, b, i, h), *doi = dout + q_row(s, b, i, h);
            const float p = expf(wave_dot(kv, qi, s.hd, lane) - L_all[r_lse]);
            const float ds = p * (wave_dot(vv, doi, s.hd, lane) - D_all[r_lse]) * s.scale;
            for (int r = 0; r < MAXR; r++) {
                const int d = lane + GK_WAVE * r;
                if (d < s.hd) {
                    dka[r] += ds * qi[d];
                    dva[r] += p * doi[d];
                }
            }
        }
    }
    for (int r = 0; r < MAXR; r++) {
        const int d = lane + GK_WAVE * r;
        if (d < s.hd) {
            if (dk) dk[k_row(s, b, j, g) + d] += dka[r];
            if (dv) dv[k_row(s, b, j, g) + d] += dva[r];
        }
    }
}

static int check_head_dim(int hd) {
    if (hd > GK_WAVE * MAXR) {
        gk_rocm_check(hipErrorInvalidValue, "attention: head_dim above 256 on rocm");
        return 0;
    }
    return 1;
}

extern "C" {

void gk_attention_forward(float *out, float *lse, const float *q, const float *k, const float *v,
                          const int32_t *doc_start, int B, int Lq, int Lk, int nh, int nkv, int hd, float scale) {
    gk_rocm_bind();
    const attn_shape s = {B, Lq, Lk, nh, nkv, hd, scale, doc_start};
    const unsigned rows = (unsigned)B * nh * Lq;
    if (rows && check_head_dim(hd))
        GK_LAUNCH(attention_forward_kernel, dim3(rows), dim3(GK_WAVE), 0, out, lse, q, k, v, s);
}

void gk_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                           const float *k, const float *v, const float *out, const float *lse,
                           const int32_t *doc_start, int B, int Lq, int Lk, int nh, int nkv, int hd,
                           float scale) {
    gk_rocm_bind();
    const attn_shape s = {B, Lq, Lk, nh, nkv, hd, scale, doc_start};
    const unsigned rows = (unsigned)B * nh * Lq, krows = (unsigned)B * nkv * Lk;
    if (!rows || !check_head_dim(hd)) return;
    float *DL = NULL;
    if (hipMalloc(&DL, sizeof(float) * 2 * rows) != hipSuccess) {
        gk_rocm_check(hipErrorOutOfMemory, "attention backward workspace");
        return;
    }
    GK_LAUNCH(attention_backward_q_kernel, dim3(rows), dim3(GK_WAVE), 0, dq, DL, DL + rows, dout, q, k, v, out, lse, s);
    if (dk || dv)
        GK_LAUNCH(attention_backward_kv_kernel, dim3(krows), dim3(GK_WAVE), 0, dk, dv, dout, q, k, v, DL, DL + rows, s);
    gk_rocm_check(hipFree(DL), "hipFree");
}

} /* extern "C" */
