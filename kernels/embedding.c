/* embedding.c — token embedding lookup and its gradient. */
#include <string.h>

#include "cpu.h"

void gk_embedding_forward(float *out, const int32_t *ids, const float *table, int T, int C) {
    GK_PARALLEL_FOR(gk_threads_if((long)T * C > 65536),
                    for (int t = 0; t < T; t++)
                        memcpy(out + (size_t)t * C, table + (size_t)ids[t] * C, sizeof(float) * C););
}

/* Repeated ids would race if split over tokens, so threads split the channels instead and each walks
 * the tokens in order: no atomics, and the same bits for any thread count. */
void gk_embedding_backward(float *dtable, const float *dout, const int32_t *ids, int T, int C) {
    int nt = gk_threads();
    if ((long)T * C < 65536) nt = 1;
#pragma omp parallel num_threads(nt)
    {
        int th = omp_get_thread_num(), n = omp_get_num_threads();
        int c0 = (int)((long)C * th / n), c1 = (int)((long)C * (th + 1) / n);
        for (int t = 0; t < T; t++) {
            if (ids[t] < 0) continue;
            float *d = dtable + (size_t)ids[t] * C;
            const float *g = dout + (size_t)t * C;
            for (int c = c0; c < c1; c++) d[c] += g[c];
        }
    }
}
