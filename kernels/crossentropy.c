//go:build !rocm

/* crossentropy.c — fused log-softmax + weighted cross-entropy + its gradient, one row per token. */
#include <math.h>
#include <stdlib.h>

#include "cpu.h"

double gk_softmax_xent(float *logprob, float *dlogits, const float *logits, const int32_t *target,
                       const float *weight, int T, int V) {
    double *rowloss = malloc(sizeof(double) * (T > 0 ? T : 1));
#pragma omp parallel for num_threads(gk_threads()) schedule(static) if ((long)T * V > 16384)
    for (int t = 0; t < T; t++) {
        const float *x = logits + (size_t)t * V;
        float mx = -INFINITY;
        for (int j = 0; j < V; j++) mx = x[j] > mx ? x[j] : mx;
        double sum = 0;
        for (int j = 0; j < V; j++) sum += expf(x[j] - mx);
        float logz = mx + (float)log(sum);
        int tg = target[t];
        float w = weight ? weight[t] : 1.0f;
        if (tg < 0) w = 0;
        float lp = tg >= 0 ? x[tg] - logz : 0.0f;
        if (logprob) logprob[t] = lp;
        rowloss[t] = -(double)w * lp;
        if (dlogits) {
            float *d = dlogits + (size_t)t * V;
            for (int j = 0; j < V; j++) d[j] = w * expf(x[j] - logz);
            if (tg >= 0) d[tg] -= w;
        }
    }
    double loss = 0;
    for (int t = 0; t < T; t++) loss += rowloss[t];
    free(rowloss);
    return loss;
}
