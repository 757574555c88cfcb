/* runtime_cpu.c — the CPU backend's runtime: thread count, host allocations, copies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

void gk_sgemm_select_kernel(void); /* matmul.c */
const char *gk_sgemm_kernel_name(void);

static int threads_in_use = 1;
static __thread char last_error[256];

int gk_threads(void) { return threads_in_use; }

void gk_set_error(const char *msg) { snprintf(last_error, sizeof last_error, "%s", msg); }

const char *gk_last_error(void) { return last_error; }

int gk_init(int device, int threads) {
    if (device > 0) {
        snprintf(last_error, sizeof last_error, "the cpu backend has only device 0, got %d", device);
        return -1;
    }
    if (threads <= 0) threads = omp_get_num_procs();
    threads_in_use = threads;
    gk_sgemm_select_kernel();
    gk_accelerate_init();
    last_error[0] = 0;
    return 0;
}

void *gk_alloc(size_t bytes) {
    void *p = NULL;
    if (bytes == 0) bytes = 64;
    if (posix_memalign(&p, 64, (bytes + 63) / 64 * 64) != 0) {
        gk_set_error("out of host memory");
        return NULL;
    }
    return p;
}

void gk_free(void *p) { free(p); }

float *gk_scratch(int slot, size_t floats) {
    static __thread float *buf[GK_SCRATCH_SLOTS];
    static __thread size_t cap[GK_SCRATCH_SLOTS];
    if (cap[slot] < floats) {
        free(buf[slot]);
        void *p = NULL;
        buf[slot] = posix_memalign(&p, 64, sizeof(float) * floats) == 0 ? p : NULL;
        cap[slot] = buf[slot] ? floats : 0;
    }
    return buf[slot];
}

/* Large buffers (a model's gradients, a layer's activation gradients: tens to hundreds of MB per
 * training step) are cleared by every thread, in 1 MiB pieces: one core does not reach the
 * memory's write bandwidth, and the other threads would only wait. */
void gk_memset_zero(void *p, size_t bytes) {
    enum { PIECE = 1 << 20 };
    const size_t pieces = (bytes + PIECE - 1) / PIECE;
    GK_PARALLEL_FOR(gk_threads_if(pieces >= 4), for (size_t i = 0; i < pieces; i++) {
        const size_t at = i * PIECE;
        memset((char *)p + at, 0, bytes - at < PIECE ? bytes - at : PIECE);
    });
}

void gk_copy_to_device(void *dst, const void *src_host, size_t bytes) { memmove(dst, src_host, bytes); }

void gk_copy_to_host(void *dst_host, const void *src, size_t bytes) { memmove(dst_host, src, bytes); }

void gk_copy_device(void *dst, const void *src, size_t bytes) { memmove(dst, src, bytes); }

void gk_synchronize(void) {}
