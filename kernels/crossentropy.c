/* crossentropy.c — fused log-softmax + weighted cross-entropy + its gradient, one row per token. */
#include <math.h>
#include <stdlib.h>

#include "cpu.h"

/* One row: returns log p(target) (0 for target -1) and, when d is not NULL, writes d = w*(softmax -
 * onehot). e is where the exponentials go: d itself, or a scratch row. d may alias x. */
GK_VECTORIZED
static float xent_row(float *d, float *e, const float *x, int target, float w, int V) {
    const float mx = gk_max(x, V, -INFINITY);
    const float xt = target >= 0 ? x[target] : 0.0f; /* read before e (maybe x) is overwritten */
    for (int j = 0; j < V; j++) e[j] = gk_expf_nonpos(x[j] - mx);
    /* Sum in double over float lanes of 8-float blocks: exact enough for V in the hundreds of thousands. */
    double sum = 0;
    for (int j0 = 0; j0 < V; j0 += 1024) sum += gk_sum(e + j0, V - j0 < 1024 ? V - j0 : 1024);
    const float logz = mx + (float)log(sum);
    if (d) {
        const float c = w / (float)sum;
        for (int j = 0; j < V; j++) d[j] = e[j] * c;
        if (target >= 0) d[target] -= w;
    }
    return target >= 0 ? xt - logz : 0.0f;
}

/* gk_softmax_xent's rows, shared out among the threads of the region that calls it (or all run on
 * the calling thread outside one). */
static void xent_rows(float *logprob, float *dlogits, double *rowloss, const float *logits, const int32_t *target,
                      const float *weight, int T, int V) {
    float *scratch = dlogits ? NULL : malloc(sizeof(float) * V);
#pragma omp for schedule(static)
    for (int t = 0; t < T; t++) {
        const int tg = target[t];
        const float w = tg < 0 ? 0.0f : (weight ? weight[t] : 1.0f);
        float *d = dlogits ? dlogits + (size_t)t * V : NULL;
        const float lp = xent_row(d, d ? d : scratch, logits + (size_t)t * V, tg, w, V);
        if (logprob) logprob[t] = lp;
        rowloss[t] = -(double)w * lp;
    }
    free(scratch);
}

double gk_softmax_xent(float *logprob, float *dlogits, const float *logits, const int32_t *target,
                       const float *weight, int T, int V) {
    double *rowloss = malloc(sizeof(double) * (T > 0 ? T : 1));
    GK_PARALLEL(gk_threads_if((long)T * V > 16384), xent_rows(logprob, dlogits, rowloss, logits, target, weight, T, V));
    double loss = 0;
    for (int t = 0; t < T; t++) loss += rowloss[t];
    free(rowloss);
    return loss;
}
