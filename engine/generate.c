// generate.c — prefill the prompt, then sample and decode one token at a time, each group of streams
// through one sequence context (context.c: the KV cache, its window and its shift).
#define _POSIX_C_SOURCE 200809L
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stdatomic.h>
#include <stdint.h>

#include "normlab.h"
#include "observe.h"
#include "parallel.h"

// Samples every stream's next token; timed as the "sampling" component when profiling.
static int sample_all(NlSampler *const *samplers, const float *logits, size_t B, size_t V, int *toks,
                      const NlObserver *obs) {
    double w = nl_obs_begin(obs);
    int ok = 1;
    for (size_t b = 0; b < B; b++) ok &= (toks[b] = nl_sampler_sample(samplers[b], logits + b * V)) >= 0;
    nl_obs_record(obs, w, -1, NL_COMP_SAMPLING, B, 1, 0);
    nl_obs_add_wall(obs, w);
    return ok;
}

// One group of B streams (B <= the state's batch) on state s; emit gets the group's own stream index.
static int generate_group(NlState *s, NlSampler *const *samplers, size_t B, const int *prompt, size_t n_prompt,
                          const NlGenerateOptions *opts, NlEmitFn emit, void *ctx, NlGenerateStats *st, NlError *err) {
    assert(n_prompt >= 1 && B >= 1);
    memset(st, 0, sizeof *st);
    size_t V = (size_t)nl_state_config(s)->vocab_size;
    const NlObserver *obs = nl_state_observer(s);
    NlContext *text = NULL;  // the group's windows, its one shift path
    NlContextOptions co = {.streams = B, .exact_window = opts->exact_window, .keep = opts->keep};
    if (nl_context_create(&text, s, &co, err) != 0) return -1;
    int *toks = malloc(B * sizeof *toks);
    char *done = calloc(B, 1);  // (B) the streams that emit ended (NL_EMIT_DONE)
    if (!toks || !done) {
        nl_context_free(text);
        free(toks);
        free(done);
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        return -1;
    }
    NlContextPosition pos;
    nl_obs_set_phase(obs, NL_PHASE_PREFILL);
    // The streams share the prompt: the context prefills it once, as stream 0, and copies the cache.
    double pw = nl_obs_begin(obs), t0 = nl_clock_seconds();
    const float *logits = nl_context_feed(text, prompt, 1, n_prompt, &pos);  // (B, V)
    st->prompt_used = pos.len;
    st->prefill_seconds = nl_clock_seconds() - t0;
    nl_obs_add_wall(obs, pw);
    nl_obs_set_phase(obs, NL_PHASE_DECODE);
    int rc = 0;
    size_t n_done = 0;
    for (size_t i = 0; i < opts->n_new && rc == 0; i++) {
        t0 = nl_clock_seconds();
        int sampled = sample_all(samplers, logits, B, V, toks, obs);
        if (i > 0) st->decode_seconds += nl_clock_seconds() - t0;  // a decoded token's time includes its sampling
        if (!sampled) {
            nl_error(err, NL_ERR_NUMERIC, "the model produced a non-finite logit after %zu generated tokens", i);
            rc = -1;
            break;
        }
        for (size_t b = 0; b < B && rc == 0; b++) {
            int said = done[b] ? NL_EMIT_CONTINUE : emit((int)b, toks[b], ctx);
            if (said == NL_EMIT_DONE) done[b] = 1, n_done++;
            else if (said != NL_EMIT_CONTINUE) rc = 1;
        }
        if (rc || n_done == B || i + 1 == opts->n_new) break;  // no logits needed after the last token
        pw = nl_obs_begin(obs);
        t0 = nl_clock_seconds();
        size_t shifts = st->context_shifts;
        logits = nl_context_feed(text, toks, B, 1, &pos);
        double step = nl_clock_seconds() - t0;
        st->context_shifts = pos.shifts;
        st->decode_seconds += step;
        if (st->context_shifts > shifts) st->shift_seconds += step;
        nl_obs_add_wall(obs, pw);
        st->decode_tokens++;
    }
    nl_context_free(text);
    free(toks);
    free(done);
    return rc;
}

// ---- groups of streams on worker threads

typedef struct {
    NlState *const *states;
    NlSampler *const *samplers;
    size_t B, group, n_groups;
    const int *prompt;
    size_t n_prompt;
    const NlGenerateOptions *opts;
    NlGenerateStats *group_stats;  // (n_groups)
    int *group_rc;  // (n_groups)
    NlError *group_err;  // (n_groups)
    size_t n_workers;
    atomic_size_t first_failed;  // the first group that failed or was stopped (SIZE_MAX: none)
} GroupJob;

typedef struct {
    GroupJob *job;
    size_t first;  // the group's first stream
} GroupEmit;

static int emit_in_group(int stream, int token, void *ctx) {
    GroupEmit *g = ctx;
    const NlGenerateOptions *o = g->job->opts;
    return o->emit ? o->emit((int)g->first + stream, token, o->emit_ctx) : 0;
}

// Worker w of P runs groups w, w + P, ... (with at least P groups, every worker runs). After a group
// fails or is stopped, groups above it are skipped and those below still run, so the error
// reported is the first in stream order whatever P is.
static void group_worker(void *arg, int worker) {
    GroupJob *j = arg;
    for (size_t g = (size_t)worker; g < j->n_groups && g < atomic_load(&j->first_failed); g += j->n_workers) {
        size_t first = g * j->group, nb = j->B - first < j->group ? j->B - first : j->group;
        GroupEmit ge = {j, first};
        j->group_rc[g] = generate_group(j->states[worker], j->samplers + first, nb, j->prompt, j->n_prompt, j->opts,
                                        emit_in_group, &ge, &j->group_stats[g], &j->group_err[g]);
        if (j->group_rc[g] != 0) nl_atomic_lower(&j->first_failed, g);
    }
}

int nl_generate(NlState *const *states, size_t n_states, NlSampler *const *samplers, size_t B, const int *prompt,
                size_t n_prompt, const NlGenerateOptions *opts, NlGenerateStats *st, NlError *err) {
    size_t group = nl_state_batch(states[0]), n_groups = (B + group - 1) / group;
    for (size_t i = 1; i < n_states; i++)
        if (nl_state_batch(states[i]) != group) {
            nl_error(err, NL_ERR_ARG, "generate states differ in batch size (%zu and %zu)", group,
                     nl_state_batch(states[i]));
            return -1;
        }
    GroupJob j = {.states = states,
                  .samplers = samplers,
                  .B = B,
                  .group = group,
                  .n_groups = n_groups,
                  .prompt = prompt,
                  .n_prompt = n_prompt,
                  .opts = opts,
                  .group_stats = calloc(n_groups, sizeof(NlGenerateStats)),
                  .group_rc = calloc(n_groups, sizeof(int)),
                  .group_err = calloc(n_groups, sizeof(NlError)),
                  .n_workers = n_states < n_groups ? n_states : n_groups};  // no thread without a group
    atomic_init(&j.first_failed, SIZE_MAX);
    memset(st, 0, sizeof *st);
    if (!j.group_stats || !j.group_rc || !j.group_err) {
        free(j.group_stats);
        free(j.group_rc);
        free(j.group_err);
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        return -1;
    }
    double t0 = nl_clock_seconds();
    nl_parallel_run((int)j.n_workers, group_worker, &j);
    double elapsed = nl_clock_seconds() - t0;
    int rc = 0;
    for (size_t g = 0; g < n_groups; g++) {  // the first error in stream order; else the totals
        if (rc == 0 && j.group_rc[g] != 0) {
            rc = j.group_rc[g];
            if (rc < 0) *err = j.group_err[g];
        }
        NlGenerateStats *s = &j.group_stats[g];
        st->prompt_used = s->prompt_used;
        st->prefill_seconds = s->prefill_seconds > st->prefill_seconds ? s->prefill_seconds : st->prefill_seconds;
        // steps: every group takes the same number, but for streams ended early (NL_EMIT_DONE)
        if (s->decode_tokens > st->decode_tokens) st->decode_tokens = s->decode_tokens;
        if (s->context_shifts > st->context_shifts) st->context_shifts = s->context_shifts;
        st->shift_seconds += s->shift_seconds / (double)j.n_workers;  // (each worker's groups run in turn)
    }
    // Groups overlap in time: decoding is the run's wall time less one prefill.
    st->decode_seconds = n_groups == 1 ? j.group_stats[0].decode_seconds : elapsed - st->prefill_seconds;
    free(j.group_stats);
    free(j.group_rc);
    free(j.group_err);
    return rc;
}
