// generate.c — prefill the prompt, then sample and decode one token at a time over the KV cache.
#define _POSIX_C_SOURCE 200809L
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stdatomic.h>
#include <stdint.h>

#include "normlab.h"
#include "family.h"
#include "observe.h"
#include "parallel.h"

// The B windows of cached tokens, all of the same length: window b is rows[b * T .. b * T + len).
// A recurrent model has no window: its T is the prompt's length and len only counts positions.
typedef struct {
    int *rows;  // (B, T)
    int *packed;  // (B, T) scratch: the windows packed as (B, len) for nl_forward_batch
    size_t B, T, len;
    int recurrent;
} Windows;

// (B, len) contiguous copy of the windows.
static const int *packed(Windows *w) {
    for (size_t b = 0; b < w->B; b++) memcpy(w->packed + b * w->len, w->rows + b * w->T, w->len * sizeof(int));
    return w->packed;
}

// Feeds toks (B) after the len tokens in the caches; returns the next logits (B, V).
static const float *advance(NlState *s, Windows *w, const int *toks, int exact, NlGenerateStats *st) {
    size_t B = w->B, T = w->T;
    if (w->recurrent) {  // the state carries everything: one step, never a shift
        w->len++;
        return nl_forward_batch(s, toks, B, 1, w->len - 1, 1);
    }
    if (exact) {  // nanoGPT: append, crop to the last T tokens, recompute them all
        size_t keep = w->len < T ? w->len + 1 : T;
        for (size_t b = 0; b < B; b++) {
            int *row = w->rows + b * T;
            memmove(row, row + (w->len + 1 - keep), (keep - 1) * sizeof *row);
            row[keep - 1] = toks[b];
        }
        w->len = keep;
        return nl_forward_batch(s, packed(w), B, keep, 0, 1);
    }
    if (w->len < T) {  // room left: one decoding step against the caches
        for (size_t b = 0; b < B; b++) w->rows[b * T + w->len] = toks[b];
        w->len++;
        return nl_forward_batch(s, toks, B, 1, w->len - 1, 1);
    }
    // Full: a context shift keeps the most recent T/2 (the new token included) at positions 0..T/2-1.
    size_t keep = T / 2 > 0 ? T / 2 : 1;
    for (size_t b = 0; b < B; b++) {
        int *row = w->rows + b * T;
        memmove(row, row + (T - keep + 1), (keep - 1) * sizeof *row);
        row[keep - 1] = toks[b];
    }
    w->len = keep;
    st->context_shifts++;
    return nl_forward_batch(s, packed(w), B, keep, 0, 1);
}

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
    const NlConfig *c = nl_state_config(s);
    size_t window = nl_family_of(c->arch)->window(c);
    int recurrent = !nl_family_info(c->arch)->windowed;  // no window to fill or shift
    if (recurrent && opts->exact_window) {
        nl_error(err, NL_ERR_ARG, "exact_window applies to transformers; a recurrent model has no window");
        return -1;
    }
    size_t T = recurrent ? n_prompt : window, V = (size_t)c->vocab_size;
    const NlObserver *obs = nl_state_observer(s);
    Windows w = {
        malloc(B * T * sizeof(int)), malloc(B * T * sizeof(int)), B, T, n_prompt < T ? n_prompt : T, recurrent};
    int *toks = malloc(B * sizeof *toks);
    char *done = calloc(B, 1);  // (B) the streams that emit ended (NL_EMIT_DONE)
    float *first = malloc(B * V * sizeof *first);  // (B, V) the prompt's logits, one row per stream
    if (!w.rows || !w.packed || !toks || !done || !first) {
        free(w.rows);
        free(w.packed);
        free(toks);
        free(done);
        free(first);
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        return -1;
    }
    for (size_t b = 0; b < B; b++) memcpy(w.rows + b * T, prompt + (n_prompt - w.len), w.len * sizeof(int));
    st->prompt_used = w.len;
    nl_obs_set_phase(obs, NL_PHASE_PREFILL);
    // The streams share the prompt: prefill it once, as stream 0, and copy the cache to the others.
    double pw = nl_obs_begin(obs), t0 = nl_clock_seconds();
    const float *logits = nl_forward(s, w.rows, w.len, 0, 1);  // (1, V)
    for (size_t b = 0; b < B; b++) {
        if (b > 0) nl_state_copy_cache(s, 0, b, w.len);
        memcpy(first + b * V, logits, V * sizeof *first);
    }
    logits = first;
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
        logits = advance(s, &w, toks, opts->exact_window, st);
        double step = nl_clock_seconds() - t0;
        st->decode_seconds += step;
        if (st->context_shifts > shifts) st->shift_seconds += step;
        nl_obs_add_wall(obs, pw);
        st->decode_tokens++;
    }
    free(w.rows);
    free(w.packed);
    free(toks);
    free(done);
    free(first);
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
