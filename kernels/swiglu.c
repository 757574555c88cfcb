/* swiglu.c — SwiGLU activation, residual add and scale: elementwise, forward beside backward. */
#include <math.h>

#include "bf16.h"
#include "cpu.h"

static inline float sigmoidf(float x) { return 1.0f / (1.0f + gk_expf(-x)); }

/* Elementwise loops run over fixed chunks, each a vectorized call. */
GK_VECTORIZED
static void swiglu_forward_chunk(float *out, const float *gate, const float *up, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = gate[i] * sigmoidf(gate[i]) * up[i];
}

GK_VECTORIZED
static void swiglu_forward_chunk_bf16(uint16_t *out, const float *gate, const float *up, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = gk_bf16_round(gate[i] * sigmoidf(gate[i]) * up[i]);
}

/* d/dg [g*s(g)] = s(g) * (1 + g*(1 - s(g))). */
GK_VECTORIZED
static void swiglu_backward_chunk(float *dgate, float *dup, const float *dout, const float *gate, const float *up,
                                  size_t n) {
    if (dgate)
        for (size_t i = 0; i < n; i++) {
            float g = gate[i], s = sigmoidf(g);
            dgate[i] = dout[i] * up[i] * s * (1.0f + g * (1.0f - s));
        }
    if (dup)
        for (size_t i = 0; i < n; i++) dup[i] = dout[i] * gate[i] * sigmoidf(gate[i]);
}

void gk_swiglu_forward(float *out, const float *gate, const float *up, size_t n) {
    const size_t chunks = (n + GK_CHUNK - 1) / GK_CHUNK;
    GK_PARALLEL_FOR(gk_threads_if(chunks > 4), for (size_t c = 0; c < chunks; c++) {
        size_t i = c * GK_CHUNK, m = n - i < GK_CHUNK ? n - i : GK_CHUNK;
        swiglu_forward_chunk(out + i, gate + i, up + i, m);
    });
}

/* gk_swiglu_forward with out stored as bf16: each element the fp32 forward's, rounded. */
void gk_swiglu_forward_bf16(uint16_t *out, const float *gate, const float *up, size_t n) {
    const size_t chunks = (n + GK_CHUNK - 1) / GK_CHUNK;
    GK_PARALLEL_FOR(gk_threads_if(chunks > 4), for (size_t c = 0; c < chunks; c++) {
        size_t i = c * GK_CHUNK, m = n - i < GK_CHUNK ? n - i : GK_CHUNK;
        swiglu_forward_chunk_bf16(out + i, gate + i, up + i, m);
    });
}

void gk_swiglu_backward(float *dgate, float *dup, const float *dout, const float *gate, const float *up,
                        size_t n) {
    const size_t chunks = (n + GK_CHUNK - 1) / GK_CHUNK;
    GK_PARALLEL_FOR(gk_threads_if(chunks > 4), for (size_t c = 0; c < chunks; c++) {
        size_t i = c * GK_CHUNK, m = n - i < GK_CHUNK ? n - i : GK_CHUNK;
        swiglu_backward_chunk(dgate ? dgate + i : NULL, dup ? dup + i : NULL, dout + i, gate + i, up + i, m);
    });
}

void gk_add(float *y, const float *x, size_t n) {
    GK_PARALLEL_FOR(gk_threads_if(n > 65536), for (size_t i = 0; i < n; i++) y[i] += x[i];);
}

void gk_scale(float *y, float a, size_t n) {
    GK_PARALLEL_FOR(gk_threads_if(n > 65536), for (size_t i = 0; i < n; i++) y[i] *= a;);
}
