// patch.c — activation patching of the residual stream (normlab_lab.h's nl_patch): the clean run's
// stream kept at every layer boundary, then the corrupted text run once per (layer, position) cell
// with one row of it put back, through the observer's patch callback (observe.h). Every run, the
// clean and corrupted ones too, has the same observer attached, so that each takes the same code
// path (a watcher makes the last layer compute every row): an empty patch changes no bit.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "normlab.h"
#include "normlab_internal.h"
#include "normlab_lab.h"

typedef struct {
    size_t n, D;
    float *clean;  // (L + 1, n, D) the clean run's stream at each boundary
    int keep;  // 1: the run being made is the clean one, whose stream is kept
    long layer;  // the boundary patched (-1: none)
    size_t pos;  // the row patched
} Patcher;

static void patch_stream(void *watcher, int layer, float *x, size_t rows, size_t width) {
    Patcher *p = watcher;
    float *clean = p->clean + (size_t)layer * p->n * p->D;
    if (rows != p->n || width != p->D) return;  // not this module's call shape (asserted by nl_patch)
    if (p->keep) memcpy(clean, x, rows * width * sizeof *x);
    else if ((long)layer == p->layer) memcpy(x + p->pos * width, clean + p->pos * width, width * sizeof *x);
}

// The most likely token of logits (V) (ties: the lowest id).
static int top_token(const float *logits, size_t V) {
    size_t best = 0;
    for (size_t v = 1; v < V; v++)
        if (logits[v] > logits[best]) best = v;
    return (int)best;
}

static double metric(const float *logits, int target, int foil) { return (double)logits[target] - logits[foil]; }

// The corrupted text with cell (layer, pos) patched (layer -1: none): its metric.
static double run_cell(NlState *s, Patcher *p, const int *corrupt, long layer, size_t pos, int target, int foil) {
    p->keep = 0, p->layer = layer, p->pos = pos;
    return metric(nl_forward(s, corrupt, p->n, 0, 1), target, foil);
}

static int check_inputs(const NlState *s, size_t n, const NlPatchOptions *opts, NlError *err) {
    const NlConfig *c = nl_state_config(s);
    if (!nl_family_info(c->arch)->has_residual_stream)
        return nl_error(err, NL_ERR_ARG, "arch %s has no residual stream to patch", nl_name(NL_NAMES_ARCH, c->arch));
    if (n == 0 || n > (size_t)c->block_size)
        return nl_error(err, NL_ERR_ARG, "the texts are %zu tokens: patching needs 1 to %d (the context window)", n,
                        c->block_size);
    for (int k = 0; k < 2; k++) {
        int id = k ? opts->foil : opts->target;
        if (id < -1 || id >= c->vocab_size)
            return nl_error(err, NL_ERR_ARG, "%s id %d is outside the vocabulary (0..%d)", k ? "foil" : "target", id,
                            c->vocab_size - 1);
    }
    return 0;
}

// The clean and corrupted runs: the clean stream kept, the target and foil resolved, both metrics.
// clean_logits (V): scratch for the clean run's logits.
static int baselines(NlState *s, Patcher *p, const int *clean, const int *corrupt, const NlPatchOptions *opts,
                     float *clean_logits, NlPatchMap *map, NlError *err) {
    size_t V = (size_t)nl_state_config(s)->vocab_size;
    p->keep = 1, p->layer = -1;
    memcpy(clean_logits, nl_forward(s, clean, p->n, 0, 1), V * sizeof *clean_logits);
    p->keep = 0;
    const float *logits = nl_forward(s, corrupt, p->n, 0, 1);
    map->target = opts->target >= 0 ? opts->target : top_token(clean_logits, V);
    map->foil = opts->foil >= 0 ? opts->foil : top_token(logits, V);
    if (map->target == map->foil)
        return nl_error(err, NL_ERR_ARG, "target and foil are both token %d (%s): give --target and --foil, two ids",
                        map->target, opts->target < 0 && opts->foil < 0 ? "the top token of both runs" : "as chosen");
    map->clean_diff = metric(clean_logits, map->target, map->foil);
    map->corrupt_diff = metric(logits, map->target, map->foil);
    if (!isfinite(map->clean_diff) || !isfinite(map->corrupt_diff) || map->clean_diff == map->corrupt_diff)
        return nl_error(err, NL_ERR_ARG,
                        "the clean and corrupted runs give logit[%d] - logit[%d] = %g and %g: nothing to recover",
                        map->target, map->foil, map->clean_diff, map->corrupt_diff);
    return 0;
}

int nl_patch(NlState *s, const int *clean, const int *corrupt, size_t n, const NlPatchOptions *opts, NlPatchMap *map,
             NlError *err) {
    const NlConfig *c = nl_state_config(s);
    memset(map, 0, sizeof *map);
    if (check_inputs(s, n, opts, err) != 0) return -1;
    size_t L = (size_t)c->n_layer, D = (size_t)c->n_embd, cells = (L + 1) * n;
    Patcher p = {.n = n, .D = D, .clean = malloc((L + 1) * n * D * sizeof(float)), .layer = -1};
    float *clean_logits = malloc((size_t)c->vocab_size * sizeof *clean_logits);
    map->layers = L + 1, map->positions = n;
    map->diff = malloc(cells * sizeof *map->diff);
    map->recovered = malloc(cells * sizeof *map->recovered);
    if (!p.clean || !clean_logits || !map->diff || !map->recovered) {
        free(p.clean);
        free(clean_logits);
        return nl_error(err, NL_ERR_NOMEM, "out of memory for a patching map of %zu cells", cells);
    }
    NlObserver saved = *nl_state_observer(s), obs = {.watcher = &p, .patch = patch_stream};
    nl_state_set_observer(s, &obs);
    int rc = baselines(s, &p, clean, corrupt, opts, clean_logits, map, err);
    double start = nl_clock_seconds(), span = map->clean_diff - map->corrupt_diff;
    for (size_t l = 0; rc == 0 && l <= L; l++) {
        for (size_t t = 0; t < n; t++) {
            double d = run_cell(s, &p, corrupt, (long)l, t, map->target, map->foil);
            map->diff[l * n + t] = d;
            map->recovered[l * n + t] = (d - map->corrupt_diff) / span;
        }
        if (opts->progress) opts->progress((l + 1) * n, cells, nl_clock_seconds() - start, opts->progress_ctx);
    }
    map->seconds = nl_clock_seconds() - start;
    nl_state_set_observer(s, &saved);
    free(p.clean);
    free(clean_logits);
    return rc;
}

void nl_patch_map_free(NlPatchMap *map) {
    free(map->diff);
    free(map->recovered);
    map->diff = map->recovered = NULL;
}
