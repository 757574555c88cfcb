/* runtime.hip — the ROCm backend's runtime: device choice, allocations, copies, errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static int chosen_device = 0;
static int host_threads = 1;
static int init_generation = 0;           /* bumped by gk_init so threads re-bind */
static __thread int bound_generation = -1;
static char last_error[256];
static char backend_name[64] = "rocm";

void gk_rocm_check(hipError_t err, const char *what) {
    if (err != hipSuccess && last_error[0] == 0)
        snprintf(last_error, sizeof last_error, "%s: %s", what, hipGetErrorString(err));
}

void gk_rocm_bind(void) {
    if (bound_generation != init_generation) {
        gk_rocm_check(hipSetDevice(chosen_device), "hipSetDevice");
        bound_generation = init_generation;
    }
}

extern "C" {

const char *gk_backend_name(void) { return backend_name; }

const char *gk_last_error(void) { return last_error; }

int gk_threads(void) { return host_threads; }

/* device counts among the GPUs HIP_VISIBLE_DEVICES leaves visible (the HIP runtime applies it). */
int gk_init(int device, int threads) {
    last_error[0] = 0;
    int count = 0;
    hipError_t err = hipGetDeviceCount(&count);
    if (err != hipSuccess || count == 0) {
        const char *vis = getenv("HIP_VISIBLE_DEVICES");
        snprintf(last_error, sizeof last_error, "no ROCm GPU found (%s; HIP_VISIBLE_DEVICES=%s)",
                 err != hipSuccess ? hipGetErrorString(err) : "0 devices", vis ? vis : "unset");
        return -1;
    }
    if (device < 0) device = 0;
    if (device >= count) {
        snprintf(last_error, sizeof last_error, "ROCm device %d not found: %d visible", device, count);
        return -1;
    }
    chosen_device = device;
    host_threads = threads > 0 ? threads : 1;
    init_generation++;
    gk_rocm_bind();
    hipDeviceProp_t prop;
    if (hipGetDeviceProperties(&prop, device) == hipSuccess) {
        char arch[32];
        snprintf(arch, sizeof arch, "%s", prop.gcnArchName);
        char *colon = strchr(arch, ':'); /* "gfx90a:sramecc+:xnack-" -> "gfx90a" */
        if (colon) *colon = 0;
        snprintf(backend_name, sizeof backend_name, "rocm-%s", arch);
    }
    return last_error[0] ? -1 : 0;
}

void *gk_alloc(size_t bytes) {
    gk_rocm_bind();
    void *p = NULL;
    hipError_t err = hipMalloc(&p, bytes ? bytes : 64);
    if (err != hipSuccess) {
        snprintf(last_error, sizeof last_error, "hipMalloc %zu bytes: %s", bytes, hipGetErrorString(err));
        return NULL;
    }
    return p;
}

void gk_free(void *p) {
    gk_rocm_bind();
    if (p) gk_rocm_check(hipFree(p), "hipFree");
}

void gk_memset_zero(void *p, size_t bytes) {
    gk_rocm_bind();
    gk_rocm_check(hipMemset(p, 0, bytes), "hipMemset");
}

void gk_copy_to_device(void *dst, const void *src_host, size_t bytes) {
    gk_rocm_bind();
    gk_rocm_check(hipMemcpy(dst, src_host, bytes, hipMemcpyHostToDevice), "hipMemcpy to device");
}

void gk_copy_to_host(void *dst_host, const void *src, size_t bytes) {
    gk_rocm_bind();
    gk_rocm_check(hipMemcpy(dst_host, src, bytes, hipMemcpyDeviceToHost), "hipMemcpy to host");
}

void gk_copy_device(void *dst, const void *src, size_t bytes) {
    gk_rocm_bind();
    gk_rocm_check(hipMemcpy(dst, src, bytes, hipMemcpyDeviceToDevice), "hipMemcpy on device");
}

void gk_synchronize(void) {
    gk_rocm_bind();
    gk_rocm_check(hipDeviceSynchronize(), "hipDeviceSynchronize");
}

} /* extern "C" */
