// kldiv.c — a model's distribution against a reference's, position by position: the log-softmax a
// reference keeps, and the KL divergence from it and the top-1 agreement of another run's logits
// (eval --kl, and compare's quantized rows against their float32 rows), kept in one record of
// every scored position and summarised once for both.
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

int nl_kl_record_init(NlKlRecord *r, size_t V, const int *ids, size_t n_ids, int what, NlError *err) {
    memset(r, 0, sizeof *r);
    r->n = n_ids > 1 ? n_ids - 1 : 0;
    r->V = V;
    r->ids = ids;
    r->compare = (what & NL_KL_COMPARE) != 0;
    size_t rows = r->n ? r->n : 1;
    int fail = 0;
    if (what & NL_KL_LOSSES) fail |= !(r->nll = calloc(rows, sizeof *r->nll));
    if (what & (NL_KL_BASE | NL_KL_COMPARE)) fail |= !(r->base = malloc(rows * V * sizeof *r->base));
    if (r->compare)
        fail |= !(r->kl = calloc(rows, sizeof *r->kl)) || !(r->dnll = calloc(rows, sizeof *r->dnll)) ||
                !(r->same = calloc(rows, 1));
    if (fail) return nl_error(err, NL_ERR_NOMEM, "out of memory for the per-position record of %zu positions", r->n);
    return 0;
}

void nl_kl_record_free(NlKlRecord *r) {
    free(r->nll);
    free(r->base);
    free(r->kl);
    free(r->dnll);
    free(r->same);
    memset(r, 0, sizeof *r);
}

void nl_kl_scored(void *ctx, size_t input, const float *logits, double nll) {
    NlKlRecord *r = ctx;
    if (r->nll) r->nll[input] = nll;
    if (!r->base) return;
    float *row = r->base + input * r->V;
    if (!r->compare) {
        nl_log_softmax(logits, r->V, row);
        return;
    }
    int same;
    double lse = nl_logsumexp(logits, r->V);
    for (size_t v = 0; v < r->V; v++) {
        double d = fabs((double)logits[v] - lse - (double)row[v]);
        if (d > r->max_dlogp) r->max_dlogp = d;
    }
    r->kl[input] = nl_kl_from_logits(row, logits, r->V, &same);
    r->same[input] = (unsigned char)same;
    r->dnll[input] = nll + (double)row[r->ids[input + 1]];  // -ln q - (-ln p) of the target
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int nl_kl_summary(const NlKlRecord *r, NlKlSummary *s, NlError *err) {
    double *sorted = malloc((r->n ? r->n : 1) * sizeof *sorted);
    if (!sorted) return nl_error(err, NL_ERR_NOMEM, "out of memory");
    memset(s, 0, sizeof *s);
    nl_mean_stderr(r->kl, r->n, &s->kl, &s->kl_se);
    nl_mean_stderr(r->dnll, r->n, &s->ln_ratio, &s->ln_ratio_se);
    s->max_dlogp = r->max_dlogp;
    memcpy(sorted, r->kl, r->n * sizeof *sorted);
    qsort(sorted, r->n, sizeof *sorted, by_value);
    size_t same = 0;
    for (size_t i = 0; i < r->n; i++) same += r->same[i];
    if (r->n) {
        s->median = r->n % 2 ? sorted[r->n / 2] : 0.5 * (sorted[r->n / 2 - 1] + sorted[r->n / 2]);
        s->p99 = sorted[(size_t)ceil(0.99 * (double)r->n) - 1];  // the nearest rank
        s->max = sorted[r->n - 1];
        s->same_top = (double)same / (double)r->n;
        s->same_top_se = sqrt(s->same_top * (1 - s->same_top) / (double)r->n);
    }
    free(sorted);
    return 0;
}
