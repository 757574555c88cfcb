/* bf16.c — conversion between fp32 and bf16 arrays (round to nearest even), and the linear layer on
 * bf16 inputs. Plain loops, cloned per instruction set; vcvtneps2bf16 is not used because it flushes
 * subnormals, which these keep. */
#include <string.h>

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

/* gk_linear_forward_bf16 and gk_linear_backward_bf16 with x stored as bf16 (a trainer's saved
 * activation): the same products, and the same bits as an fp32 x holding these values, since the
 * GEMM rounds an fp32 operand to exactly these bf16 values as it packs it. */
void gk_linear_forward_bf16_in(float *y, const uint16_t *x, const uint16_t *W, const float *b, int T, int in, int out) {
    if (b)
        GK_PARALLEL_FOR(gk_threads_if((long)T * out > 65536),
                        for (int t = 0; t < T; t++) memcpy(y + (size_t)t * out, b, sizeof(float) * out););
    gk_gemm_bf16(0, 1, T, out, in, 1.0f, x, GK_BF16, in, W, GK_BF16, in, b ? 1.0f : 0.0f, y, GK_F32, out);
}

void gk_linear_backward_bf16_in(float *dx, float *dW, float *db, const float *dy, const uint16_t *x, const uint16_t *W,
                                int T, int in, int out) {
    if (dx) gk_gemm_bf16(0, 0, T, in, out, 1.0f, dy, GK_F32, out, W, GK_BF16, in, 1.0f, dx, GK_F32, in);
    if (dW) gk_gemm_bf16(1, 0, out, in, T, 1.0f, dy, GK_F32, out, x, GK_BF16, in, 1.0f, dW, GK_F32, in);
    if (db) gk_linear_backward(NULL, NULL, db, dy, NULL, NULL, T, in, out);
}
