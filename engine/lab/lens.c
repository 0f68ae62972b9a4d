// lens.c — the logit lens (nostalgebraist 2020): the residual stream after each layer read out
// through the model's own final norm and head, scored on a text as nl_eval scores it.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "normlab_lab.h"

// The stream entering each layer (and leaving the last) of one forward call, copied as it passes.
typedef struct {
    float *rows;  // (L + 1, T, D)
    size_t T, D, n_layer;
} Capture;

static void capture_residual(void *c, int layer, const float *x, size_t rows, size_t width) {
    Capture *cap = c;
    if (layer < 0 || (size_t)layer > cap->n_layer || rows > cap->T || width != cap->D) return;
    memcpy(cap->rows + (size_t)layer * cap->T * cap->D, x, rows * width * sizeof(float));
}
// Scores window w's targets from each captured layer into sums[0..L].
static void score_window(NlState *s, const Capture *cap, const int *ids, size_t n, size_t stride, size_t w,
                         double *sums) {
    size_t start, begin, end, V = (size_t)nl_state_config(s)->vocab_size;
    nl_eval_window(n, cap->T, stride, w, &start, &begin, &end);
    size_t len = end - start, k = end - begin;
    nl_forward(s, ids + start, len, 0, k);  // fills the capture
    for (size_t l = 0; l <= cap->n_layer; l++) {
        const float *logits = nl_state_readout(s, cap->rows + l * cap->T * cap->D, 1, len, k);  // (k, V)
        double sum = 0.0;
        for (size_t i = 0; i < k; i++) sum += nl_nll(logits + i * V, V, ids[begin + i + 1]);
        sums[l] += sum;
    }
}

int nl_lens(NlState *s, const int *ids, size_t n, size_t stride, double *bits, NlError *err) {
    const NlConfig *c = nl_state_config(s);
    if (!nl_family_info(c->arch)->has_blocks) {
        nl_error(err, NL_ERR_ARG, "the logit lens reads a residual stream, which a recurrent (%s) model has not",
                 nl_config_arch_name(c->arch));
        return -1;
    }
    size_t T = (size_t)c->block_size, L = (size_t)c->n_layer, windows = nl_eval_windows(n, T, stride);
    if (windows == 0 || stride > T) {
        nl_error(err, NL_ERR_ARG, "the logit lens needs a text of at least 2 characters and a stride of 1 to %zu", T);
        return -1;
    }
    Capture cap = {malloc((L + 1) * T * (size_t)c->n_embd * sizeof(float)), T, (size_t)c->n_embd, L};
    double *sums = calloc(L + 1, sizeof *sums);
    if (!cap.rows || !sums) {
        free(cap.rows);
        free(sums);
        nl_error(err, NL_ERR_NOMEM, "out of memory for the logit lens");
        return -1;
    }
    NlObserver saved = *nl_state_observer(s), obs = saved;
    obs.watcher = &cap;
    obs.residual = capture_residual;  // the statistics' other callbacks stay off
    obs.norm = NULL;
    obs.branch = NULL;
    obs.state = NULL;
    obs.site = NULL;
    nl_state_set_observer(s, &obs);
    for (size_t w = 0; w < windows; w++) score_window(s, &cap, ids, n, stride, w, sums);
    nl_state_set_observer(s, &saved);
    int rc = 0;
    for (size_t l = 0; l <= L; l++) {
        bits[l] = sums[l] / (double)(n - 1) / log(2.0);
        if (!isfinite(bits[l]) && rc == 0) {
            nl_error(err, NL_ERR_NUMERIC, "the logit lens after layer %zu has a non-finite loss", l);
            rc = -1;
        }
    }
    free(cap.rows);
    free(sums);
    return rc;
}
