/* linear_calls.c — the kernels' packed linear forward called in a loop from a plain C program, the
 * baseline of the same calls inside gorstar's Go process (kernels/README.md, "Kernels inside a Go
 * process"; BenchmarkLinearForwardPackedCalls). Build and run from the repository root:
 *
 *     gcc -O3 -fopenmp -Ikernels bench/linear_calls.c kernels/*.c -lm -o /tmp/linear_calls
 *     /tmp/linear_calls 16 512 1536 3000     # rows, in, out, calls
 *
 * It prints GFLOP/s and microseconds per call, three times. Run it beside
 * `go test -run X -bench LinearForwardPackedCalls ./kernels` under the same GOMP_SPINCOUNT and
 * OMP_PROC_BIND. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "gorstar_kernels.h"

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s ROWS IN OUT CALLS\n", argv[0]);
        return 2;
    }
    const int T = atoi(argv[1]), in = atoi(argv[2]), out = atoi(argv[3]), n = atoi(argv[4]);
    if (T <= 0 || in <= 0 || out <= 0 || n <= 0 || gk_init(0, 2) != 0) {
        fprintf(stderr, "linear_calls: bad sizes or no kernels\n");
        return 1;
    }
    const long packed = gk_linear_packed_floats(in, out);
    float *x = aligned_alloc(64, sizeof(float) * ((size_t)T * in + 16)),
          *y = aligned_alloc(64, sizeof(float) * ((size_t)T * out + 16)),
          *W = aligned_alloc(64, sizeof(float) * ((size_t)in * out + 16)),
          *Wp = aligned_alloc(64, sizeof(float) * (size_t)(packed + 16) / 16 * 16);
    if (!x || !y || !W || !Wp) return 1;
    for (long i = 0; i < (long)in * out; i++) W[i] = (float)(i % 7) * 0.1f - 0.3f;
    for (long i = 0; i < (long)T * in; i++) x[i] = (float)(i % 5) * 0.1f - 0.2f;
    gk_linear_pack(Wp, W, in, out);
    for (int r = 0; r < 3; r++) {
        const double t0 = omp_get_wtime();
        for (int i = 0; i < n; i++) gk_linear_forward_packed(y, x, W, Wp, NULL, T, in, out);
        const double t = omp_get_wtime() - t0;
        printf("%d x %d x %d: %.1f GFLOP/s, %.1f us a call\n", T, in, out, 2.0 * T * in * out * n / t / 1e9,
               t / n * 1e6);
    }
    return 0;
}
