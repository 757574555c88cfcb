//go:build ignore
//
// (A standalone C program: the Go package of this directory does not build it.)

// linear_calls.c — the kernels' packed linear forward called in a loop from a plain C program, the
// baseline of the same calls inside gorstar's Go process (kernels/README.md, "Kernels inside a Go
// process"; BenchmarkLinearForwardPackedCalls). Build and run from the repository root:
//
//     gcc -O3 -fopenmp -Ikernels bench/linear_calls.c kernels/*.c -lm -lpthread -o /tmp/linear_calls
//     /tmp/linear_calls 16 512 1536 3000                 # rows, in, out, calls
//     /tmp/linear_calls 16 512 1536 3000 second-pool     # as a Go process has it
//
// It prints GFLOP/s and microseconds per call, three times. "second-pool" first has another thread
// run one parallel region and stay alive, as an OS thread of a Go process that once ran a kernel
// does: libgomp then manages more threads than there are CPUs and throttles its spinning unless
// OMP_WAIT_POLICY=active (kernels/openmp_env.go). Compare with and without
// `OMP_WAIT_POLICY=active GOMP_SPINCOUNT=1000`, and beside
// `go test -run X -bench LinearForwardPackedCalls ./kernels` under the same variables.
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile int other_ran;

static void *other_pool(void *arg) {
    (void)arg;
#pragma omp parallel num_threads(2)
    {
#pragma omp atomic
        other_ran++;
    }
    for (;;) pause(); /* alive, with its pool, like a Go runtime thread */
    return NULL;
}

#include "gorstar_kernels.h"

/* n floats, 64-byte aligned (aligned_alloc wants a size that is a multiple of the alignment). */
static float *alloc64(size_t n) { return aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64); }

int main(int argc, char **argv) {
    if (argc != 5 && !(argc == 6 && strcmp(argv[5], "second-pool") == 0)) {
        fprintf(stderr, "usage: %s ROWS IN OUT CALLS [second-pool]\n", argv[0]);
        return 2;
    }
    const int T = atoi(argv[1]), in = atoi(argv[2]), out = atoi(argv[3]), n = atoi(argv[4]);
    if (T <= 0 || in <= 0 || out <= 0 || n <= 0 || gk_init(0, 2) != 0) {
        fprintf(stderr, "linear_calls: bad sizes or no kernels\n");
        return 1;
    }
    float *x = alloc64((size_t)T * in), *y = alloc64((size_t)T * out), *W = alloc64((size_t)in * out),
          *Wp = alloc64((size_t)gk_linear_packed_floats(in, out));
    if (!x || !y || !W || !Wp) return 1;
    for (long i = 0; i < (long)in * out; i++) W[i] = (float)(i % 7) * 0.1f - 0.3f;
    for (long i = 0; i < (long)T * in; i++) x[i] = (float)(i % 5) * 0.1f - 0.2f;
    gk_linear_pack(Wp, W, in, out);
    if (argc == 6) {
        pthread_t t;
        if (pthread_create(&t, NULL, other_pool, NULL) != 0) return 1;
        while (other_ran < 2) usleep(1000);
    }
    for (int r = 0; r < 3; r++) {
        const double t0 = omp_get_wtime();
        for (int i = 0; i < n; i++) gk_linear_forward_packed(y, x, W, Wp, NULL, T, in, out);
        const double t = omp_get_wtime() - t0;
        printf("%d x %d x %d: %.1f GFLOP/s, %.1f us a call\n", T, in, out, 2.0 * T * in * out * n / t / 1e9,
               t / n * 1e6);
    }
    return 0;
}
