/* emul.h — runs the kernels of gpu/kernels/*.cu on the CPU, for the tests of a machine without a
 * GPU: each block's threads are OS threads (so __syncthreads is a real barrier), blocks run one
 * after another (so __shared__ arrays can be static), a wave's shuffle goes through a shared
 * array between two barriers. Compiled with g++ -std=c++20 -include emul.h; slow, small shapes only. */
#pragma once
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>

struct gk_dim3 {
    unsigned x, y, z;
};
extern thread_local gk_dim3 threadIdx, blockIdx;
extern gk_dim3 blockDim;
extern std::barrier<> *gk_emul_barrier;

#define __global__
#define __device__
#define __shared__ static
#define __launch_bounds__(x)

inline void __syncthreads() { gk_emul_barrier->arrive_and_wait(); }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
using std::cos;
using std::pow;
using std::sin;

/* Every lane of the block takes part, as in the kernels (a block is one wave where they shuffle). */
inline float __shfl_xor_sync(unsigned, float v, int o, int) {
    static float lanes[1024];
    lanes[threadIdx.x] = v;
    __syncthreads();
    const float r = lanes[threadIdx.x ^ o];
    __syncthreads();
    return r;
}
