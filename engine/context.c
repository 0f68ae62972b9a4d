// context.c — one state's sequences as text goes in: each feed runs its ids after the cached ones
// and returns the logits after them; a transformer's full window shifts (the last T/2 tokens run
// again at positions 0..T/2-1, as llama.cpp's context shift) or, with exact_window, every feed
// recomputes the last T tokens (nanoGPT's sampler); a recurrent model's state carries everything.
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "normlab.h"
#include "normlab_internal.h"

struct NlContext {
    NlState *state;  // borrowed
    size_t B, T, V;  // sequences, window (SIZE_MAX: recurrent), vocabulary
    int exact_window;
    int rotates;  // the state shifts its cache in place (RoPE)
    size_t keep;  // tokens at the start a RoPE shift keeps
    int *rows;  // (B, T) a transformer's windows: sequence b's cached tokens are rows[b * T .. b * T + len)
    int *packed;  // (B, T) scratch: the windows packed as (B, len) for nl_forward_batch
    float *shared;  // (B, V) with B > 1: the logits of a feed shared by every sequence, one row each
    NlContextPosition pos;
};

size_t nl_context_shift_keep(size_t T) { return T / 2 > 0 ? T / 2 : 1; }

int nl_context_create(NlContext **out, NlState *state, const NlContextOptions *opts, NlError *err) {
    *out = NULL;
    const NlConfig *c = nl_state_config(state);
    NlContextOptions none = {0};
    if (!opts) opts = &none;
    size_t B = opts->streams ? opts->streams : 1;
    int windowed = nl_family_info(c->arch)->windowed;
    if (!windowed && opts->exact_window)
        return nl_error(err, NL_ERR_ARG, "exact_window applies to transformers; a recurrent model has no window");
    if (B > nl_state_batch(state))
        return nl_error(err, NL_ERR_ARG, "a context of %zu sequences on a state of %zu", B, nl_state_batch(state));
    NlContext *x = calloc(1, sizeof *x);
    if (!x) return nl_error(err, NL_ERR_NOMEM, "out of memory");
    *x = (NlContext){.state = state,
                     .B = B,
                     .T = nl_model_window(nl_state_model(state)),
                     .V = (size_t)c->vocab_size,
                     .exact_window = opts->exact_window,
                     .rotates = windowed && nl_state_shift(state, 0, 0, 0, 0) == 0,
                     .keep = opts->keep};
    int fail = windowed &&
               (!(x->rows = malloc(B * x->T * sizeof *x->rows)) || !(x->packed = malloc(B * x->T * sizeof *x->packed)));
    fail |= B > 1 && !(x->shared = malloc(B * x->V * sizeof *x->shared));
    if (fail) {
        nl_context_free(x);
        return nl_error(err, NL_ERR_NOMEM, "out of memory");
    }
    *out = x;
    return 0;
}

void nl_context_free(NlContext *x) {
    if (!x) return;
    free(x->rows);
    free(x->packed);
    free(x->shared);
    free(x);
}

// The windows of the first `rows` sequences become the last `keep` of their tokens followed by ids
// (rows, n), and run again from position 0; the logits after them (rows, V).
static const float *refill(NlContext *x, const int *ids, size_t rows, size_t n, size_t keep) {
    size_t T = x->T, from_new = n < keep ? n : keep, from_old = keep - from_new;
    for (size_t b = 0; b < rows; b++) {
        int *row = x->rows + b * T;
        memmove(row, row + x->pos.len - from_old, from_old * sizeof *row);
        memcpy(row + from_old, ids + b * n + n - from_new, from_new * sizeof *row);
        memcpy(x->packed + b * keep, row, keep * sizeof *row);
    }
    x->pos.len = keep;
    return nl_forward_batch(x->state, x->packed, rows, keep, 0, 1);
}

// ids (rows, n) at positions len..len+n-1 of the first `rows` sequences, over their caches.
static const float *append(NlContext *x, const int *ids, size_t rows, size_t n) {
    for (size_t b = 0; x->rows && b < rows; b++) memcpy(x->rows + b * x->T + x->pos.len, ids + b * n, n * sizeof *ids);
    size_t at = x->pos.len;
    x->pos.len += n;
    return nl_forward_batch(x->state, ids, rows, n, at, 1);
}

// RoPE's shift of the first `rows` sequences, when n ids then fit: the first keep tokens stay, half
// of the rest go, the cache turned in place. 0 when done; -1 (nothing changed) when it cannot be.
static int rotate(NlContext *x, size_t rows, size_t n) {
    size_t T = x->T, len = x->pos.len, keep = x->keep < len ? x->keep : len, drop = (len - keep) / 2;
    if (!x->rotates || drop == 0 || len - drop + n > T) return -1;
    for (size_t b = 0; b < rows; b++) {
        int *row = x->rows + b * T;
        if (nl_state_shift(x->state, b, keep, drop, len) != 0) return -1;  // (only the first can refuse)
        memmove(row + keep, row + keep + drop, (len - keep - drop) * sizeof *row);
    }
    x->pos.len = len - drop;
    return 0;
}

// The feed's step, by the policy: a recurrent model's or a window with room appends; else nanoGPT's
// crop, an empty window's (the last T of the ids), or a context shift (in place with RoPE).
static const float *step(NlContext *x, const int *ids, size_t rows, size_t n) {
    size_t T = x->T, len = x->pos.len;
    if (x->exact_window) return refill(x, ids, rows, n, len + n < T ? len + n : T);
    if (!x->rows || len + n <= T) return append(x, ids, rows, n);
    if (len == 0) return refill(x, ids, rows, n, T);
    x->pos.shifts++;
    if (rotate(x, rows, n) == 0) return append(x, ids, rows, n);
    return refill(x, ids, rows, n, nl_context_shift_keep(T));
}

const float *nl_context_feed(NlContext *x, const int *ids, size_t rows, size_t n, NlContextPosition *pos) {
    assert(n >= 1 && (rows == x->B || (rows == 1 && x->pos.len == 0)));
    const float *logits = step(x, ids, rows, n);  // (rows, V)
    if (rows < x->B) {  // a shared feed: run once as sequence 0, its cache and window copied to the others
        for (size_t b = 0; b < x->B; b++) {
            if (b > 0) nl_state_copy_cache(x->state, 0, b, x->pos.len);
            if (b > 0 && x->rows) memcpy(x->rows + b * x->T, x->rows, x->pos.len * sizeof *x->rows);
            memcpy(x->shared + b * x->V, logits, x->V * sizeof *x->shared);
        }
        logits = x->shared;
    }
    if (pos) *pos = x->pos;
    return logits;
}
