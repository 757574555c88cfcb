/* shim.c — see shim.h. */
#include "shim.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define GK_DEFINE(tag) struct gk_##tag##_table gk_##tag;
GK_DEFINE(cuda)
GK_DEFINE(nvrtc)
GK_DEFINE(cublas)
GK_DEFINE(cublaslt)
GK_DEFINE(hip)
GK_DEFINE(hiprtc)
GK_DEFINE(rocblas)
GK_DEFINE(hipblaslt)
GK_DEFINE(nccl)

void *gk_dlopen(const char *path, char *err, size_t errlen) {
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) {
        const char *e = dlerror();
        snprintf(err, errlen, "%s", e ? e : "dlopen failed");
    }
    return h;
}

void gk_dlclose(void *handle) {
    if (handle) dlclose(handle);
}

/* The names of a table's symbols, in field order. */
#define GK_NAME(ret, name, params, args) #name,
static const char *cuda_names[] = {GK_CUDA_SYMS(GK_NAME)};
static const char *nvrtc_names[] = {GK_NVRTC_SYMS(GK_NAME)};
static const char *cublas_names[] = {GK_CUBLAS_SYMS(GK_NAME)};
static const char *cublaslt_names[] = {GK_CUBLASLT_SYMS(GK_NAME)};
static const char *hip_names[] = {GK_HIP_SYMS(GK_NAME)};
static const char *hiprtc_names[] = {GK_HIPRTC_SYMS(GK_NAME)};
static const char *rocblas_names[] = {GK_ROCBLAS_SYMS(GK_NAME)};
static const char *hipblaslt_names[] = {GK_HIPBLASLT_SYMS(GK_NAME)};
static const char *nccl_names[] = {GK_NCCL_SYMS(GK_NAME)};

/* Every table is a struct of function pointers only, so it is filled as an array of void *. */
static int fill(void *table, size_t size, const char **names, void *handle, char *missing, size_t len) {
    size_t n = size / sizeof(void *);
    void *ptrs[64];
    for (size_t i = 0; i < n; i++) {
        ptrs[i] = dlsym(handle, names[i]);
        if (ptrs[i] == NULL) {
            snprintf(missing, len, "%s", names[i]);
            memset(table, 0, size);
            return -1;
        }
    }
    memcpy(table, ptrs, size);
    return 0;
}

#define GK_FILL(tag) fill(&gk_##tag, sizeof gk_##tag, tag##_names, handle, missing, len)

int gk_bind(int lib, void *handle, char *missing, size_t len) {
    switch (lib) {
    case GK_LIB_CUDA: return GK_FILL(cuda);
    case GK_LIB_NVRTC: return GK_FILL(nvrtc);
    case GK_LIB_CUBLAS: return GK_FILL(cublas);
    case GK_LIB_CUBLASLT: return GK_FILL(cublaslt);
    case GK_LIB_HIP: return GK_FILL(hip);
    case GK_LIB_HIPRTC: return GK_FILL(hiprtc);
    case GK_LIB_ROCBLAS: return GK_FILL(rocblas);
    case GK_LIB_HIPBLASLT: return GK_FILL(hipblaslt);
    case GK_LIB_NCCL:
    case GK_LIB_RCCL: return GK_FILL(nccl);
    }
    snprintf(missing, len, "(unknown library %d)", lib);
    return -1;
}

static void pack(void **params, const char *argbuf, const int *offs, int nargs) {
    for (int i = 0; i < nargs; i++) params[i] = (void *)(argbuf + offs[i]);
}

gcu_result gk_launch_cuda(gcu_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned shmem,
                          const char *argbuf, const int *offs, int nargs) {
    void *params[32];
    if (nargs > 32) return 1; /* CUDA_ERROR_INVALID_VALUE */
    pack(params, argbuf, offs, nargs);
    return gk_cuda.cuLaunchKernel(f, gx, gy, gz, bx, 1, 1, shmem, NULL, params, NULL);
}

gcu_result gk_launch_hip(gcu_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned shmem,
                         const char *argbuf, const int *offs, int nargs) {
    void *params[32];
    if (nargs > 32) return 1; /* hipErrorInvalidValue */
    pack(params, argbuf, offs, nargs);
    return gk_hip.hipModuleLaunchKernel(f, gx, gy, gz, bx, 1, 1, shmem, NULL, params, NULL);
}

void *gk_dlsym(void *handle, const char *name) { return dlsym(handle, name); }
