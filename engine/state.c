// state.c — a run state: the model, its config as run, the observer, and the family's own state,
// reached only through the family's table (family.h).
#include <stdint.h>
#include <stdlib.h>

#include "family.h"
#include "model.h"
#include "normlab.h"
#include "normlab_internal.h"
#include "parallel.h"

struct NlState {
    const NlModel *model;
    NlConfig cfg;  // the model's config with the run options applied
    size_t batch;  // B: sequences per call, at most
    NlObserver obs;  // the lab's (or an embedder's) callbacks; all-NULL: none, and no clock reads
    const NlFamily *family;
    void *impl;  // the family's state
    NlPool *pool;  // threads for the products of one call (NULL: the caller alone)
};

int nl_state_create_hooked(NlState **out, const NlModel *model, const NlRunOptions *opts, NlLinearInputHook hook,
                           NlError *err) {
    *out = NULL;
    if (nl_model_shapes_only(model)) {  // its weights were never checked for NaN or Inf
        nl_error(err, NL_ERR_ARG, "the model was loaded with shapes_only: it cannot run");
        return -1;
    }
    NlState *s = calloc(1, sizeof *s);
    if (!s) {
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        return -1;
    }
    s->model = model;
    s->cfg = *nl_model_config(model);
    s->batch = 1;
    int threads = 1;
    if (opts) {
        if (opts->norm != NL_NORM_AS_CONFIGURED) s->cfg.norm = opts->norm;
        if (nl_placement_named(opts->placement) && opts->placement != s->cfg.placement &&
            nl_family_info(s->cfg.arch)->has_placement &&
            nl_recipe_of_placement(&s->cfg.recipe, opts->placement, s->cfg.n_layer, s->cfg.mix_post_layers, err) != 0) {
            free(s);
            return -1;
        }
        if (nl_placement_named(opts->placement)) s->cfg.placement = opts->placement;
        if (opts->qk_norm != NL_QK_NORM_AS_CONFIGURED)  // on: the model's own kind, else per head
            s->cfg.qk_norm = opts->qk_norm == NL_QK_NORM_OFF ? NL_QK_OVER_NONE
                             : s->cfg.qk_norm                ? s->cfg.qk_norm
                                                             : NL_QK_OVER_HEAD;
        s->batch = opts->batch > 0 ? (size_t)opts->batch : 1;
        threads = opts->threads > 0 ? opts->threads : 1;
    }
    s->family = nl_family_of(s->cfg.arch);
    int cpus = nl_cpus_available();
    s->pool = nl_pool_create(threads < cpus ? threads : cpus);  // NULL when refused: the same results on one thread
    if (s->family->create(&s->impl, nl_model_weights(model), nl_model_config(model), &s->cfg, opts, hook, s->batch,
                          s->pool, &s->obs, err) != 0) {
        nl_pool_free(s->pool);
        free(s);
        return -1;
    }
    *out = s;
    return 0;
}

int nl_state_create(NlState **out, const NlModel *model, const NlRunOptions *opts, NlError *err) {
    return nl_state_create_hooked(out, model, opts, (NlLinearInputHook){NULL, NULL}, err);
}

void nl_state_free(NlState *s) {
    if (!s) return;
    s->family->destroy(s->impl);
    nl_pool_free(s->pool);
    free(s);
}

const NlConfig *nl_state_config(const NlState *s) { return &s->cfg; }
const NlModel *nl_state_model(const NlState *s) { return s->model; }
size_t nl_state_batch(const NlState *s) { return s->batch; }
void nl_state_set_observer(NlState *s, const NlObserver *obs) { s->obs = obs ? *obs : (NlObserver){0}; }
const NlObserver *nl_state_observer(const NlState *s) { return &s->obs; }

const float *nl_forward_batch(NlState *s, const int *tokens, size_t B, size_t n, size_t pos, size_t n_logits) {
    return s->family->forward(s->impl, tokens, B, n, pos, n_logits);
}

const float *nl_forward(NlState *s, const int *tokens, size_t n, size_t pos, size_t n_logits) {
    return nl_forward_batch(s, tokens, 1, n, pos, n_logits);
}

void nl_state_copy_cache(NlState *s, size_t from, size_t to, size_t n) { s->family->copy(s->impl, from, to, n); }
int nl_state_shift(NlState *s, size_t seq, size_t keep, size_t drop, size_t len) {
    return s->family->shift && seq < s->batch ? s->family->shift(s->impl, seq, keep, drop, len) : -1;
}

const float *nl_state_readout(NlState *s, const float *x, size_t B, size_t n, size_t n_logits) {
    return s->family->lab_readout ? s->family->lab_readout(s->impl, x, B, n, n_logits, 0) : NULL;
}

const float *nl_state_readout_head(NlState *s, const float *x, size_t B, size_t n, size_t n_logits) {
    return s->family->lab_readout ? s->family->lab_readout(s->impl, x, B, n, n_logits, 1) : NULL;
}
