// kldiv.c — a model's distribution against a reference's, position by position: the log-softmax a
// reference keeps, and the KL divergence from it and the top-1 agreement of another run's logits
// (eval --kl, and compare's quantized rows against their float32 rows).
#include <math.h>
#include <stddef.h>

#include "normlab_internal.h"
#include "normlab_lab.h"

// The largest of x (V), ties by the lower index, and ln sum exp(x) in double.
static size_t top_and_lse(const float *x, size_t V, double *lse) {
    size_t top = 0;
    for (size_t v = 1; v < V; v++)
        if (x[v] > x[top]) top = v;
    *lse = nl_logsumexp(x, V);
    return top;
}

size_t nl_log_softmax(const float *logits, size_t V, float *out) {
    double lse;
    size_t top = top_and_lse(logits, V, &lse);
    for (size_t v = 0; v < V; v++) out[v] = (float)((double)logits[v] - lse);
    return top;
}

void nl_mean_stderr(const double *x, size_t n, double *mean, double *se) {
    double s = 0.0, sq = 0.0;
    for (size_t i = 0; i < n; i++) s += x[i];
    *mean = n ? s / (double)n : 0.0;
    for (size_t i = 0; i < n; i++) sq += (x[i] - *mean) * (x[i] - *mean);
    *se = n > 1 ? sqrt(sq / (double)(n - 1) / (double)n) : 0.0;
}

double nl_kl_from_logits(const float *base_logp, const float *logits, size_t V, int *same) {
    double lse, kl = 0.0;
    size_t top = top_and_lse(logits, V, &lse), base_top = 0;
    for (size_t v = 0; v < V; v++) {
        kl += exp((double)base_logp[v]) * ((double)base_logp[v] - ((double)logits[v] - lse));
        if (base_logp[v] > base_logp[base_top]) base_top = v;
    }
    *same = base_top == top;
    return kl;
}
