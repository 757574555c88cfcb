/* attention_decode.hip — one decode step of attention for many sequences, each with its own KV
 * cache: one wavefront per (sequence, query head), online softmax in registers as in
 * attention.hip (head_dim <= 256). The host arrays of cache pointers and lengths are copied to the
 * device for the launch. */
#include "common.h"

enum { DECODE_MAXR = 4 }; /* head_dim <= 64 * DECODE_MAXR */

/* Row kv_lens[s]-1 of each cache := the new key and value (one block per (sequence, kv head)). */
__global__ void attention_decode_append_kernel(float *const *kc, float *const *vc, const int32_t *lens,
                                               const float *k_new, const float *v_new, int nkv, int hd) {
    const int s = blockIdx.x / nkv, g = blockIdx.x % nkv;
    const size_t dst = ((size_t)(lens[s] - 1) * nkv + g) * hd, src = ((size_t)s * nkv + g) * hd;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        if (k_new) kc[s][dst + d] = k_new[src + d];
        if (v_new) vc[s][dst + d] = v_new[src + d];
    }
}

__global__ __launch_bounds__(GK_WAVE) void attention_decode_kernel(float *out, const float *q, float *const *kc,
                                                                    float *const *vc, const int32_t *lens,
                                                                    int nh, int nkv, int hd, float scale) {
    const int s = blockIdx.x / nh, h = blockIdx.x % nh, lane = threadIdx.x;
    const int g = h / (nh / nkv), len = lens[s], ld = nkv * hd;
    const float *qi = q + ((size_t)s * nh + h) * hd, *k = kc[s] + g * hd, *v = vc[s] + g * hd;
    float qv[DECODE_MAXR], acc[DECODE_MAXR];
    for (int r = 0; r < DECODE_MAXR; r++) {
        const int d = lane + GK_WAVE * r;
        qv[r] = d < hd ? qi[d] * scale : 0.0f;
        acc[r] = 0;
    }
    float m = -INFINITY, l = 0;
    for (int j = 0; j < len; j++) {
        const float *kj = k + (size_t)j * ld, *vj = v + (size_t)j * ld;
        float p = 0;
        for (int r = 0; r < DECODE_MAXR; r++) {
            const int d = lane + GK_WAVE * r;
            if (d < hd) p += qv[r] * kj[d];
        }
        const float sc = gk_wave_sum(p);
        const float mn = fmaxf(m, sc), corr = expf(m - mn), e = expf(sc - mn);
        l = l * corr + e;
        for (int r = 0; r < DECODE_MAXR; r++) {
            const int d = lane + GK_WAVE * r;
            acc[r] = acc[r] * corr + (d < hd ? e * vj[d] : 0.0f);
        }
        m = mn;
    }
    float *oi = out + ((size_t)s * nh + h) * hd;
    for (int r = 0; r < DECODE_MAXR; r++) {
        const int d = lane + GK_WAVE * r;
        if (d < hd) oi[d] = acc[r] / l;
    }
}

/* tiles[p / 8][i][p % 8] = keys[p][i] for rows from..to-1: one block per row. */
__global__ void pack_key_tiles_kernel(float *tiles, const float *keys, int from, int ld) {
    const size_t p = (size_t)from + blockIdx.x;
    for (int i = threadIdx.x; i < ld; i += blockDim.x) tiles[p / 8 * 8 * ld + (size_t)i * 8 + p % 8] = keys[p * ld + i];
}

extern "C" void gk_pack_key_tiles(float *tiles, const float *keys, int from, int to, int ld) {
    gk_rocm_bind();
    if (to > from) GK_LAUNCH(pack_key_tiles_kernel, dim3((unsigned)(to - from)), dim3(GK_WAVE), 0, tiles, keys, from, ld);
}

extern "C" void gk_attention_decode(float *out, const float *q, const float *k_new, const float *v_new,
                                    float *const *k_caches, float *const *v_caches, float *const *k_tiles,
                                    const int32_t *kv_lens, const int32_t *shared, int nseq, int nh, int nkv, int hd,
                                    float scale) {
    /* One wavefront per (sequence, query head): each reads its own cache rows, keys included. */
    (void)shared, (void)k_tiles;
    gk_rocm_bind();
    if (nseq <= 0) return;
    if (hd > GK_WAVE * DECODE_MAXR) {
        gk_rocm_check(hipErrorInvalidValue, "attention decode: head_dim above 256 on rocm");
        return;
    }
    /* [k pointers | v pointers | lengths] in one device buffer. */
    const size_t pbytes = sizeof(float *) * (size_t)nseq, lbytes = sizeof(int32_t) * (size_t)nseq;
    char *dev = NULL;
    if (hipMalloc((void **)&dev, 2 * pbytes + lbytes) != hipSuccess) {
        gk_rocm_check(hipErrorOutOfMemory, "attention decode pointer table");
        return;
    }
    gk_rocm_check(hipMemcpy(dev, k_caches, pbytes, hipMemcpyHostToDevice), "hipMemcpy");
    gk_rocm_check(hipMemcpy(dev + pbytes, v_caches, pbytes, hipMemcpyHostToDevice), "hipMemcpy");
    gk_rocm_check(hipMemcpy(dev + 2 * pbytes, kv_lens, lbytes, hipMemcpyHostToDevice), "hipMemcpy");
    float *const *kc = (float *const *)dev, *const *vc = (float *const *)(dev + pbytes);
    const int32_t *lens = (const int32_t *)(dev + 2 * pbytes);
    if (k_new || v_new)
        GK_LAUNCH(attention_decode_append_kernel, dim3((unsigned)nseq * nkv), dim3(GK_WAVE), 0, kc, vc, lens, k_new,
                  v_new, nkv, hd);
    GK_LAUNCH(attention_decode_kernel, dim3((unsigned)nseq * nh), dim3(GK_WAVE), 0, out, q, kc, vc, lens, nh, nkv, hd,
              scale);
    gk_rocm_check(hipFree(dev), "hipFree");
}
