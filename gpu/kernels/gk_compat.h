/* gk_compat.h — what makes one kernel source both HIP and CUDA. The kernels use only the subset
 * the two share (__global__, __shared__, __syncthreads, threadIdx/blockIdx/blockDim, float math)
 * and this header's names for the rest: the wavefront width and its shuffle, infinity, fixed-width
 * integers, and bfloat16 as raw 16-bit values (no vendor bf16 type: their headers differ).
 *
 * Compiled by NVRTC or hipRTC at run time (gpu/rtc.go passes -DGK_WAVE=32 or 64), or offline by
 * nvcc / hipcc (-x cu / -x hip) in the build tests. */
#ifndef GK_COMPAT_H
#define GK_COMPAT_H

#if defined(__HIPCC_RTC__) || defined(__HIP__) || defined(__HIP_PLATFORM_AMD__)
#define GK_HIP 1
#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif
#endif

/* Threads that run in lockstep and exchange registers with a shuffle: 64 on AMD CDNA (gfx9),
 * 32 on NVIDIA (and on AMD RDNA unless built with -mwavefrontsize64). */
#ifndef GK_WAVE
#ifdef GK_HIP
#define GK_WAVE 64
#else
#define GK_WAVE 32
#endif
#endif

#ifdef GK_HIP
#define GK_SHFL_XOR(v, o) __shfl_xor((v), (o), GK_WAVE)
#else
#define GK_SHFL_XOR(v, o) __shfl_xor_sync(0xffffffffu, (v), (o), GK_WAVE)
#endif

#define GK_KERNEL extern "C" __global__
#define GK_INF __int_as_float(0x7f800000)

typedef int gk_i32;
typedef unsigned int gk_u32;
typedef unsigned short gk_u16; /* a bfloat16: the top half of a float32's bits */
typedef unsigned long long gk_size;

/* Largest head dimension the attention kernels take: each lane holds GK_MAXR dimensions. */
#define GK_MAXR (256 / GK_WAVE)

__device__ inline float gk_bf16_to_f32(gk_u16 h) { return __uint_as_float((gk_u32)h << 16); }

/* Round to the nearest bfloat16, ties to even; NaN stays NaN (quiet), as gk_bf16_from_f32 on the CPU. */
__device__ inline gk_u16 gk_f32_to_bf16(float f) {
    gk_u32 b = __float_as_uint(f);
    if ((b & 0x7fffffffu) > 0x7f800000u) return (gk_u16)((b >> 16) | 0x40u);
    b += 0x7fffu + ((b >> 16) & 1u);
    return (gk_u16)(b >> 16);
}

/* Loads and stores of float32 or bfloat16 elements as float (the GEMM's operand types). */
__device__ inline float gk_ld(const float *p) { return *p; }
__device__ inline float gk_ld(const gk_u16 *p) { return gk_bf16_to_f32(*p); }
__device__ inline void gk_st(float *p, float v) { *p = v; }
__device__ inline void gk_st(gk_u16 *p, float v) { *p = gk_f32_to_bf16(v); }

__device__ inline float gk_wave_sum(float v) {
    for (int o = GK_WAVE / 2; o > 0; o /= 2) v += GK_SHFL_XOR(v, o);
    return v;
}

/* Tree reductions over a block of blockDim.x threads (a power of two, at most 1024); every thread
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

/* The global index of this thread in a 1-D launch. */
__device__ inline gk_size gk_index(void) { return (gk_size)blockIdx.x * blockDim.x + threadIdx.x; }

#endif
