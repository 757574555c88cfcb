//go:build !rocm

/*
 * cpu.h — what the CPU kernel files share: the thread count every OpenMP region uses.
 *
 * libgomp keeps omp_set_num_threads per calling OS thread, and Go calls in from any OS thread, so
 * every parallel region names its thread count explicitly with num_threads(gk_threads()).
 */
#ifndef GORSTAR_CPU_H
#define GORSTAR_CPU_H

#include "gorstar_kernels.h"

void gk_set_error(const char *msg);

/* A work split that depends only on n and the chunk size, never on the thread count, so sums that
 * combine per-chunk partials in chunk order give the same bits for any number of threads. */
#define GK_CHUNK 4096

#endif
