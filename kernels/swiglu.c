//go:build !rocm

/* swiglu.c — SwiGLU activation, residual add and scale: elementwise, forward beside backward. */
#include <math.h>

#include "cpu.h"

static inline float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

void gk_swiglu_forward(float *out, const float *gate, const float *up, size_t n) {
#pragma omp parallel for num_threads(gk_threads()) schedule(static) if (n > 16384)
    for (size_t i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = g * sigmoidf(g) * up[i];
    }
}

/* d/dg [g*s(g)] = s(g) * (1 + g*(1 - s(g))). */
void gk_swiglu_backward(float *dgate, float *dup, const float *dout, const float *gate, const float *up,
                        size_t n) {
#pragma omp parallel for num_threads(gk_threads()) schedule(static) if (n > 16384)
    for (size_t i = 0; i < n; i++) {
        float g = gate[i], s = sigmoidf(g), d = dout[i];
        if (dgate) dgate[i] += d * up[i] * s * (1.0f + g * (1.0f - s));
        if (dup) dup[i] += d * g * s;
    }
}

void gk_add(float *y, const float *x, size_t n) {
#pragma omp parallel for num_threads(gk_threads()) schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

void gk_scale(float *y, float a, size_t n) {
#pragma omp parallel for num_threads(gk_threads()) schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++) y[i] *= a;
}
