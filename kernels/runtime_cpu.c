/* runtime_cpu.c — the CPU backend's runtime: thread count, host allocations, copies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h> /* madvise; MADV_HUGEPAGE is Linux's, and the advice is skipped where it is not defined */

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

/* Buffers of 2 MiB and more (weights, gradients, optimizer state, a step's activations) are
 * aligned to 2 MiB and advised as transparent huge pages: their first touch takes one fault per
 * 2 MiB instead of one per 4 KiB. Under a hypervisor a fault costs microseconds, and a training
 * step's first touch of its activations was a third of the first step's time. The length is
 * rounded up to whole huge pages where that adds at most an eighth; otherwise the tail stays in
 * small pages. Where THP is off ("never") the advice does nothing. */
enum { HUGE_PAGE = 2 << 20 };

void *gk_alloc(size_t bytes) {
    void *p = NULL;
    if (bytes == 0) bytes = 64;
    size_t align = 64, len = (bytes + 63) / 64 * 64;
    if (bytes >= HUGE_PAGE) {
        const size_t up = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        align = HUGE_PAGE;
        if (up - bytes <= bytes / 8) len = up;
    }
    if (posix_memalign(&p, align, len) != 0) {
        gk_set_error("out of host memory");
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    if (align == HUGE_PAGE) madvise(p, len / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE);
#endif
    return p;
}

void gk_free(void *p) { free(p); }

float *gk_scratch(int slot, size_t floats) {
    static __thread float *buf[GK_SCRATCH_SLOTS];
    static __thread size_t cap[GK_SCRATCH_SLOTS];
    if (cap[slot] < floats) {
        free(buf[slot]);
        buf[slot] = gk_alloc(sizeof(float) * floats);
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
