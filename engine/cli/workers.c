// workers.c — what a run computes with: run states as the options ask (norm, placement, BatchNorm
// statistics, rounded activations), a profiler per state, a set of them per engine thread, and a sampler.
#define _GNU_SOURCE
#include <stdlib.h>

#include "models.h"
#include "process.h"
#include "workers.h"

// (NlRunOptions.threads); with warn, says so when the norm or placement differ from the model's training.
int make_state_as(const Options *o, const NlModel *model, int batch, int product_threads, int warn, NlState **state) {
    NlModelDesc d = model_desc(model);
    NlRunOptions run = {.norm = o->norm >= 0 ? (NlNormType)o->norm : d.norm,
                        .placement = o->placement >= 0 ? (NlPlacement)o->placement : d.placement,
                        .batch = batch,
                        .threads = product_threads,
                        .bn_stats = (NlBnStats)o->bn_stats,
                        .qk_norm = (NlQkNorm)o->qk_norm};
    // (o->norm < 0: not given; the state could take NL_NORM_AS_CONFIGURED, but the warning below
    // compares the two, so the model's own values are filled in here.)
    NlError err;
    if (nl_quant_state_create(state, model, &run, (NlQuant)o->quantize_act, &err) != 0) {
        if (err.code != NL_ERR_ARG) return fail(&err);
        // an override this model cannot run (BatchNorm's running statistics it lacks, a recurrent model's norm)
        int bn = (d.family->norms & 1u << NL_NORM_BATCHNORM) != 0 && run.norm == NL_NORM_BATCHNORM &&
                 run.bn_stats == NL_BN_RUNNING;
        msg_usage(o->cmd, "%s%s", err.msg, bn ? " (--bn-stats batch)" : "");
        return EXIT_USAGE;
    }
    char trained[64], as_run[64];
    int qk_trained = run_qk_norm(&d, NL_QK_NORM_AS_CONFIGURED), qk_run = run_qk_norm(&d, o->qk_norm);
    if (warn && (run.norm != d.norm || run.placement != d.placement || qk_run != qk_trained))
        msg_error("warning: the model was trained as %s; running it as %s",
                  run_name(trained, sizeof trained, d.arch, d.norm, d.placement, qk_trained),
                  run_name(as_run, sizeof as_run, d.arch, run.norm, run.placement, qk_run));
    if (warn && run.bn_stats == NL_BN_BATCH && run.norm != NL_NORM_BATCHNORM)
        msg_error("warning: --bn-stats batch has no effect: the model runs as %s", nl_name(NL_NAMES_NORM, run.norm));
    return 0;
}

// Attaches a profiler; with --trace it keeps the events of n_forward forward passes (of a recurrent
// model: of n_forward positions, each of which records per layer).
static int attach_profiler(const Options *o, const NlModel *model, NlState *state, size_t n_forward,
                           NlProfiler **prof) {
    NlModelDesc d = model_desc(model);
    // each layer as its family says, and 4 model-level components (6: slack)
    size_t per_forward = o->trace_out ? (size_t)d.n_layer * d.family->trace_events_per_layer + 6 : 0;
    NlError err;
    if (nl_profiler_create(prof, nl_state_config(state), n_forward * per_forward, o->counters, &err) != 0) {
        return fail(&err);
    }
    nl_state_set_profiler(state, *prof);
    return 0;
}

int workers_create(Workers *w, const Options *o, const NlModel *model, int n, int batch, int product_threads,
                   int profile, size_t n_forward) {
    w->n = n;
    w->states = calloc((size_t)n, sizeof *w->states);
    w->profs = calloc((size_t)n, sizeof *w->profs);
    if (!w->states || !w->profs) {
        w->n = 0;
        msg_error("out of memory");
        return EXIT_DATA;
    }
    int rc = 0;
    for (int i = 0; !rc && i < n; i++) {
        rc = make_state_as(o, model, batch, product_threads, i == 0, &w->states[i]);
        if (!rc && profile) rc = attach_profiler(o, model, w->states[i], n_forward, &w->profs[i]);
    }
    return rc;
}

NlProfiler *workers_profile(Workers *w) {
    if (w->n < 1 || !w->profs[0]) return NULL;
    for (int i = 1; i < w->n; i++) nl_profiler_merge(w->profs[0], w->profs[i]);
    return w->profs[0];
}

void workers_free(Workers *w) {
    for (int i = 0; i < w->n; i++) {
        nl_state_free(w->states[i]);
        nl_profiler_free(w->profs[i]);
    }
    free(w->states);
    free(w->profs);
    *w = (Workers){0};
}

#define REPEAT_LAST_N_MAX 1048576  // --repeat-last-n -1 of a model without a window

int make_sampler(const Options *o, const NlModel *model, uint64_t seed, const int *ids, size_t n, NlSampler **out) {
    NlSamplerParams params = o->sampling;
    size_t T = model_context(model);
    NlError err;
    if (params.repeat_last_n < 0) params.repeat_last_n = T < REPEAT_LAST_N_MAX ? (int)T : REPEAT_LAST_N_MAX;
    if (nl_sampler_create(out, model_desc(model).vocab_size, params, seed, &err) != 0) return fail(&err);
    for (size_t i = 0; i < n; i++) nl_sampler_accept(*out, ids[i]);
    return 0;
}
