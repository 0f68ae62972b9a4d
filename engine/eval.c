// eval.c — average negative log-likelihood of a text under the model: windows batched B to a
// forward call, groups of windows shared among worker threads, losses summed in a fixed order.
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "normlab.h"
#include "normlab_internal.h"
#include "observe.h"
#include "parallel.h"

// ln sum exp(logits - max), and the max: the two halves of a log-sum-exp taken apart. The weights are
// nl_exp_weights' (each within 2 ulp of e^x), summed in double: so the sum is within 2.4e-7 of
// itself, and its log within 2.4e-7 absolute of libm's in double (tests/test_kernels.c). A NaN logit
// gives a NaN.
static double log_sum_below_max(const float *logits, size_t V, double *max_out) {
    float max = nl_max(logits, V);
    *max_out = max;
    return log(nl_exp_weights(NULL, logits, V, max, 1.0f));
}

double nl_nll(const float *logits, size_t V, int target) {
    double max, ls = log_sum_below_max(logits, V, &max);
    return ls - ((double)logits[target] - max);
}

double nl_logsumexp(const float *logits, size_t V) {
    double max, ls = log_sum_below_max(logits, V, &max);
    return max + ls;
}

double nl_softmax_entropy(const float *logits, size_t V, double *lse) {
    float max = nl_max(logits, V), w[512];  // the weights a chunk at a time
    double sum = 0.0, weighted = 0.0;  // sum w, sum w (logit - max)
    for (size_t at = 0; at < V; at += 512) {
        size_t n = V - at < 512 ? V - at : 512;
        sum += nl_exp_weights(w, logits + at, n, max, 1.0f);
        for (size_t v = 0; v < n; v++) weighted += (double)w[v] * ((double)logits[at + v] - max);
    }
    *lse = max + log(sum);
    return log(sum) - weighted / sum;
}

// Window w scores the inputs [begin, end) (input p predicts ids[p + 1]) from inputs [start, end).
// Window 0 is the first min(T, inputs) inputs, all scored; each later one moves `stride` inputs and
// scores the new ones. Every window but a lone first one is T inputs long. With chunks of N instead,
// window w is chunk w: inputs [wN, wN + N - 1), its last N - 1 - N/2 scored.
typedef struct {
    size_t start, begin, end;
} Window;

typedef struct {
    NlState *const *states;
    const int *ids;
    size_t n_inputs, T, V, stride, B, n_windows, n_groups;
    size_t chunk;  // 0, or llama-perplexity's chunks of this many ids
    int chunk_bos;  // the id put first in each chunk, or -1
    size_t n_scored;  // inputs the windows score
    int *tokens;  // (n_states, B, T) scratch: a group's windows packed
    double *group_nll;  // (n_groups) loss of each group, its windows summed in order
    double *group_sq;  // (n_groups) the same for the squared losses
    size_t *group_bad;  // (n_groups) first character with a non-finite loss, or SIZE_MAX
    size_t n_workers;
    atomic_size_t first_bad, done_chars;  // the first group with a non-finite loss (SIZE_MAX: none)
    const NlEvalOptions *opts;  // progress and the scored hook
    NlEvalCallFn call_done;  // the lab's hook after each call (NULL: none)
    void *call_ctx;
    double start;  // nl_clock_seconds() when the call began
} EvalJob;

static Window window_at(const EvalJob *j, size_t w) {
    if (j->chunk) return (Window){w * j->chunk, w * j->chunk + j->chunk / 2, w * j->chunk + j->chunk - 1};
    size_t first = j->n_inputs < j->T ? j->n_inputs : j->T;
    size_t end = w == 0 ? first : first + w * j->stride, begin = w == 0 ? 0 : end - j->stride;
    if (end > j->n_inputs) end = j->n_inputs;
    return (Window){end > j->T ? end - j->T : 0, begin, end};
}

// Scores group g's windows in one forward call of state s; returns their summed loss.
static double eval_group(EvalJob *j, size_t worker, size_t g, size_t *bad, double *sq) {
    NlState *s = j->states[worker];
    size_t w0 = g * j->B, nb = j->n_windows - w0 < j->B ? j->n_windows - w0 : j->B;
    int *tokens = j->tokens + worker * j->B * j->T;  // (nb, len)
    size_t len = 0, n_logits = 0;
    for (size_t b = 0; b < nb; b++) {
        Window win = window_at(j, w0 + b);
        len = win.end - win.start;  // the same for every window of a group
        memcpy(tokens + b * len, j->ids + win.start, len * sizeof *tokens);
        if (j->chunk_bos >= 0) tokens[b * len] = j->chunk_bos;
        if (win.end - win.begin > n_logits) n_logits = win.end - win.begin;
    }
    const NlObserver *obs = nl_state_observer(s);
    double wall = nl_obs_begin(obs);
    const float *logits = nl_forward_batch(s, tokens, nb, len, 0, n_logits);  // (nb, n_logits, V)
    nl_obs_add_wall(obs, wall);
    double sum = 0.0;
    *sq = 0.0;
    *bad = SIZE_MAX;
    for (size_t b = 0; b < nb; b++) {
        Window win = window_at(j, w0 + b);
        size_t k = win.end - win.begin;
        const float *rows = logits + (b * n_logits + n_logits - k) * j->V;  // its last k positions
        for (size_t i = 0; i < k; i++) {
            double v = nl_nll(rows + i * j->V, j->V, j->ids[win.begin + i + 1]);
            if (!isfinite(v) && *bad == SIZE_MAX) *bad = win.begin + i + 2;  // 1-based character
            if (j->opts->scored) j->opts->scored(j->opts->scored_ctx, win.begin + i, rows + i * j->V, v);
            sum += v;
            *sq += v * v;
        }
    }
    atomic_fetch_add(&j->done_chars, window_at(j, w0 + nb - 1).end - window_at(j, w0).begin);
    if (j->call_done) j->call_done(j->call_ctx, s, w0, nb, logits);
    return sum;
}

// Worker w of P scores groups w, w + P, w + 2P, ... (a fixed share: with at least P groups every
// worker runs). After a non-finite loss in group g, groups above g are skipped and those below are
// still scored, so the first bad character reported is the first in the text, whatever P is.
static void eval_worker(void *arg, int worker) {
    EvalJob *j = arg;
    for (size_t g = (size_t)worker; g < j->n_groups && g < atomic_load(&j->first_bad); g += j->n_workers) {
        j->group_nll[g] = eval_group(j, (size_t)worker, g, &j->group_bad[g], &j->group_sq[g]);
        if (j->group_bad[g] != SIZE_MAX) nl_atomic_lower(&j->first_bad, g);
        size_t done = atomic_load(&j->done_chars);
        if (worker == 0 && j->opts->progress && done < j->n_scored)
            j->opts->progress(done, j->n_scored, nl_clock_seconds() - j->start, j->opts->progress_ctx);
    }
}

// Segment k of K over N inputs: [k N / K, (k + 1) N / K). Slots (sequences of the state) take the
// longer segments (q + 1 inputs, the first N - K q of them) first, so the sequences still running
// after q positions are always a prefix of the batch.
static size_t segment_start(size_t k, size_t K, size_t N) { return k * N / K; }

static void order_segments(size_t *start, size_t K, size_t N) {
    size_t q = N / K, at = 0;
    for (int longer = 1; longer >= 0; longer--)
        for (size_t k = 0; k < K; k++) {
            size_t len = segment_start(k + 1, K, N) - segment_start(k, K, N);
            if ((len == q + 1) == longer) start[at++] = segment_start(k, K, N);
        }
}

// Positions p..p+nc-1 of the first B slots in one call; their losses added to *out.
static size_t recurrent_chunk(NlState *s, const int *ids, const size_t *start, int *tokens, size_t B, size_t p,
                              size_t nc, const NlEvalOptions *opts, NlEvalResult *out) {
    size_t V = (size_t)nl_state_config(s)->vocab_size, bad = SIZE_MAX;
    for (size_t b = 0; b < B; b++) memcpy(tokens + b * nc, ids + start[b] + p, nc * sizeof *tokens);
    const NlObserver *obs = nl_state_observer(s);
    double wall = nl_obs_begin(obs);
    const float *logits = nl_forward_batch(s, tokens, B, nc, p, nc);  // (B, nc, V)
    nl_obs_add_wall(obs, wall);
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < nc; t++) {
            size_t at = start[b] + p + t;  // the input; it predicts ids[at + 1]
            double v = nl_nll(logits + (b * nc + t) * V, V, ids[at + 1]);
            if (!isfinite(v) && at + 2 < bad) bad = at + 2;  // 1-based character
            if (opts->scored) opts->scored(opts->scored_ctx, at, logits + (b * nc + t) * V, v);
            out->nll_sum += v;
            out->nll_sq_sum += v * v;
        }
    return bad;
}

// A model without a window: K = segments parts, each through one unbroken state (nl_eval).
static int eval_recurrent(NlState *s, const int *ids, size_t n, const NlEvalOptions *opts, NlEvalResult *out,
                          NlError *err) {
    size_t segments = opts->segments ? opts->segments : 1;
    NlProgressFn progress = opts->progress;
    void *ctx = opts->progress_ctx;
    *out = (NlEvalResult){0};
    double t0 = nl_clock_seconds();
    nl_obs_set_phase(nl_state_observer(s), NL_PHASE_PREFILL);
    if (n < 2) {
        nl_error(err, NL_ERR_FORMAT, "the text needs at least 2 characters to score one");
        return -1;
    }
    size_t N = n - 1, K = segments;
    if (K < 1 || K > nl_state_batch(s) || K > N) {
        nl_error(err, NL_ERR_ARG, "%zu segments: give 1 to %zu (the state's batch) and at most %zu (the inputs)", K,
                 nl_state_batch(s), N);
        return -1;
    }
    size_t *start = malloc(K * sizeof *start), q = N / K, longer = N - K * q, bad = SIZE_MAX;
    size_t chunk = nl_model_call_logits(nl_state_model(s));  // positions scored a call
    int *tokens = malloc(K * chunk * sizeof *tokens);
    if (!start || !tokens) {
        free(start);
        free(tokens);
        nl_error(err, NL_ERR_NOMEM, "out of memory for %zu segments", K);
        return -1;
    }
    order_segments(start, K, N);
    for (size_t p = 0; p < q && bad == SIZE_MAX; p += chunk) {
        size_t nc = q - p < chunk ? q - p : chunk;
        bad = recurrent_chunk(s, ids, start, tokens, K, p, nc, opts, out);
        if (progress) progress(K * (p + nc), N, nl_clock_seconds() - t0, ctx);
    }
    if (longer && bad == SIZE_MAX) bad = recurrent_chunk(s, ids, start, tokens, longer, q, 1, opts, out);
    free(start);
    free(tokens);
    if (bad != SIZE_MAX) {
        nl_error(err, NL_ERR_NUMERIC, "non-finite loss at token %zu", bad);
        return -1;
    }
    out->count = N;
    out->bytes = nl_tokenizer_text_bytes(nl_model_tokenizer(nl_state_model(s)), ids, n, 1);  // all but the first
    out->seconds = nl_clock_seconds() - t0;
    if (progress) progress(N, N, out->seconds, ctx);
    return 0;
}

void nl_eval_window(size_t n, size_t block_size, size_t stride, size_t w, size_t *start, size_t *begin, size_t *end) {
    EvalJob j = {.n_inputs = n - 1, .T = block_size, .stride = stride};
    Window win = window_at(&j, w);
    *start = win.start;
    *begin = win.begin;
    *end = win.end;
}

size_t nl_eval_windows(size_t n, size_t block_size, size_t stride) {
    if (n < 2 || block_size < 1 || stride < 1) return 0;
    size_t n_inputs = n - 1, first = n_inputs < block_size ? n_inputs : block_size;
    return 1 + (n_inputs - first + stride - 1) / stride;
}

int nl_eval(NlState *const *states, size_t n_states, const int *ids, size_t n, const NlEvalOptions *opts,
            NlEvalResult *out, NlError *err) {
    return nl_eval_calls(states, n_states, ids, n, opts, NULL, NULL, out, err);
}

// llama-perplexity's chunks of N over n ids: N within the context T, and two of them at least.
static int check_chunks(size_t N, size_t n, size_t T, NlError *err) {
    if (N < 3 || N > T) return nl_error(err, NL_ERR_ARG, "chunks of %zu: give 3 to %zu (the context)", N, T);
    if (n < 2 * N)
        return nl_error(err, NL_ERR_FORMAT,
                        "the text has %zu tokens: chunks of %zu need %zu (two, as llama-perplexity asks)", n, N, 2 * N);
    return 0;
}

int nl_eval_calls(NlState *const *states, size_t n_states, const int *ids, size_t n, const NlEvalOptions *opts,
                  NlEvalCallFn call_done, void *call_ctx, NlEvalResult *out, NlError *err) {
    static const NlEvalOptions NONE = {0};
    const NlConfig *c = nl_state_config(states[0]);
    if (!opts) opts = &NONE;
    if (!nl_family_info(c->arch)->windowed)  // no window: the text through one unbroken state a segment
        return eval_recurrent(states[0], ids, n, opts, out, err);
    size_t stride = opts->stride;
    *out = (NlEvalResult){0};
    double t0 = nl_clock_seconds();
    for (size_t i = 0; i < n_states; i++) nl_obs_set_phase(nl_state_observer(states[i]), NL_PHASE_PREFILL);
    if (n < 2) {
        nl_error(err, NL_ERR_FORMAT, "the text needs at least 2 characters to score one");
        return -1;
    }
    size_t T = (size_t)c->block_size;
    if (opts->chunk && check_chunks(opts->chunk, n, T, err) != 0) return -1;
    if (!opts->chunk && (stride < 1 || stride > T)) {
        nl_error(err, NL_ERR_ARG, "stride %zu is outside [1, %zu]", stride, T);
        return -1;
    }
    for (size_t i = 1; i < n_states; i++)
        if (nl_state_batch(states[i]) != nl_state_batch(states[0])) {
            nl_error(err, NL_ERR_ARG, "eval states differ in batch size (%zu and %zu)", nl_state_batch(states[0]),
                     nl_state_batch(states[i]));
            return -1;
        }
    EvalJob j = {.states = states,
                 .ids = ids,
                 .n_inputs = n - 1,
                 .T = T,
                 .V = (size_t)c->vocab_size,
                 .stride = stride,
                 .chunk = opts->chunk,
                 .chunk_bos = opts->chunk && opts->chunk_bos
                                  ? nl_tokenizer_info(nl_model_tokenizer(nl_state_model(states[0]))).bos
                                  : -1,
                 .B = nl_state_batch(states[0]),
                 .opts = opts,
                 .call_done = call_done,
                 .call_ctx = call_ctx,
                 .start = t0};
    j.n_windows = j.chunk ? n / j.chunk : nl_eval_windows(n, T, stride);
    j.n_scored = j.chunk ? j.n_windows * (j.chunk - 1 - j.chunk / 2) : j.n_inputs;
    j.n_groups = (j.n_windows + j.B - 1) / j.B;
    j.n_workers = n_states < j.n_groups ? n_states : j.n_groups;  // no thread without a group
    j.tokens = malloc(n_states * j.B * T * sizeof *j.tokens);
    j.group_nll = calloc(j.n_groups, sizeof *j.group_nll);
    j.group_sq = calloc(j.n_groups, sizeof *j.group_sq);
    j.group_bad = malloc(j.n_groups * sizeof *j.group_bad);
    atomic_init(&j.first_bad, SIZE_MAX);
    atomic_init(&j.done_chars, 0);
    int rc = 0;
    if (!j.tokens || !j.group_nll || !j.group_sq || !j.group_bad) {
        nl_error(err, NL_ERR_NOMEM, "out of memory for %zu windows", j.n_windows);
        rc = -1;
        goto cleanup;
    }
    for (size_t g = 0; g < j.n_groups; g++) j.group_bad[g] = SIZE_MAX;
    nl_parallel_run((int)j.n_workers, eval_worker, &j);
    for (size_t g = 0; g < j.n_groups && rc == 0; g++) {  // in text order, whoever computed them
        if (j.group_bad[g] != SIZE_MAX) {
            nl_error(err, NL_ERR_NUMERIC, "non-finite loss at token %zu", j.group_bad[g]);
            rc = -1;
        }
        out->nll_sum += j.group_nll[g];
        out->nll_sq_sum += j.group_sq[g];
    }
    const NlTokenizer *tok = nl_model_tokenizer(nl_state_model(states[0]));
    for (size_t w = 0; w < j.n_windows && rc == 0; w++) {  // the bytes of the targets each window scored
        Window win = window_at(&j, w);
        out->bytes += nl_tokenizer_text_bytes(tok, ids + win.begin, win.end - win.begin + 1, 1);
    }
    if (rc == 0) {
        out->count = j.n_scored;
        out->seconds = nl_clock_seconds() - t0;
        if (opts->progress) opts->progress(j.n_scored, j.n_scored, out->seconds, opts->progress_ctx);
    }
cleanup:
    free(j.tokens);
    free(j.group_nll);
    free(j.group_sq);
    free(j.group_bad);
    return rc;
}
