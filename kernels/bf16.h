/* bf16.h — bf16 <-> fp32 for the CPU kernel files: round to nearest even, NaN kept quiet. */
#ifndef GORSTAR_BF16_H
#define GORSTAR_BF16_H

#include <stdint.h>
#include <string.h>

static inline __attribute__((always_inline)) uint16_t gk_bf16_round(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    const uint32_t nan = (u >> 16) | 0x40;             /* NaN: keep it, quiet */
    const uint32_t rne = (u + 0x7fffu + ((u >> 16) & 1)) >> 16; /* ties to even; overflow to infinity */
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rne); /* a select: loops of it vectorize */
}

static inline __attribute__((always_inline)) float gk_bf16_widen(uint16_t h) {
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Element i of a GK_F32 or GK_BF16 array as the bf16 bits it stands for. */
static inline __attribute__((always_inline)) uint16_t gk_bf16_at(const void *p, int dt, size_t i) {
    return dt ? ((const uint16_t *)p)[i] : gk_bf16_round(((const float *)p)[i]);
}

#endif
