// generate.c — prefill the prompt, then sample and decode one token at a time over the KV cache.
#define _POSIX_C_SOURCE 200809L
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "normlab.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// Appends tok to window (len of at most cap tokens), dropping the oldest when full.
static void push(int *window, size_t *len, size_t cap, int tok) {
    if (*len == cap) {
        memmove(window, window + 1, (cap - 1) * sizeof *window);
        (*len)--;
    }
    window[(*len)++] = tok;
}

// Feeds tok after the `len` tokens already in the cache; returns the next logits.
static const float *advance(NlState *s, int *window, size_t *len, size_t T, int tok, int exact,
                            NlGenerateStats *st) {
    if (exact) {  // nanoGPT: crop to the last T tokens and recompute them all
        push(window, len, T, tok);
        return nl_forward(s, window, *len, 0, 1);
    }
    if (*len < T) {
        window[(*len)++] = tok;
        return nl_forward(s, &tok, 1, *len - 1, 1);
    }
    // Context shift: keep the most recent T/2 tokens (tok included) at positions 0..T/2-1.
    size_t keep = T / 2 > 0 ? T / 2 : 1;
    memmove(window, window + (T - keep + 1), (keep - 1) * sizeof *window);
    window[keep - 1] = tok;
    *len = keep;
    st->context_shifts++;
    return nl_forward(s, window, keep, 0, 1);
}

// Samples the next token; timed as the "sampling" component when profiling.
static int sample(NlSampler *sampler, const float *logits, NlProfiler *prof) {
    double w = nl_profiler_begin(prof);
    int tok = nl_sampler_sample(sampler, logits);
    nl_profiler_record(prof, w, -1, NL_COMP_SAMPLING, 1, 1, 0);
    nl_profiler_add_wall(prof, w);
    return tok;
}

int nl_generate(NlState *s, NlSampler *sampler, const int *prompt, size_t n_prompt,
                const NlGenerateOptions *opts, NlEmitFn emit, void *ctx, NlGenerateStats *st, NlError *err) {
    assert(n_prompt >= 1);
    memset(st, 0, sizeof *st);
    size_t T = (size_t)nl_state_config(s)->block_size;
    NlProfiler *prof = nl_state_profiler(s);
    int *window = malloc(T * sizeof *window);  // (T) the tokens whose keys and values are cached
    if (!window) { snprintf(err->msg, sizeof err->msg, "out of memory"); return -1; }
    size_t len = n_prompt < T ? n_prompt : T;
    memcpy(window, prompt + (n_prompt - len), len * sizeof *window);
    st->prompt_used = len;
    nl_profiler_set_phase(prof, NL_PHASE_PREFILL);
    double w = nl_profiler_begin(prof), t0 = now();
    const float *logits = nl_forward(s, window, len, 0, 1);
    st->prefill_seconds = now() - t0;
    nl_profiler_add_wall(prof, w);
    nl_profiler_set_phase(prof, NL_PHASE_DECODE);
    int rc = 0;
    for (size_t i = 0; i < opts->n_new; i++) {
        int tok = sample(sampler, logits, prof);
        if (tok < 0) {
            snprintf(err->msg, sizeof err->msg, "the model produced a non-finite logit after %zu generated tokens", i);
            rc = -1;
            break;
        }
        if (emit(tok, ctx) != 0) { rc = 1; break; }
        if (i + 1 == opts->n_new) break;  // no logits needed after the last token
        w = nl_profiler_begin(prof);
        t0 = now();
        logits = advance(s, window, &len, T, tok, opts->exact_window, st);
        st->decode_seconds += now() - t0;
        nl_profiler_add_wall(prof, w);
        st->decode_tokens++;
    }
    free(window);
    return rc;
}
