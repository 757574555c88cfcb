/* bf16.c — conversion between fp32 and bf16 arrays (round to nearest even). Plain loops, cloned per
 * instruction set; vcvtneps2bf16 is not used because it flushes subnormals, which these keep. */
#include "bf16.h"
#include "cpu.h"
#include "gorstar_kernels.h"

GK_VECTORIZED static void from_f32_range(uint16_t *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = gk_bf16_round(src[i]);
}

GK_VECTORIZED static void to_f32_range(float *dst, const uint16_t *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = gk_bf16_widen(src[i]);
}

enum { CONVERT_PIECE = 1 << 16 };

void gk_bf16_from_f32(uint16_t *dst, const float *src, size_t n) {
    const size_t pieces = (n + CONVERT_PIECE - 1) / CONVERT_PIECE;
    GK_PARALLEL_FOR(gk_threads_if(pieces >= 4), for (size_t p = 0; p < pieces; p++) {
        const size_t at = p * CONVERT_PIECE;
        from_f32_range(dst + at, src + at, n - at < CONVERT_PIECE ? n - at : CONVERT_PIECE);
    });
}

void gk_bf16_to_f32(float *dst, const uint16_t *src, size_t n) {
    const size_t pieces = (n + CONVERT_PIECE - 1) / CONVERT_PIECE;
    GK_PARALLEL_FOR(gk_threads_if(pieces >= 4), for (size_t p = 0; p < pieces; p++) {
        const size_t at = p * CONVERT_PIECE;
        to_f32_range(dst + at, src + at, n - at < CONVERT_PIECE ? n - at : CONVERT_PIECE);
    });
}

GK_VECTORIZED static void round_f32_range(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = gk_bf16_widen(gk_bf16_round(x[i]));
}

void gk_bf16_round_f32(float *x, size_t n) {
    const size_t pieces = (n + CONVERT_PIECE - 1) / CONVERT_PIECE;
    GK_PARALLEL_FOR(gk_threads_if(pieces >= 4), for (size_t p = 0; p < pieces; p++) {
        const size_t at = p * CONVERT_PIECE;
        round_f32_range(x + at, n - at < CONVERT_PIECE ? n - at : CONVERT_PIECE);
    });
}
