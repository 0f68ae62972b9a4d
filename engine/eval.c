// eval.c — average negative log-likelihood of a text under the model, one batched window at a time.
#include <math.h>
#include <stdio.h>

#include "normlab.h"

// -ln softmax(logits)[target], in double.
static double nll(const float *logits, size_t V, int target) {
    double max = logits[0], sum = 0.0;
    for (size_t i = 1; i < V; i++) max = logits[i] > max ? logits[i] : max;
    for (size_t i = 0; i < V; i++) sum += exp((double)logits[i] - max);
    return log(sum) - ((double)logits[target] - max);
}

int nl_eval(NlState *s, const int *ids, size_t n, size_t stride, NlEvalResult *out,
            NlProgressFn progress, void *ctx, NlError *err) {
    const NlConfig *c = nl_state_config(s);
    size_t T = (size_t)c->block_size, V = (size_t)c->vocab_size;
    out->nll_sum = 0.0;
    out->count = 0;
    nl_profiler_set_phase(nl_state_profiler(s), NL_PHASE_PREFILL);
    if (n < 2) { snprintf(err->msg, sizeof err->msg, "the text needs at least 2 characters to score one"); return -1; }
    if (stride < 1 || stride > T) { snprintf(err->msg, sizeof err->msg, "stride %zu is outside [1, %zu]", stride, T); return -1; }
    // Inputs are ids[0..n-1); input position p predicts target ids[p + 1].
    size_t n_inputs = n - 1, scored = 0;
    while (scored < n_inputs) {
        size_t end = scored == 0 ? (n_inputs < T ? n_inputs : T) : (scored + stride < n_inputs ? scored + stride : n_inputs);
        size_t start = end > T ? end - T : 0, k = end - scored;
        double w = nl_profiler_begin(nl_state_profiler(s));
        const float *logits = nl_forward(s, ids + start, end - start, 0, k);  // (k, V)
        nl_profiler_add_wall(nl_state_profiler(s), w);
        for (size_t i = 0; i < k; i++) {
            double v = nll(logits + i * V, V, ids[scored + i + 1]);
            if (!isfinite(v)) {
                snprintf(err->msg, sizeof err->msg, "non-finite loss at character %zu", scored + i + 2);
                return -1;
            }
            out->nll_sum += v;
        }
        scored = end;
        out->count = scored;
        if (progress) progress(scored, n_inputs, ctx);
    }
    return 0;
}
