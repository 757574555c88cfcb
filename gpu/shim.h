/* shim.h — the GPU libraries, loaded at run time. Every function gorstar calls is listed once
 * below with its signature, written here from the vendors' documented C ABIs (no vendor header is
 * needed to build, no -l flag links them): the lists make one table of pointers per library, the
 * function that fills it with dlsym, and one static inline caller per function for Go. */
#ifndef GORSTAR_GPU_SHIM_H
#define GORSTAR_GPU_SHIM_H

#include <stddef.h>
#include <stdint.h>

/* ---- types -------------------------------------------------------------------------------- */
typedef int gcu_result;                       /* CUresult, nvrtcResult, cublasStatus_t: 0 is success */
typedef int gcu_device;                       /* CUdevice */
typedef struct gcu_ctx *gcu_context;          /* CUcontext */
typedef struct gcu_mod *gcu_module;           /* CUmodule */
typedef struct gcu_fn *gcu_function;          /* CUfunction */
typedef struct gcu_stream *gcu_stream;        /* CUstream (NULL: the default stream) */
typedef unsigned long long gcu_ptr;           /* CUdeviceptr */
typedef struct gnvrtc_prog *gnvrtc_program;   /* nvrtcProgram, hiprtcProgram */
typedef struct gblas *gblas_handle;           /* cublasHandle_t, rocblas_handle */
typedef struct gccl *gccl_comm;               /* ncclComm_t */
typedef struct { char internal[128]; } gccl_id; /* ncclUniqueId (NCCL_UNIQUE_ID_BYTES = 128) */

/* X(return type, name, (parameters), (arguments)) */
#define GK_CUDA_SYMS(X)                                                                              \
    X(gcu_result, cuInit, (unsigned flags), (flags))                                                 \
    X(gcu_result, cuDriverGetVersion, (int *v), (v))                                                 \
    X(gcu_result, cuDeviceGetCount, (int *n), (n))                                                   \
    X(gcu_result, cuDeviceGet, (gcu_device * d, int ordinal), (d, ordinal))                          \
    X(gcu_result, cuDeviceGetName, (char *name, int len, gcu_device d), (name, len, d))              \
    X(gcu_result, cuDeviceGetAttribute, (int *v, int attr, gcu_device d), (v, attr, d))              \
    X(gcu_result, cuDeviceTotalMem_v2, (size_t * bytes, gcu_device d), (bytes, d))                   \
    X(gcu_result, cuDevicePrimaryCtxRetain, (gcu_context * c, gcu_device d), (c, d))                 \
    X(gcu_result, cuCtxSetCurrent, (gcu_context c), (c))                                             \
    X(gcu_result, cuCtxSynchronize, (void), ())                                                      \
    X(gcu_result, cuMemAlloc_v2, (gcu_ptr * p, size_t bytes), (p, bytes))                            \
    X(gcu_result, cuMemFree_v2, (gcu_ptr p), (p))                                                    \
    X(gcu_result, cuMemcpyHtoD_v2, (gcu_ptr dst, const void *src, size_t n), (dst, src, n))          \
    X(gcu_result, cuMemcpyDtoH_v2, (void *dst, gcu_ptr src, size_t n), (dst, src, n))                \
    X(gcu_result, cuMemcpyDtoD_v2, (gcu_ptr dst, gcu_ptr src, size_t n), (dst, src, n))              \
    X(gcu_result, cuMemsetD8_v2, (gcu_ptr dst, unsigned char v, size_t n), (dst, v, n))              \
    X(gcu_result, cuModuleLoadData, (gcu_module * m, const void *image), (m, image))                 \
    X(gcu_result, cuModuleGetFunction, (gcu_function * f, gcu_module m, const char *name), (f, m, name)) \
    X(gcu_result, cuFuncSetAttribute, (gcu_function f, int attr, int v), (f, attr, v))               \
    X(gcu_result, cuLaunchKernel,                                                                    \
      (gcu_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, \
       unsigned shmem, gcu_stream s, void **params, void **extra),                                   \
      (f, gx, gy, gz, bx, by, bz, shmem, s, params, extra))                                          \
    X(gcu_result, cuGetErrorName, (gcu_result e, const char **s), (e, s))                            \
    X(gcu_result, cuGetErrorString, (gcu_result e, const char **s), (e, s))

#define GK_NVRTC_SYMS(X)                                                                             \
    X(gcu_result, nvrtcVersion, (int *major, int *minor), (major, minor))                            \
    X(gcu_result, nvrtcCreateProgram,                                                                \
      (gnvrtc_program * p, const char *src, const char *name, int nh, const char *const *headers,    \
       const char *const *names),                                                                    \
      (p, src, name, nh, headers, names))                                                            \
    X(gcu_result, nvrtcCompileProgram, (gnvrtc_program p, int n, const char *const *opts), (p, n, opts)) \
    X(gcu_result, nvrtcGetProgramLogSize, (gnvrtc_program p, size_t * n), (p, n))                    \
    X(gcu_result, nvrtcGetProgramLog, (gnvrtc_program p, char *log), (p, log))                       \
    X(gcu_result, nvrtcGetCUBINSize, (gnvrtc_program p, size_t * n), (p, n))                         \
    X(gcu_result, nvrtcGetCUBIN, (gnvrtc_program p, char *code), (p, code))                          \
    X(gcu_result, nvrtcDestroyProgram, (gnvrtc_program * p), (p))                                    \
    X(const char *, nvrtcGetErrorString, (gcu_result e), (e))

/* cublasGemmEx: bf16 or fp32 operands, fp32 accumulation (CUBLAS_COMPUTE_32F), column-major. */
#define GK_CUBLAS_SYMS(X)                                                                            \
    X(gcu_result, cublasCreate_v2, (gblas_handle * h), (h))                                          \
    X(gcu_result, cublasDestroy_v2, (gblas_handle h), (h))                                           \
    X(gcu_result, cublasGetVersion_v2, (gblas_handle h, int *v), (h, v))                             \
    X(gcu_result, cublasGemmEx,                                                                      \
      (gblas_handle h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A, int at, \
       int lda, const void *B, int bt, int ldb, const void *beta, void *C, int ct, int ldc, int compute, \
       int algo),                                                                                    \
      (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, compute, algo))

#define GK_CUBLASLT_SYMS(X) X(size_t, cublasLtGetVersion, (void), ())

#define GK_HIP_SYMS(X)                                                                               \
    X(gcu_result, hipInit, (unsigned flags), (flags))                                                \
    X(gcu_result, hipDriverGetVersion, (int *v), (v))                                                \
    X(gcu_result, hipRuntimeGetVersion, (int *v), (v))                                               \
    X(gcu_result, hipGetDeviceCount, (int *n), (n))                                                  \
    X(gcu_result, hipSetDevice, (int d), (d))                                                        \
    X(gcu_result, hipDeviceGetName, (char *name, int len, int d), (name, len, d))                    \
    X(gcu_result, hipDeviceTotalMem, (size_t * bytes, int d), (bytes, d))                            \
    X(gcu_result, hipMalloc, (void **p, size_t bytes), (p, bytes))                                   \
    X(gcu_result, hipFree, (void *p), (p))                                                           \
    X(gcu_result, hipMemcpy, (void *dst, const void *src, size_t n, int kind), (dst, src, n, kind))  \
    X(gcu_result, hipMemset, (void *dst, int v, size_t n), (dst, v, n))                              \
    X(gcu_result, hipDeviceSynchronize, (void), ())                                                  \
    X(gcu_result, hipModuleLoadData, (gcu_module * m, const void *image), (m, image))                \
    X(gcu_result, hipModuleGetFunction, (gcu_function * f, gcu_module m, const char *name), (f, m, name)) \
    X(gcu_result, hipModuleLaunchKernel,                                                             \
      (gcu_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, \
       unsigned shmem, gcu_stream s, void **params, void **extra),                                   \
      (f, gx, gy, gz, bx, by, bz, shmem, s, params, extra))                                          \
    X(const char *, hipGetErrorName, (gcu_result e), (e))                                            \
    X(const char *, hipGetErrorString, (gcu_result e), (e))

#define GK_HIPRTC_SYMS(X)                                                                            \
    X(gcu_result, hiprtcVersion, (int *major, int *minor), (major, minor))                           \
    X(gcu_result, hiprtcCreateProgram,                                                               \
      (gnvrtc_program * p, const char *src, const char *name, int nh, const char *const *headers,    \
       const char *const *names),                                                                    \
      (p, src, name, nh, headers, names))                                                            \
    X(gcu_result, hiprtcCompileProgram, (gnvrtc_program p, int n, const char *const *opts), (p, n, opts)) \
    X(gcu_result, hiprtcGetProgramLogSize, (gnvrtc_program p, size_t * n), (p, n))                   \
    X(gcu_result, hiprtcGetProgramLog, (gnvrtc_program p, char *log), (p, log))                      \
    X(gcu_result, hiprtcGetCodeSize, (gnvrtc_program p, size_t * n), (p, n))                         \
    X(gcu_result, hiprtcGetCode, (gnvrtc_program p, char *code), (p, code))                          \
    X(gcu_result, hiprtcDestroyProgram, (gnvrtc_program * p), (p))                                   \
    X(const char *, hiprtcGetErrorString, (gcu_result e), (e))

/* rocblas_gemm_ex: D = alpha op(A) op(B) + beta C, column-major; here C and D are one buffer. */
#define GK_ROCBLAS_SYMS(X)                                                                           \
    X(gcu_result, rocblas_create_handle, (gblas_handle * h), (h))                                    \
    X(gcu_result, rocblas_destroy_handle, (gblas_handle h), (h))                                     \
    X(gcu_result, rocblas_get_version_string, (char *buf, size_t len), (buf, len))                   \
    X(gcu_result, rocblas_gemm_ex,                                                                   \
      (gblas_handle h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A, int at, \
       int lda, const void *B, int bt, int ldb, const void *beta, const void *C, int ct, int ldc,    \
       void *D, int dt, int ldd, int compute, int algo, int32_t solution, uint32_t flags),           \
      (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, D, dt, ldd, compute, algo, \
       solution, flags))

#define GK_HIPBLASLT_SYMS(X) X(gcu_result, hipblasLtCreate, (gblas_handle * h), (h))

/* NCCL and RCCL share the API (RCCL is NCCL's port). */
#define GK_NCCL_SYMS(X)                                                                              \
    X(gcu_result, ncclGetVersion, (int *v), (v))                                                     \
    X(gcu_result, ncclGetUniqueId, (gccl_id * id), (id))                                             \
    X(gcu_result, ncclCommInitRank, (gccl_comm * c, int n, gccl_id id, int rank), (c, n, id, rank))  \
    X(gcu_result, ncclAllReduce,                                                                     \
      (const void *send, void *recv, size_t count, int dtype, int op, gccl_comm c, gcu_stream s),    \
      (send, recv, count, dtype, op, c, s))                                                          \
    X(gcu_result, ncclBroadcast,                                                                     \
      (const void *send, void *recv, size_t count, int dtype, int root, gccl_comm c, gcu_stream s),  \
      (send, recv, count, dtype, root, c, s))                                                        \
    X(gcu_result, ncclCommDestroy, (gccl_comm c), (c))                                               \
    X(const char *, ncclGetErrorString, (gcu_result e), (e))

/* ---- one table per library ---------------------------------------------------------------- */
#define GK_FIELD(ret, name, params, args) ret(*name) params;
#define GK_TABLE(tag, syms)                                                                          \
    struct gk_##tag##_table { syms(GK_FIELD) };                                                      \
    extern struct gk_##tag##_table gk_##tag;
GK_TABLE(cuda, GK_CUDA_SYMS)
GK_TABLE(nvrtc, GK_NVRTC_SYMS)
GK_TABLE(cublas, GK_CUBLAS_SYMS)
GK_TABLE(cublaslt, GK_CUBLASLT_SYMS)
GK_TABLE(hip, GK_HIP_SYMS)
GK_TABLE(hiprtc, GK_HIPRTC_SYMS)
GK_TABLE(rocblas, GK_ROCBLAS_SYMS)
GK_TABLE(hipblaslt, GK_HIPBLASLT_SYMS)
GK_TABLE(nccl, GK_NCCL_SYMS)

/* The libraries, in the order of the tables above (Go's Lib constants). */
enum { GK_LIB_CUDA, GK_LIB_NVRTC, GK_LIB_CUBLAS, GK_LIB_CUBLASLT, GK_LIB_HIP, GK_LIB_HIPRTC, GK_LIB_ROCBLAS,
       GK_LIB_HIPBLASLT, GK_LIB_NCCL, GK_LIB_RCCL, GK_LIB_COUNT };

/* gk_dlopen opens path (RTLD_NOW | RTLD_GLOBAL, so a library's own dependencies resolve); NULL with
 * err filled (dlerror) on failure. */
void *gk_dlopen(const char *path, char *err, size_t errlen);
void gk_dlclose(void *handle);
void *gk_dlsym(void *handle, const char *name);
/* gk_bind fills library lib's table from handle: 0 on success, else the table is left empty and
 * missing names the first symbol that is absent. */
int gk_bind(int lib, void *handle, char *missing, size_t len);

/* ---- callers (cgo cannot call a function pointer) ------------------------------------------ */
#define GK_CALLER(tag) GK_CALLER_##tag
#define GK_CALLER_cuda(ret, name, params, args) static inline ret call_##name params { return gk_cuda.name args; }
#define GK_CALLER_nvrtc(ret, name, params, args) static inline ret call_##name params { return gk_nvrtc.name args; }
#define GK_CALLER_cublas(ret, name, params, args) static inline ret call_##name params { return gk_cublas.name args; }
#define GK_CALLER_cublaslt(ret, name, params, args) static inline ret call_##name params { return gk_cublaslt.name args; }
#define GK_CALLER_hip(ret, name, params, args) static inline ret call_##name params { return gk_hip.name args; }
#define GK_CALLER_hiprtc(ret, name, params, args) static inline ret call_##name params { return gk_hiprtc.name args; }
#define GK_CALLER_rocblas(ret, name, params, args) static inline ret call_##name params { return gk_rocblas.name args; }
#define GK_CALLER_hipblaslt(ret, name, params, args) static inline ret call_##name params { return gk_hipblaslt.name args; }
#define GK_CALLER_nccl(ret, name, params, args) static inline ret call_##name params { return gk_nccl.name args; }
GK_CUDA_SYMS(GK_CALLER_cuda)
GK_NVRTC_SYMS(GK_CALLER_nvrtc)
GK_CUBLAS_SYMS(GK_CALLER_cublas)
GK_CUBLASLT_SYMS(GK_CALLER_cublaslt)
GK_HIP_SYMS(GK_CALLER_hip)
GK_HIPRTC_SYMS(GK_CALLER_hiprtc)
GK_ROCBLAS_SYMS(GK_CALLER_rocblas)
GK_HIPBLASLT_SYMS(GK_CALLER_hipblaslt)
GK_NCCL_SYMS(GK_CALLER_nccl)

/* The tests' CPU emulator of the kernels (gpu/emul): its launcher, found with dlsym. */
typedef int (*gk_emul_launch_fn)(const char *name, unsigned gx, unsigned gy, unsigned bx, const char *argbuf,
                                 const int *offs, int nargs);
static inline gcu_result gk_call_emul(void *fn, const char *name, unsigned gx, unsigned gy, unsigned bx,
                                      const char *argbuf, const int *offs, int nargs) {
    return ((gk_emul_launch_fn)fn)(name, gx, gy, bx, argbuf, offs, nargs);
}

/* A device address as the void * HIP takes (Go keeps addresses as integers). */
static inline void *gk_ptr(gcu_ptr p) { return (void *)(uintptr_t)p; }

/* gk_launch_cuda / gk_launch_hip: a kernel launch with its arguments packed by Go into one buffer
 * (each argument at offs[i]), so Go passes no Go pointers inside C memory. */
gcu_result gk_launch_cuda(gcu_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned shmem,
                          const char *argbuf, const int *offs, int nargs);
gcu_result gk_launch_hip(gcu_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned shmem,
                         const char *argbuf, const int *offs, int nargs);
#endif
