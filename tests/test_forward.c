// test_forward.c — the engine's forward pass against the naive double-precision reference
// (ref_forward.c) on every fixture: full prefill, KV-cache decoding, chunked prefill, run-time
// norm/placement overrides, eval's sliding windows, and generation with both window policies.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "linear.h"
#include "model.h"
#include "normlab.h"
#include "ref_forward.h"

// Logits are O(1..10) here; the float engine stays within 2e-6 of the double reference (measured),
// so 2e-5 leaves room for other BLAS kernels while still catching any real formula error.
#define ATOL 2e-5
#define RTOL 2e-5

static const char *const FIXTURES[] = {
    "ln-pre-bias.json",     "ln-pre-nobias.json",   "ln-post-bias.json",  "ln-post-nobias.json",
    "rms-pre-bias.json",    "rms-pre-nobias.json",  "rms-post-bias.json", "rms-post-nobias.json",
    "ln-pre-untied.json",   "rms-pre-rmsbias.json", "utf8.json",          "ln-pre-t70.json",
    "bn-pre-bias.json",     "bn-post-nobias.json",  "bn-peri-bias.json",  "ln-peri-bias.json",
    "rms-peri-nobias.json", "deepnorm.json",        "nonorm.json",        "ln-pre-dh64.json"};
#define N_FIXTURES (sizeof FIXTURES / sizeof FIXTURES[0])

typedef struct {
    NlModel *model;
    NlState *state;
    NlConfig cfg;  // with the run options applied
    int V, T;
} Setup;

static int setup(Setup *s, const char *name, const NlRunOptions *opts) {
    NlError err;
    memset(s, 0, sizeof *s);
    if (nl_model_load(&s->model, fixture(name), NULL, &err) != 0 ||
        nl_state_create(&s->state, s->model, opts, &err) != 0) {
        CHECK(0, "%s: %s", name, err.msg);
        nl_model_free(s->model);
        return -1;
    }
    s->cfg = *nl_state_config(s->state);
    s->V = s->cfg.vocab_size;
    s->T = s->cfg.block_size;
    return 0;
}

static void teardown(Setup *s) {
    nl_state_free(s->state);
    nl_model_free(s->model);
}

static void random_tokens(int *ids, size_t n, int V, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        ids[i] = (int)((seed >> 16) % (unsigned)V);
    }
}

// Compares engine prefill (all positions) and token-by-token decoding with the reference.
static void compare_one(const char *name, const NlRunOptions *opts) {
    Setup s;
    if (setup(&s, name, opts) != 0) return;
    int ids[128];  // block_size of every fixture, at most
    random_tokens(ids, (size_t)s.T, s.V, 99);
    double *want = malloc((size_t)s.T * s.V * sizeof *want);
    CHECK(ref_forward(want, &s.cfg, nl_model_transformer_weights(s.model), ids, (size_t)s.T) == 0, "reference ran");
    char what[160];
    snprintf(what, sizeof what, "%s as %s/%s prefill", name, nl_name(NL_NAMES_NORM, s.cfg.norm),
             nl_name(NL_NAMES_PLACEMENT, s.cfg.placement));
    check_close(what, nl_forward(s.state, ids, (size_t)s.T, 0, (size_t)s.T), want, (size_t)s.T * s.V, ATOL, RTOL);
    // Only the last 3 rows asked for: the last layer then runs after attention on those rows alone.
    snprintf(what, sizeof what, "%s prefill, last 3 logits", name);
    check_close(what, nl_forward(s.state, ids, (size_t)s.T, 0, 3), want + (s.T - 3) * s.V, 3 * (size_t)s.V, ATOL, RTOL);
    // KV cache: a 2-token prefill, then one token at a time; each step's logits vs the reference row.
    int ok = 1;
    nl_forward(s.state, ids, 2, 0, 1);
    for (int p = 2; p < s.T; p++) {
        const float *got = nl_forward(s.state, ids + p, 1, (size_t)p, 1);
        for (int v = 0; v < s.V; v++) ok &= fabs(got[v] - want[p * s.V + v]) <= ATOL + RTOL * fabs(want[p * s.V + v]);
    }
    CHECK(ok, "%s: incremental KV-cache decoding differs from the full recompute", name);
    // Chunked prefill: positions 0..3 then 4..T-1 in one batched call against the cache.
    nl_forward(s.state, ids, 4, 0, 1);
    snprintf(what, sizeof what, "%s chunked prefill", name);
    check_close(what, nl_forward(s.state, ids + 4, (size_t)s.T - 4, 4, (size_t)s.T - 4), want + 4 * s.V,
                (size_t)(s.T - 4) * s.V, ATOL, RTOL);
    free(want);
    teardown(&s);
}

static void forward_matches_naive_reference_on_every_fixture(void) {
    for (size_t i = 0; i < N_FIXTURES; i++) compare_one(FIXTURES[i], NULL);
}

// A zero-initialised NlRunOptions, and NL_RUN_DEFAULTS, run a model as it is configured: an
// rmsnorm/post model stays rmsnorm/post, with the same logits as opts NULL.
static void zero_run_options_keep_the_models_config(void) {
    NlModel *m = NULL;
    NlError err;
    if (nl_model_load(&m, fixture("rms-post-bias.json"), NULL, &err) != 0) {
        CHECK(0, "%s", err.msg);
        return;
    }
    const NlRunOptions zero = {0}, defaults = NL_RUN_DEFAULTS;
    const NlRunOptions *opts[3] = {NULL, &zero, &defaults};
    float first[9 * 11];
    int ids[] = {1, 2, 3, 4};
    for (int i = 0; i < 3; i++) {
        NlState *s = NULL;
        if (nl_state_create(&s, m, opts[i], &err) != 0) {
            CHECK(0, "%s", err.msg);
            continue;
        }
        const NlConfig *c = nl_state_config(s);
        CHECK(c->norm == NL_NORM_RMSNORM && c->placement == NL_PLACE_POST, "options %d run it as %s/%s", i,
              nl_name(NL_NAMES_NORM, c->norm), nl_name(NL_NAMES_PLACEMENT, c->placement));
        size_t V = (size_t)c->vocab_size;
        const float *l = nl_forward(s, ids, 4, 0, 1);
        if (i == 0) memcpy(first, l, V * sizeof *l);
        else CHECK(memcmp(first, l, V * sizeof *l) == 0, "options %d: other logits than opts NULL", i);
        nl_state_free(s);
    }
    nl_model_free(m);
}

// Every norm type (BatchNorm with running statistics where the model has them) under every
// placement, on models of each kind: norms the model lacks have unit gain.
static void overrides_run_every_norm_and_placement(void) {
    const char *names[] = {"ln-post-bias.json", "rms-pre-nobias.json", "bn-pre-bias.json",
                           "deepnorm.json",     "nonorm.json",         "rms-peri-nobias.json"};
    const NlNormType norms[] = {NL_NORM_LAYERNORM, NL_NORM_RMSNORM, NL_NORM_NONE, NL_NORM_BATCHNORM};
    const NlPlacement places[] = {NL_PLACE_PRE, NL_PLACE_POST, NL_PLACE_PERI};
    for (size_t f = 0; f < sizeof names / sizeof names[0]; f++)
        for (int k = 0; k < 4; k++)
            for (int p = 0; p < 3; p++) {
                if (norms[k] == NL_NORM_BATCHNORM && strncmp(names[f], "bn-", 3) != 0) continue;
                NlRunOptions o = {
                    .norm = norms[k], .placement = places[p], .batch = 1, .threads = 1, .bn_stats = NL_BN_RUNNING};
                if (norms[k] == NL_NORM_BATCHNORM && places[p] == NL_PLACE_PERI) {  // no running stats for ln_*_post
                    NlModel *m = NULL;
                    NlState *st = NULL;
                    NlError err;
                    CHECK(nl_model_load(&m, fixture(names[f]), NULL, &err) == 0 &&
                              nl_state_create(&st, m, &o, &err) == -1 && strstr(err.msg, "h.0.ln_1_post.running_mean"),
                          "%s as batchnorm/peri with running statistics: %s", names[f], err.msg);
                    nl_state_free(st);
                    nl_model_free(m);
                    continue;
                }
                compare_one(names[f], &o);
            }
}

// BatchNorm with batch statistics: the statistics of every row of the call. One sequence in one
// call matches the reference (which takes them over its rows); the same sequence beside another
// in one call gets other logits; a call of one row normalises every feature to its bias, so its
// logits do not depend on the token. Running statistics on a model without them are refused.
static void batch_statistics_couple_the_rows_of_a_call(void) {
    NlRunOptions batch = {.norm = NL_NORM_BATCHNORM,
                          .placement = NL_PLACE_AS_CONFIGURED,
                          .batch = 2,
                          .threads = 1,
                          .bn_stats = NL_BN_BATCH};
    const char *names[] = {"bn-pre-bias.json", "bn-post-nobias.json", "bn-peri-bias.json", "ln-pre-bias.json"};
    for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
        Setup s;
        if (setup(&s, names[f], &batch) != 0) continue;
        size_t T = (size_t)s.T, V = (size_t)s.V;
        int ids[2 * 128];
        random_tokens(ids, 2 * T, s.V, 7);
        double *want = malloc(T * V * sizeof *want);
        float *alone = malloc(T * V * sizeof *alone);
        CHECK(ref_forward_bn(want, &s.cfg, nl_model_transformer_weights(s.model), ids, T, NL_BN_BATCH) == 0,
              "reference ran");
        char what[160];
        snprintf(what, sizeof what, "%s with batch statistics, alone", names[f]);
        memcpy(alone, nl_forward(s.state, ids, T, 0, T), T * V * sizeof *alone);
        check_close(what, alone, want, T * V, ATOL, RTOL);
        const float *two = nl_forward_batch(s.state, ids, 2, T, 0, T);  // sequence 0 beside sequence 1
        double diff = 0.0;
        for (size_t i = 0; i < T * V; i++) diff = fmax(diff, fabs((double)two[i] - alone[i]));
        CHECK(diff > 1e-3, "%s: a batch neighbour changed no logit of sequence 0 (largest change %g)", names[f], diff);
        float first[128];
        memcpy(first, nl_forward(s.state, &ids[0], 1, 0, 1), V * sizeof *first);
        int other = (ids[0] + 1) % s.V;
        CHECK(memcmp(first, nl_forward(s.state, &other, 1, 0, 1), V * sizeof *first) == 0,
              "%s: a one-row call's logits depend on its token", names[f]);
        free(want);
        free(alone);
        teardown(&s);
    }
    NlModel *m = NULL;
    NlState *st = NULL;
    NlError err;
    NlRunOptions running = {.norm = NL_NORM_BATCHNORM,
                            .placement = NL_PLACE_AS_CONFIGURED,
                            .batch = 1,
                            .threads = 1,
                            .bn_stats = NL_BN_RUNNING};
    if (nl_model_load(&m, fixture("ln-pre-bias.json"), NULL, &err) != 0) {
        CHECK(0, "%s", err.msg);
        return;
    }
    CHECK(nl_state_create(&st, m, &running, &err) == -1 && err.code == NL_ERR_ARG &&
              strstr(err.msg, "needs tensor \"h.0.ln_1.running_mean\", which this layernorm model lacks"),
          "running statistics on a LayerNorm model: %s", err.msg);
    nl_state_free(st);
    nl_model_free(m);
}

static double ref_nll(const Setup *s, const int *ctx, size_t n, int target) {
    double *logits = malloc(n * (size_t)s->V * sizeof *logits), max = -INFINITY, sum = 0.0;
    ref_forward(logits, &s->cfg, nl_model_transformer_weights(s->model), ctx, n);
    const double *row = logits + (n - 1) * (size_t)s->V;
    for (int v = 0; v < s->V; v++) max = fmax(max, row[v]);
    for (int v = 0; v < s->V; v++) sum += exp(row[v] - max);
    double r = log(sum) - (row[target] - max);
    free(logits);
    return r;
}

static void eval_scores_each_character_once_with_windowed_context(void) {
    Setup s;
    if (setup(&s, "ln-pre-bias.json", NULL) != 0) return;
    int ids[40];
    random_tokens(ids, 40, s.V, 5);
    const size_t stride = 4;
    NlEvalResult r;
    NlError err;
    CHECK(nl_eval(&(s.state), 1, ids, 40, &(NlEvalOptions){.stride = stride}, &r, &err) == 0, "%s", err.msg);
    CHECK(r.count == 39, "scores every character after the first: %zu", r.count);
    // The documented policy, restated: target j (input position j-1) is scored in the first window
    // whose end covers it; that window holds inputs [max(0, end - T), end).
    double want = 0.0;
    size_t T = (size_t)s.T, end = T;
    for (size_t j = 1; j < 40; j++) {
        while (j > end) end = end + stride < 39 ? end + stride : 39;
        size_t start = end > T ? end - T : 0;
        want += ref_nll(&s, ids + start, j - start, ids[j]);
    }
    CHECK(fabs(r.nll_sum - want) <= 1e-4 * fabs(want), "eval nll %.9g, reference %.9g", r.nll_sum, want);
    teardown(&s);
}

// llama-perplexity's chunks (NlEvalOptions.chunk N): chunk k, ids[kN, kN + N), run on its own, its targets
// past N/2 scored (the char fixture has no bos; gguf_test checks it). Refused: N < 3 or > T, n < 2N.
static void eval_chunks_score_each_second_half_on_its_own(void) {
    Setup s;
    if (setup(&s, "ln-pre-bias.json", NULL) != 0) return;
    int ids[40];
    random_tokens(ids, 40, s.V, 7);
    size_t N = (size_t)s.T < 8 ? (size_t)s.T : 8, chunks = 40 / N;
    NlEvalResult r;
    NlError err;
    CHECK(nl_eval(&(s.state), 1, ids, 40, &(NlEvalOptions){.stride = 1, .chunk = N, .chunk_bos = 1}, &r, &err) == 0,
          "%s", err.msg);
    CHECK(r.count == chunks * (N - 1 - N / 2), "chunks of %zu scored %zu targets", N, r.count);
    double want = 0.0;
    for (size_t k = 0; k < chunks; k++)
        for (size_t j = N / 2 + 1; j < N; j++) want += ref_nll(&s, ids + k * N, j, ids[k * N + j]);
    CHECK(fabs(r.nll_sum - want) <= 1e-4 * fabs(want), "chunked eval nll %.9g, reference %.9g", r.nll_sum, want);
    for (size_t bad = 2; bad <= (size_t)s.T + 1; bad += (size_t)s.T - 1)
        CHECK(nl_eval(&(s.state), 1, ids, 40, &(NlEvalOptions){.chunk = bad}, &r, &err) == -1 && err.code == NL_ERR_ARG,
              "chunks of %zu refused: %s", bad, err.msg);
    CHECK(nl_eval(&(s.state), 1, ids, 2 * N - 1, &(NlEvalOptions){.chunk = N}, &r, &err) == -1 &&
              err.code == NL_ERR_FORMAT && strstr(err.msg, "two"),
          "a text shorter than two chunks refused: %s", err.msg);
    teardown(&s);
}

// nl_eval_windows (which callers size their states and profilers by) against the same policy
// restated: the first window ends at min(T, inputs), each later one `stride` further, clipped.
static void eval_window_count_follows_the_policy(void) {
    int wrong = 0;
    for (size_t n = 0; n < 40; n++)
        for (size_t T = 1; T < 10; T++)
            for (size_t stride = 1; stride <= T; stride++) {
                size_t want = 0;
                if (n >= 2) {
                    size_t inputs = n - 1, end = inputs < T ? inputs : T;
                    for (want = 1; end < inputs; want++) end = end + stride < inputs ? end + stride : inputs;
                }
                size_t got = nl_eval_windows(n, T, stride);
                if (got != want && wrong++ < 3)
                    CHECK(0, "n %zu T %zu stride %zu: %zu windows, want %zu", n, T, stride, got, want);
            }
    CHECK(wrong == 0, "%d window counts differ from the policy", wrong);
}

typedef struct {
    int tokens[128];
    size_t n;
} Collected;

static int collect(int stream, int token, void *ctx) {
    (void)stream;
    Collected *c = ctx;
    c->tokens[c->n++] = token;
    return 0;
}

// Greedy generation through the reference, with either window policy restated in the test.
static void ref_greedy(const Setup *s, const int *prompt, size_t n_prompt, size_t n_new, int exact, int *out) {
    int window[64];
    size_t T = (size_t)s->T, len = n_prompt;
    memcpy(window, prompt, n_prompt * sizeof *window);
    double *logits = malloc(T * (size_t)s->V * sizeof *logits);
    for (size_t i = 0; i < n_new; i++) {
        ref_forward(logits, &s->cfg, nl_model_transformer_weights(s->model), window, len);
        const double *row = logits + (len - 1) * (size_t)s->V;
        int best = 0;
        for (int v = 1; v < s->V; v++) best = row[v] > row[best] ? v : best;
        out[i] = best;
        if (len == T) {  // exact: drop the oldest; shift: keep the newest T/2 (the new token included)
            size_t keep = exact ? T - 1 : T / 2 - 1;
            memmove(window, window + (len - keep), keep * sizeof *window);
            len = keep;
        }
        window[len++] = best;
    }
    free(logits);
}

static void generation_matches_reference_past_the_window(void) {
    for (int exact = 0; exact < 2; exact++) {
        Setup s;
        if (setup(&s, "rms-post-bias.json", NULL) != 0) return;
        NlSampler *greedy = NULL;
        NlError err;
        nl_sampler_create(&greedy, s.V, (NlSamplerParams){.temperature = 0.0, .top_k = 0, .top_p = 1.0}, 1, &err);
        int prompt[3] = {1, 4, 2}, want[30];
        Collected got = {{0}, 0};
        NlGenerateOptions o = {.n_new = 30, .exact_window = exact};
        NlGenerateStats st;
        CHECK(generate_one(s.state, greedy, prompt, 3, &o, collect, &got, &st, &err) == 0, "%s", err.msg);
        ref_greedy(&s, prompt, 3, 30, exact, want);
        CHECK(got.n == 30, "30 tokens past a window of %d", s.T);
        CHECK(memcmp(got.tokens, want, sizeof want) == 0, "%s window: greedy tokens differ from the reference",
              exact ? "exact" : "shifted");
        CHECK(exact ? st.context_shifts == 0 : st.context_shifts > 0, "context shifts %zu", st.context_shifts);
        nl_sampler_free(greedy);
        teardown(&s);
    }
}

// 16 sequences through one batched state give each sequence's logits alone (LN/RMS statistics are
// per position, so a batch cannot leak between sequences), in prefill and in KV-cache decoding.
// The 70-position model spans three cache tiles per sequence; the batched state has a pool of 2
// workers (where the machine has 2 CPUs), which share its attention heads.
static void batch_of_16_matches_each_sequence_alone(void) {
    const char *names[] = {"ln-post-bias.json", "rms-pre-nobias.json", "ln-pre-t70.json"};
    for (int f = 0; f < 3; f++) {
        Setup one, many;
        if (setup(&one, names[f], NULL) != 0) return;
        NlRunOptions o = {
            .norm = one.cfg.norm, .placement = one.cfg.placement, .batch = 16, .threads = 2, .bn_stats = NL_BN_RUNNING};
        NlError err;
        many = one;
        CHECK(nl_state_create(&many.state, one.model, &o, &err) == 0, "%s", err.msg);
        size_t T = (size_t)one.T, V = (size_t)one.V;
        int *ids = malloc(16 * T * sizeof *ids);
        random_tokens(ids, 16 * T, one.V, 17);
        float *batched = malloc(16 * T * V * sizeof *batched);
        memcpy(batched, nl_forward_batch(many.state, ids, 16, T - 1, 0, T - 1), 16 * (T - 1) * V * sizeof *batched);
        double worst = 0.0;
        for (size_t b = 0; b < 16; b++) {
            const float *alone = nl_forward(one.state, ids + b * (T - 1), T - 1, 0, T - 1);
            for (size_t i = 0; i < (T - 1) * V; i++) worst = fmax(worst, fabs(alone[i] - batched[b * (T - 1) * V + i]));
        }
        // decode one more token per sequence: the batched KV caches must be each sequence's own
        int next[16];
        for (int b = 0; b < 16; b++) next[b] = (b * 7) % one.V;
        memcpy(batched, nl_forward_batch(many.state, next, 16, 1, T - 1, 1), 16 * V * sizeof *batched);
        for (size_t b = 0; b < 16; b++) {
            nl_forward(one.state, ids + b * (T - 1), T - 1, 0, 1);
            const float *alone = nl_forward(one.state, &next[b], 1, T - 1, 1);
            for (size_t v = 0; v < V; v++) worst = fmax(worst, fabs(alone[v] - batched[b * V + v]));
        }
        printf("     %s: batch of 16 vs alone, max |delta logit| = %.3g\n", names[f], worst);
        CHECK(worst <= ATOL, "%s: batch changes logits by %g", names[f], worst);
        // With AVX2 or AVX-512 kernels every weight here has its transposed copy, and one row and many
        // run the same chain per output on it (linear.c): the same bits, prefill and decode alike.
        CHECK(nl_blas_tier(nl_blas_core()) < 2 || worst == 0.0, "%s: a batch of 16 changes the bits (%g) on %s",
              names[f], worst, nl_blas_core());
        free(batched);
        free(ids);
        nl_state_free(many.state);
        teardown(&one);
    }
}

typedef struct {
    int tokens[4][128];
    size_t n[4];
} Streams;

static int collect_stream(int stream, int token, void *ctx) {
    Streams *c = ctx;
    c->tokens[stream][c->n[stream]++] = token;
    return 0;
}

// Four streams decoded together, each sampling with its own seed, past the window, give the tokens
// each stream gives alone with that seed (the products are batched, the statistics are not). On the
// 70-position model the 40-token prompt's cache (two tiles) is copied from stream 0 to the others,
// and the streams shift their context after 30 more tokens.
static void batched_streams_match_single_streams(void) {
    const struct {
        const char *name;
        size_t n_prompt, n_new;
    } cases[] = {{"rms-post-bias.json", 3, 30}, {"ln-pre-t70.json", 40, 60}};
    for (int c = 0; c < 2; c++) {
        Setup one, many;
        if (setup(&one, cases[c].name, NULL) != 0) return;
        NlRunOptions o = {
            .norm = one.cfg.norm, .placement = one.cfg.placement, .batch = 4, .threads = 1, .bn_stats = NL_BN_RUNNING};
        NlError err;
        many = one;
        CHECK(nl_state_create(&many.state, one.model, &o, &err) == 0, "%s", err.msg);
        NlSampler *samplers[4];
        for (int i = 0; i < 4; i++)
            nl_sampler_create(&samplers[i], one.V, (NlSamplerParams){.temperature = 1.0, .top_k = 0, .top_p = 1.0},
                              40 + (uint64_t)i, &err);
        int prompt[40];
        random_tokens(prompt, cases[c].n_prompt, one.V, 3);
        NlGenerateOptions g = {.n_new = cases[c].n_new, .exact_window = 0};
        NlGenerateStats st;
        Streams got = {{{0}}, {0}};
        CHECK(generate_one_state(many.state, samplers, 4, prompt, cases[c].n_prompt, &g, collect_stream, &got, &st,
                                 &err) == 0,
              "%s", err.msg);
        CHECK(st.context_shifts > 0, "%s: no context shift", cases[c].name);
        for (int i = 0; i < 4; i++) {
            NlSampler *alone = NULL;
            nl_sampler_create(&alone, one.V, (NlSamplerParams){.temperature = 1.0, .top_k = 0, .top_p = 1.0},
                              40 + (uint64_t)i, &err);
            Collected want = {{0}, 0};
            generate_one(one.state, alone, prompt, cases[c].n_prompt, &g, collect, &want, &st, &err);
            CHECK(got.n[i] == cases[c].n_new && memcmp(got.tokens[i], want.tokens, cases[c].n_new * sizeof(int)) == 0,
                  "%s: stream %d differs from its single run", cases[c].name, i);
            nl_sampler_free(alone);
            nl_sampler_free(samplers[i]);
        }
        nl_state_free(many.state);
        teardown(&one);
    }
}

// The transformer's table (nl_family_info, nl_config_describe, nl_config_has_component): info's
// fields in order, residual_scale with post placement only, the output norms with peri only.
static void the_table_describes_the_transformer(void) {
    for (size_t i = 0; i < N_FIXTURES; i++) {
        NlModel *m = load_fixture(FIXTURES[i]);
        if (!m) continue;
        const NlConfig *c = nl_model_config(m);
        const NlFamilyInfo *f = nl_family_info(c->arch);
        CHECK(strcmp(f->name, "transformer") == 0 && f->has_placement && f->has_residual_stream &&
                  f->state_vectors == 0 && strcmp(f->state_bytes_key, "kv_cache_bytes") == 0 && f->norms == 0x3e &&
                  f->prunes_rows,
              "%s: %s", FIXTURES[i], f->name);
        NlConfigField fl[NL_CONFIG_FIELDS_MAX];
        size_t k = nl_config_describe(c, fl), post = c->placement == NL_PLACE_POST;
        static const char *const KEYS[] = {"n_head",    "n_embd",   "block_size", "n_inner", "norm",
                                           "placement", "norm_eps", "activation", "bias",    "tie_embeddings"};
        int keys_ok = k == 10 + post;
        for (size_t j = 0, at = 0; keys_ok && j < k; j++) {
            if (post && j == 6) {
                keys_ok = strcmp(fl[j].key, "residual_scale") == 0 && fl[j].number == c->residual_scale;
                continue;
            }
            keys_ok = strcmp(fl[j].key, KEYS[at++]) == 0;
        }
        CHECK(keys_ok && fl[1].number == c->n_embd && fl[2].number == c->block_size &&
                  fl[8 + post].type == NL_FIELD_BOOL && fl[8 + post].number == c->bias,
              "%s: info's fields (%zu)", FIXTURES[i], k);
        int peri = c->placement == NL_PLACE_PERI;
        CHECK(nl_config_has_component(c, NL_COMP_NORM1_POST) == peri && nl_config_has_component(c, NL_COMP_QKV) &&
                  !nl_config_has_component(c, NL_COMP_RNN_INPUT),
              "%s: components", FIXTURES[i]);
        nl_model_free(m);
    }
}

// One stream's logits are the same bits at 1, 2 and 3 threads: the pool splits a decode step's
// matrix-vector products by output rows and the attention by heads, never a sum (linear.c,
// transformer.c). The shipped model's products (49K to 65K weights) are big enough to be split; the
// fixtures' only by heads. Threads beyond the machine's CPUs are capped (then the run compares fewer).
static void one_stream_is_bitwise_the_same_at_any_thread_count(void) {
    const char *paths[] = {"weights/shakespeare-pre-ln",
                           "tests/fixtures/ln-pre-t70.json",
                           "tests/fixtures/rms-peri-nobias.json",
                           "tests/fixtures/lstm-ln.json",
                           "weights/shakespeare-bpe",
                           "tests/fixtures/ln-pre-dh64.json"};  // shakespeare-bpe: its matrices as stored (F16)
    for (size_t f = 0; f < sizeof paths / sizeof paths[0]; f++) {
        NlModel *m = NULL;
        NlError err;
        if (nl_model_load(&m, paths[f], NULL, &err) != 0) {
            CHECK(0, "%s: %s", paths[f], err.msg);
            continue;
        }
        size_t V = (size_t)nl_model_config(m)->vocab_size, T = nl_model_window(m) == SIZE_MAX ? 64 : nl_model_window(m);
        size_t n_prompt = T / 4 + 1, steps = T - n_prompt;  // decode to the end of the window
        int *ids = malloc((n_prompt + steps) * sizeof *ids);
        random_tokens(ids, n_prompt + steps, (int)V, 29);
        float *want = malloc((steps + 1) * V * sizeof *want), *got = malloc((steps + 1) * V * sizeof *got);
        for (int threads = 1; threads <= 3; threads++) {
            NlRunOptions o = NL_RUN_DEFAULTS;
            o.threads = threads;
            NlState *s = NULL;
            CHECK(nl_state_create(&s, m, &o, &err) == 0, "%s: %s", paths[f], err.msg);
            if (!s) break;
            float *out = threads == 1 ? want : got;
            memcpy(out, nl_forward(s, ids, n_prompt, 0, 1), V * sizeof *out);
            for (size_t t = 0; t < steps; t++)
                memcpy(out + (t + 1) * V, nl_forward(s, ids + n_prompt + t, 1, n_prompt + t, 1), V * sizeof *out);
            if (threads > 1)
                CHECK(memcmp(want, got, (steps + 1) * V * sizeof *got) == 0, "%s: %d threads change the logits",
                      paths[f], threads);
            nl_state_free(s);
        }
        free(ids);
        free(want);
        free(got);
        nl_model_free(m);
    }
}

// The loader's transposed copies (linear.h) are the file's weights transposed, bit for bit, made
// where the plan asks for one and counted in nl_model_transposed_bytes; a mapped and a read file
// give the same copies, and the same logits for 8 rows (a sample group: the NN call where copies exist).
static void transposed_copies_are_exact_mapped_or_read(void) {
    NlModel *mapped = NULL, *read = NULL;
    NlError err;
    NlLoadOptions no_mmap = {.no_mmap = 1};
    if (nl_model_load(&mapped, "weights/shakespeare-pre-ln", NULL, &err) != 0 ||
        nl_model_load(&read, "weights/shakespeare-pre-ln", &no_mmap, &err) != 0) {
        CHECK(0, "%s", err.msg);
        nl_model_free(mapped);
        return;
    }
    const NlTransformerWeights *wm = nl_model_transformer_weights(mapped), *wr = nl_model_transformer_weights(read);
    size_t L = (size_t)nl_model_config(mapped)->n_layer, bytes = 0, exact = 1;
    for (size_t k = 0; k <= 4 * L; k++) {
        const NlLayerWeights *a = &wm->layers[k / 4 < L ? k / 4 : 0], *b = &wr->layers[k / 4 < L ? k / 4 : 0];
        const NlLinear *la =
            k == 4 * L ? &wm->lm_head : (const NlLinear *[]){&a->attn, &a->proj, &a->fc, &a->out}[k % 4];
        const NlLinear *lb =
            k == 4 * L ? &wr->lm_head : (const NlLinear *[]){&b->attn, &b->proj, &b->fc, &b->out}[k % 4];
        int want = nl_linear_wants_transposed(la->n_out, la->n_in, la->tier);
        CHECK((la->wt != NULL) == want && (lb->wt != NULL) == want,
              "linear %zu: a copy exactly where the plan wants one", k);
        CHECK(la->tier == nl_blas_tier(nl_blas_core()), "linear %zu is planned for the kernels in use", k);
        if (!la->wt || !lb->wt) continue;
        bytes += la->n_out * la->n_in * sizeof(float);
        for (size_t o = 0; o < la->n_out; o++)
            for (size_t i = 0; i < la->n_in; i++)
                exact &=
                    memcmp(&la->wt[i * la->n_out + o], &nl_weight_f32(la->w)[o * la->n_in + i], sizeof(float)) == 0 &&
                    memcmp(&lb->wt[i * la->n_out + o], &nl_weight_f32(la->w)[o * la->n_in + i], sizeof(float)) == 0;
    }
    CHECK(exact, "every copy is its weight transposed, bit for bit");
    CHECK(nl_model_transposed_bytes(mapped) == bytes && nl_model_transposed_bytes(read) == bytes,
          "transposed bytes %zu and %zu, counted %zu", nl_model_transposed_bytes(mapped),
          nl_model_transposed_bytes(read), bytes);
    NlRunOptions o = NL_RUN_DEFAULTS;
    o.batch = 8;
    NlState *sm = NULL, *sr = NULL;
    if (nl_state_create(&sm, mapped, &o, &err) == 0 && nl_state_create(&sr, read, &o, &err) == 0) {
        int ids[8 * 20];
        random_tokens(ids, 8 * 20, nl_model_config(mapped)->vocab_size, 41);
        size_t V = (size_t)nl_model_config(mapped)->vocab_size;
        float *lm = malloc(8 * 20 * V * sizeof *lm);
        memcpy(lm, nl_forward_batch(sm, ids, 8, 20, 0, 20), 8 * 20 * V * sizeof *lm);
        CHECK(memcmp(lm, nl_forward_batch(sr, ids, 8, 20, 0, 20), 8 * 20 * V * sizeof *lm) == 0,
              "mapped and read models give the same logits");
        free(lm);
    } else {
        CHECK(0, "%s", err.msg);
    }
    nl_state_free(sm);
    nl_state_free(sr);
    nl_model_free(mapped);
    nl_model_free(read);
}

// A tall weight above the copy bound (shakespeare-bpe's 50257-row head, in its float32 twin, with
// AVX2 or AVX-512 kernels) is read only from its copy (linear.c): the copy is exact, the mapped file's
// pages it was copied from still read back the file's values once handed back, and --no-repack's
// model (no copies at all) gives logits within float rounding of it: 1e-5 + 1e-5 |want| on each, a
// sum of D products of values below 1 (seen: a few 1e-7), for one row (sgemv on the copy) and 24 (NN).
static void large_tall_weights_stream_from_their_copy(void) {
    char twin[64];
    const char *path = float32_twin("weights/shakespeare-bpe", twin);
    NlModel *mapped = NULL, *read = NULL, *plain = NULL;
    NlError err;
    if (!path) return;
    NlLoadOptions no_mmap = {.no_mmap = 1}, no_repack = {.no_repack = 1};
    if (nl_model_load(&mapped, path, NULL, &err) != 0 || nl_model_load(&read, path, &no_mmap, &err) != 0 ||
        nl_model_load(&plain, path, &no_repack, &err) != 0) {
        CHECK(0, "%s", err.msg);
        nl_model_free(mapped);
        nl_model_free(read);
        remove_twin(twin);
        return;
    }
    const NlLinear *head = &nl_model_transformer_weights(mapped)->lm_head;
    const NlLinear *head_read = &nl_model_transformer_weights(read)->lm_head;
    int tier = nl_blas_tier(nl_blas_core());
    CHECK(head->n_out == 50257 && head->w.type == NL_DTYPE_F32, "the head is %zu x %zu, float32", head->n_out,
          head->n_in);
    CHECK((head->wt != NULL) == (tier >= 2), "the head has a copy exactly with AVX2 or AVX-512 (tier %d)", tier);
    CHECK(nl_model_transposed_bytes(plain) == 0 && !nl_model_transformer_weights(plain)->lm_head.wt,
          "no_repack makes no copies (%zu bytes)", nl_model_transposed_bytes(plain));
    size_t n = head->n_out * head->n_in, same_file = 1, exact = 1;
    for (size_t k = 0; k < n; k++)
        same_file &= memcmp(&nl_weight_f32(head->w)[k], &nl_weight_f32(head_read->w)[k], sizeof(float)) == 0;
    for (size_t o = 0; head->wt && o < head->n_out; o++)
        for (size_t i = 0; i < head->n_in; i++)
            exact &= memcmp(&head->wt[i * head->n_out + o], &nl_weight_f32(head_read->w)[o * head->n_in + i],
                            sizeof(float)) == 0;
    CHECK(same_file, "the mapped head reads the file's values after its pages were handed back");
    CHECK(exact, "the head's copy is the head transposed, bit for bit");
    size_t V = (size_t)nl_model_config(mapped)->vocab_size, rows = 24;
    int ids[24];
    random_tokens(ids, (int)rows, (int)V, 43);
    NlState *sm = NULL, *sp = NULL;
    if (nl_state_create(&sm, mapped, NULL, &err) == 0 && nl_state_create(&sp, plain, NULL, &err) == 0) {
        float *got = malloc(rows * V * sizeof *got);
        double *want = malloc(rows * V * sizeof *want);
        for (int pass = 0; pass < 2; pass++) {  // 24 rows at once, then the last one alone
            size_t n_rows = pass ? 1 : rows, pos = pass ? rows - 1 : 0;
            memcpy(got, nl_forward(sm, ids + pos, n_rows, pos, n_rows), n_rows * V * sizeof *got);
            const float *p = nl_forward(sp, ids + pos, n_rows, pos, n_rows);
            for (size_t k = 0; k < n_rows * V; k++) want[k] = p[k];
            check_close(pass ? "head from its copy, 1 row, vs no copies" : "head from its copy, 24 rows, vs no copies",
                        got, want, n_rows * V, 1e-5, 1e-5);
        }
        free(got);
        free(want);
    } else {
        CHECK(0, "%s", err.msg);
    }
    nl_state_free(sm);
    nl_state_free(sp);
    nl_model_free(mapped);
    nl_model_free(read);
    nl_model_free(plain);
    remove_twin(twin);
}

// Attention as products (ln-pre-dh64: head size 64, a window of 70 in one call) gives the same bits
// at 1, 2 and 3 threads: each head's products are whole calls on one worker.
static void attention_as_products_is_bitwise_the_same_at_any_thread_count(void) {
    NlModel *m = load_fixture("ln-pre-dh64.json");
    if (!m) return;
    size_t V = (size_t)nl_model_config(m)->vocab_size, T = (size_t)nl_model_config(m)->block_size;
    int *ids = malloc(T * sizeof *ids);
    float *want = malloc(T * V * sizeof *want);
    random_tokens(ids, T, (int)V, 31);
    for (int threads = 1; threads <= 3; threads++) {
        NlRunOptions o = NL_RUN_DEFAULTS;
        o.threads = threads;
        NlState *s = NULL;
        NlError err;
        if (nl_state_create(&s, m, &o, &err) != 0) {
            CHECK(0, "%s", err.msg);
            break;
        }
        const float *got = nl_forward(s, ids, T, 0, T);
        if (threads == 1) memcpy(want, got, T * V * sizeof *want);
        else CHECK(memcmp(want, got, T * V * sizeof *want) == 0, "%d threads change the logits of a window", threads);
        nl_state_free(s);
    }
    free(ids);
    free(want);
    nl_model_free(m);
}

int main(void) {
    RUN(forward_matches_naive_reference_on_every_fixture);
    RUN(the_table_describes_the_transformer);
    RUN(overrides_run_every_norm_and_placement);
    RUN(batch_statistics_couple_the_rows_of_a_call);
    RUN(zero_run_options_keep_the_models_config);
    RUN(eval_scores_each_character_once_with_windowed_context);
    RUN(eval_chunks_score_each_second_half_on_its_own);
    RUN(eval_window_count_follows_the_policy);
    RUN(generation_matches_reference_past_the_window);
    RUN(batch_of_16_matches_each_sequence_alone);
    RUN(batched_streams_match_single_streams);
    RUN(one_stream_is_bitwise_the_same_at_any_thread_count);
    RUN(transposed_copies_are_exact_mapped_or_read);
    RUN(large_tall_weights_stream_from_their_copy);
    RUN(attention_as_products_is_bitwise_the_same_at_any_thread_count);
    return check_summary("test_forward");
}
