/* common.h — what the HIP kernel files share: device selection per host thread, error recording,
 * launch and reduction helpers. */
#pragma once

#include <hip/hip_runtime.h>
#include <stddef.h>

#include "../gorstar_kernels.h"

/* Records a failed HIP call in gk_last_error (the first failure wins until gk_init clears it). */
void gk_rocm_check(hipError_t err, const char *what);

/* hipSetDevice is per host thread and Go calls in from any OS thread, so every entry point makes
 * sure the calling thread is on the device gk_init chose. */
void gk_rocm_bind(void);

#define GK_LAUNCH(kernel, grid, block, shmem, ...)                                   \
    do {                                                                             \
        hipLaunchKernelGGL(kernel, grid, block, shmem, 0, __VA_ARGS__);              \
        gk_rocm_check(hipGetLastError(), #kernel);                                   \
    } while (0)

static inline unsigned gk_blocks(size_t n, unsigned threads) { return (unsigned)((n + threads - 1) / threads); }

/* AMD GPUs of the targets built here (gfx90a, gfx942) run wavefronts of 64 lanes. */
#define GK_WAVE 64

__device__ inline float gk_wave_sum(float v) {
    for (int o = GK_WAVE / 2; o > 0; o /= 2) v += __shfl_xor(v, o, GK_WAVE);
    return v;
}

__device__ inline float gk_wave_max(float v) {
    for (int o = GK_WAVE / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor(v, o, GK_WAVE));
    return v;
}

/* Tree reductions over a block of blockDim.x (a power of two, at most 1024) threads; every thread
 * gets the result. The order is fixed, so results are deterministic. */
template <typename T>
__device__ inline T gk_block_sum(T v, T *shared) {
    shared[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
        __syncthreads();
    }
    T r = shared[0];
    __syncthreads();
    return r;
}

__device__ inline float gk_block_max(float v, float *shared) {
    shared[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) shared[threadIdx.x] = fmaxf(shared[threadIdx.x], shared[threadIdx.x + s]);
        __syncthreads();
    }
    float r = shared[0];
    __syncthreads();
    return r;
}
