// lens.c — the logit lens (nostalgebraist 2020): the residual stream after each layer read out
// through the model's own final norm and head, scored on a text during nl_eval's own pass.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "normlab_internal.h"
#include "normlab_lab.h"

struct NlLens {
    const int *ids;  // (n) the text eval scores, borrowed
    size_t n, T, D, n_layer, stride, room;  // room: B*T rows a layer
    float *rows;  // (L + 1, B*T, D) the stream entering each layer (and leaving the last) of one call
    double *sums;  // (L + 1) the loss of each layer's readout, summed window by window
    NlObserver saved;  // the state's observer before nl_lens_eval attached it (the statistics, the profiler)
};

// The stream as it passes: copied for the readout after the call, then handed on to the watcher
// the lens was attached over.
static void capture(void *w, int layer, const float *x, size_t rows, size_t width) {
    NlLens *lens = w;
    if (layer >= 0 && (size_t)layer <= lens->n_layer && width == lens->D && rows <= lens->room)
        memcpy(lens->rows + (size_t)layer * lens->room * width, x, rows * width * sizeof(float));
    if (lens->saved.residual) lens->saved.residual(lens->saved.watcher, layer, x, rows, width);
}

static void pass_norm(void *w, int layer, int post, const float *in, const float *out, NlNormWeights nw, size_t rows) {
    NlLens *lens = w;
    lens->saved.norm(lens->saved.watcher, layer, post, in, out, nw, rows);
}

static void pass_branch(void *w, int layer, const float *branch, size_t rows) {
    NlLens *lens = w;
    lens->saved.branch(lens->saved.watcher, layer, branch, rows);
}

static void pass_state(void *w, int layer, size_t t, const float *h, const float *c, size_t B) {
    NlLens *lens = w;
    lens->saved.state(lens->saved.watcher, layer, t, h, c, B);
}

static void pass_site(void *w, int layer, NlSite site, const float *x, size_t rows, size_t width, const float *gain) {
    NlLens *lens = w;
    lens->saved.site(lens->saved.watcher, layer, site, x, rows, width, gain);
}

// eval's call hook: windows first.. first+count-1 have just run in s, their streams captured; each
// layer's rows are read out (with the observer off, so that the profiler does not time the lens)
// and scored on the windows' targets.
static void score_call(void *ctx, NlState *s, size_t first, size_t count) {
    NlLens *lens = ctx;
    size_t V = (size_t)nl_state_config(s)->vocab_size, len = 0, k_max = 0, start, begin, end;
    for (size_t b = 0; b < count; b++) {
        nl_eval_window(lens->n, lens->T, lens->stride, first + b, &start, &begin, &end);
        len = end - start;  // the same for every window of a call
        k_max = end - begin > k_max ? end - begin : k_max;
    }
    NlObserver attached = *nl_state_observer(s);
    nl_state_set_observer(s, NULL);
    for (size_t l = 0; l <= lens->n_layer; l++) {
        const float *x = lens->rows + l * lens->room * lens->D;
        const float *logits = nl_state_readout(s, x, count, len, k_max);  // (count, k_max, V)
        for (size_t b = 0; b < count; b++) {
            nl_eval_window(lens->n, lens->T, lens->stride, first + b, &start, &begin, &end);
            size_t k = end - begin;
            const float *last = logits + (b * k_max + k_max - k) * V;  // its last k positions
            double sum = 0.0;
            for (size_t i = 0; i < k; i++) sum += nl_nll(last + i * V, V, lens->ids[begin + i + 1]);
            lens->sums[l] += sum;
        }
    }
    nl_state_set_observer(s, &attached);
}

int nl_lens_create(NlLens **out, const NlConfig *c, size_t batch, const int *ids, size_t n, size_t stride,
                   NlError *err) {
    *out = NULL;
    if (!nl_family_info(c->arch)->has_residual_stream) {
        nl_error(err, NL_ERR_ARG, "the logit lens reads a residual stream, which a recurrent (%s) model has not",
                 nl_name(NL_NAMES_ARCH, c->arch));
        return -1;
    }
    size_t T = (size_t)c->block_size, L = (size_t)c->n_layer, B = batch ? batch : 1;
    if (nl_eval_windows(n, T, stride) == 0 || stride > T) {
        nl_error(err, NL_ERR_ARG, "the logit lens needs a text of at least 2 characters and a stride of 1 to %zu", T);
        return -1;
    }
    NlLens *lens = calloc(1, sizeof *lens);
    if (lens) {
        *lens =
            (NlLens){.ids = ids, .n = n, .T = T, .D = (size_t)c->n_embd, .n_layer = L, .stride = stride, .room = B * T};
        lens->rows = malloc((L + 1) * B * T * lens->D * sizeof(float));
        lens->sums = calloc(L + 1, sizeof *lens->sums);
    }
    if (!lens || !lens->rows || !lens->sums) {
        nl_lens_free(lens);
        nl_error(err, NL_ERR_NOMEM, "out of memory for the logit lens");
        return -1;
    }
    *out = lens;
    return 0;
}

void nl_lens_free(NlLens *lens) {
    if (!lens) return;
    free(lens->rows);
    free(lens->sums);
    free(lens);
}

static void lens_attach(NlLens *lens, NlState *s) {
    const NlObserver *was = nl_state_observer(s);
    NlObserver obs = *was;  // the timer's half stays as it is
    lens->saved = *was;
    obs.watcher = lens;
    obs.residual = capture;
    obs.norm = was->norm ? pass_norm : NULL;
    obs.branch = was->branch ? pass_branch : NULL;
    obs.state = was->state ? pass_state : NULL;
    obs.site = was->site ? pass_site : NULL;
    nl_state_set_observer(s, &obs);
}

int nl_lens_eval(NlLens *lens, NlState *s, const NlEvalOptions *opts, NlEvalResult *out, NlError *err) {
    NlEvalOptions eo = opts ? *opts : (NlEvalOptions){0};
    eo.stride = lens->stride;
    lens_attach(lens, s);
    int rc = nl_eval_calls(&s, 1, lens->ids, lens->n, &eo, score_call, lens, out, err);
    nl_state_set_observer(s, &lens->saved);
    return rc;
}

int nl_lens_bits(const NlLens *lens, double *bits, NlError *err) {
    int rc = 0;
    for (size_t l = 0; l <= lens->n_layer; l++) {
        bits[l] = lens->sums[l] / (double)(lens->n - 1) / log(2.0);
        if (!isfinite(bits[l]) && rc == 0) {
            nl_error(err, NL_ERR_NUMERIC, "the logit lens after layer %zu has a non-finite loss", l);
            rc = -1;
        }
    }
    return rc;
}

int nl_lens(NlState *s, const int *ids, size_t n, size_t stride, double *bits, NlError *err) {
    NlLens *lens = NULL;
    NlEvalResult r;
    if (nl_lens_create(&lens, nl_state_config(s), nl_state_batch(s), ids, n, stride, err) != 0) return -1;
    int rc = nl_lens_eval(lens, s, NULL, &r, err);
    if (rc == 0) rc = nl_lens_bits(lens, bits, err);
    nl_lens_free(lens);
    return rc;
}
