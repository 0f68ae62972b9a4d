// test_rnn.c — the recurrent models (LSTM, GRU; LayerNorm or none) against the naive double
// reference (ref_rnn_forward): prefill across chunks, one position at a time, a split prefill,
// batches, the --norm override, eval with one unbroken state and with segments, greedy generation
// with no window, the state-norm statistics, and the options a recurrent model refuses.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model.h"
#include "normlab_lab.h"
#include "ref_forward.h"

// Logits are O(1..5); the float engine stays within ~1e-6 of the double reference (measured), and
// 2e-5 still catches any formula error (a gate, a bias or a norm off changes them by 1e-2 or more).
#define ATOL 2e-5
#define RTOL 2e-5
#define N 150  // positions: more than NL_RNN_LOGITS, so a prefill runs in two chunks

static const char *const FIXTURES[] = {"lstm-ln.json", "lstm-none.json", "gru-ln.json", "gru-none.json"};
#define N_FIXTURES (sizeof FIXTURES / sizeof FIXTURES[0])

typedef struct {
    NlModel *model;
    NlState *state;
    NlConfig cfg;  // with the run options applied
    size_t V;
} Setup;

static int setup(Setup *s, const char *name, NlNormType norm, int batch) {
    NlError err;
    NlRunOptions o = NL_RUN_DEFAULTS;
    o.norm = norm;
    o.batch = batch;
    memset(s, 0, sizeof *s);
    if (nl_model_load(&s->model, fixture(name), NULL, &err) != 0 ||
        nl_state_create(&s->state, s->model, &o, &err) != 0) {
        CHECK(0, "%s: %s", name, err.msg);
        nl_model_free(s->model);
        return -1;
    }
    s->cfg = *nl_state_config(s->state);
    s->V = (size_t)s->cfg.vocab_size;
    return 0;
}

static void teardown(Setup *s) {
    nl_state_free(s->state);
    nl_model_free(s->model);
}

static void random_tokens(int *ids, size_t n, size_t V, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        ids[i] = (int)((seed >> 16) % (unsigned)V);
    }
}

// The run's norm: as configured, or the other one (a LayerNorm model without its norms, a plain
// model with unit-gain LayerNorms).
static NlNormType other_norm(const char *name) { return strstr(name, "-ln") ? NL_NORM_NONE : NL_NORM_LAYERNORM; }

static void one_fixture(const char *name, NlNormType norm) {
    Setup s;
    if (setup(&s, name, norm, 1) != 0) return;
    size_t V = s.V, last = NL_RNN_LOGITS;
    int ids[N];
    random_tokens(ids, N, V, 7);
    double *want = malloc(N * V * sizeof *want);
    CHECK(ref_rnn_forward(want, &s.cfg, nl_model_recurrent_weights(s.model), ids, N, NULL, NULL) == 0, "reference ran");
    char what[160];
    snprintf(what, sizeof what, "%s as %s: prefill of %d, last %zu logits", name, nl_name(NL_NAMES_NORM, s.cfg.norm), N,
             last);
    check_close(what, nl_forward(s.state, ids, N, 0, last), want + (N - last) * V, last * V, ATOL, RTOL);
    int ok = 1;
    for (size_t p = 0; p < N; p++) {  // one position at a time, each call continuing the last
        const float *got = nl_forward(s.state, ids + p, 1, p, 1);
        for (size_t v = 0; v < V; v++) ok &= fabs(got[v] - want[p * V + v]) <= ATOL + RTOL * fabs(want[p * V + v]);
    }
    CHECK(ok, "%s as %s: stepping one position at a time differs from the reference", name,
          nl_name(NL_NAMES_NORM, s.cfg.norm));
    nl_forward(s.state, ids, 5, 0, 1);  // pos 0 starts afresh, whatever came before
    snprintf(what, sizeof what, "%s: prefill split at 5", name);
    check_close(what, nl_forward(s.state, ids + 5, N - 5, 5, last), want + (N - last) * V, last * V, ATOL, RTOL);
    free(want);
    teardown(&s);
}

static void forward_matches_naive_reference(void) {
    for (size_t i = 0; i < N_FIXTURES; i++) {
        one_fixture(FIXTURES[i], NL_NORM_AS_CONFIGURED);
        one_fixture(FIXTURES[i], other_norm(FIXTURES[i]));
    }
}

// Three sequences in one call, each with its own state, match each run alone; so does a sequence
// continued from another's copied state.
static void batches_keep_sequences_apart(void) {
    for (size_t i = 0; i < N_FIXTURES; i++) {
        Setup s;
        if (setup(&s, FIXTURES[i], NL_NORM_AS_CONFIGURED, 3) != 0) continue;
        size_t V = s.V, n = 40;
        int ids[3 * 40];
        random_tokens(ids, 3 * n, V, 11 + (unsigned)i);
        double *want = malloc(n * V * sizeof *want);
        const float *got = nl_forward_batch(s.state, ids, 3, n, 0, n);  // (3, n, V)
        float *copy = malloc(3 * n * V * sizeof *copy);
        memcpy(copy, got, 3 * n * V * sizeof *copy);
        for (size_t b = 0; b < 3; b++) {
            ref_rnn_forward(want, &s.cfg, nl_model_recurrent_weights(s.model), ids + b * n, n, NULL, NULL);
            char what[96];
            snprintf(what, sizeof what, "%s: sequence %zu of a batch of 3", FIXTURES[i], b);
            check_close(what, copy + b * n * V, want, n * V, ATOL, RTOL);
        }
        // sequence 0 takes 20 tokens, its state goes to sequence 2, and both go on with the same token
        nl_forward(s.state, ids, 20, 0, 1);
        nl_state_copy_cache(s.state, 0, 2, 20);
        int next[3] = {ids[20], ids[20], ids[20]};
        got = nl_forward_batch(s.state, next, 3, 1, 20, 1);
        CHECK(memcmp(got, got + 2 * V, V * sizeof *got) == 0, "%s: a copied state continues identically", FIXTURES[i]);
        ref_rnn_forward(want, &s.cfg, nl_model_recurrent_weights(s.model), ids, 21, NULL, NULL);
        check_close("the copied state's next logits", got + 2 * V, want + 20 * V, V, ATOL, RTOL);
        free(copy);
        free(want);
        teardown(&s);
    }
}

// Sum of -ln p over targets ids[a+1..b] from the zero state at input a (the reference).
static double ref_nll_span(const Setup *s, const int *ids, size_t a, size_t b) {
    size_t n = b - a, V = s->V;
    double *logits = malloc(n * V * sizeof *logits), total = 0.0;
    ref_rnn_forward(logits, &s->cfg, nl_model_recurrent_weights(s->model), ids + a, n, NULL, NULL);
    for (size_t t = 0; t < n; t++) {
        const double *row = logits + t * V;
        double max = row[0], sum = 0.0;
        for (size_t v = 1; v < V; v++) max = fmax(max, row[v]);
        for (size_t v = 0; v < V; v++) sum += exp(row[v] - max);
        total += log(sum) - (row[ids[a + t + 1]] - max);
    }
    free(logits);
    return total;
}

// Eval through one unbroken state, and cut into K segments (part k = inputs [k(n-1)/K,
// (k+1)(n-1)/K), each from the zero state), as docs/usage.md states them.
static void eval_follows_the_segment_policy(void) {
    Setup s;
    if (setup(&s, "gru-ln.json", NL_NORM_AS_CONFIGURED, 4) != 0) return;
    size_t n = 301;  // 300 inputs: more than two chunks; with K = 4 parts of 75, with K = 7 of 42 and 43
    int ids[301];
    random_tokens(ids, n, s.V, 3);
    NlError err;
    for (size_t K = 1; K <= 4; K += 3) {
        NlEvalResult r;
        CHECK(nl_eval(&(s.state), 1, ids, n, &(NlEvalOptions){.segments = K}, &r, &err) == 0, "%s", err.msg);
        double want = 0.0;
        for (size_t k = 0; k < K; k++) want += ref_nll_span(&s, ids, k * (n - 1) / K, (k + 1) * (n - 1) / K);
        CHECK(r.count == n - 1, "%zu segments: %zu characters scored", K, r.count);
        CHECK(fabs(r.nll_sum - want) <= 1e-5 * want, "%zu segments: nll %.9g, reference %.9g", K, r.nll_sum, want);
    }
    NlEvalResult one;
    CHECK(nl_eval(&(s.state), 1, ids, n, &(NlEvalOptions){.stride = 64}, &one, &err) == 0, "%s",
          err.msg);  // stride ignored
    CHECK(fabs(one.nll_sum - ref_nll_span(&s, ids, 0, n - 1)) <= 1e-5 * one.nll_sum, "nl_eval: one unbroken state");
    teardown(&s);
    // uneven parts (longer ones first in the batch) and more segments than the state's batch
    if (setup(&s, "lstm-none.json", NL_NORM_AS_CONFIGURED, 7) != 0) return;
    NlEvalResult r;
    CHECK(nl_eval(&(s.state), 1, ids, n, &(NlEvalOptions){.segments = 7}, &r, &err) == 0, "%s", err.msg);
    double want = 0.0;
    for (size_t k = 0; k < 7; k++) want += ref_nll_span(&s, ids, k * (n - 1) / 7, (k + 1) * (n - 1) / 7);
    CHECK(fabs(r.nll_sum - want) <= 1e-5 * want, "7 uneven segments: nll %.9g, reference %.9g", r.nll_sum, want);
    CHECK(nl_eval(&(s.state), 1, ids, n, &(NlEvalOptions){.segments = 8}, &r, &err) != 0 && err.code == NL_ERR_ARG,
          "8 segments on a state of 7 are refused");
    CHECK(nl_eval(&(s.state), 1, ids, 4, &(NlEvalOptions){.segments = 5}, &r, &err) != 0,
          "more segments than inputs are refused");
    teardown(&s);
}

typedef struct {
    int tokens[256];
    size_t n;
} Collected;

static int collect(int stream, int token, void *ctx) {
    (void)stream;
    Collected *c = ctx;
    c->tokens[c->n++] = token;
    return 0;
}

// Greedy generation of 200 tokens (past any window a transformer would have): the reference
// recomputes the whole sequence from the zero state for every token.
static void generation_has_no_window(void) {
    Setup s;
    if (setup(&s, "lstm-ln.json", NL_NORM_AS_CONFIGURED, 1) != 0) return;
    NlSampler *greedy = NULL;
    NlError err;
    nl_sampler_create(&greedy, (int)s.V, (NlSamplerParams){.temperature = 0.0, .top_k = 0, .top_p = 1.0}, 1, &err);
    int seq[205] = {1, 4, 2, 7, 3};
    Collected got = {{0}, 0};
    NlGenerateOptions o = {.n_new = 200, .exact_window = 0};
    NlGenerateStats st;
    CHECK(generate_one(s.state, greedy, seq, 5, &o, collect, &got, &st, &err) == 0, "%s", err.msg);
    CHECK(st.context_shifts == 0 && st.prompt_used == 5, "no shifts (%zu), the whole prompt used (%zu)",
          st.context_shifts, st.prompt_used);
    double *logits = malloc(205 * s.V * sizeof *logits);
    size_t same = 0;
    for (size_t i = 0; i < 200; i++) {
        ref_rnn_forward(logits, &s.cfg, nl_model_recurrent_weights(s.model), seq, 5 + i, NULL, NULL);
        const double *row = logits + (4 + i) * s.V;
        int best = 0;
        for (int v = 1; v < (int)s.V; v++) best = row[v] > row[best] ? v : best;
        same += got.tokens[i] == best;
        seq[5 + i] = got.tokens[i];  // follow the engine's tokens, so one near-tie does not derail the rest
    }
    CHECK(same == 200, "%zu of 200 greedy tokens match the reference", same);
    o.exact_window = 1;
    CHECK(generate_one(s.state, greedy, seq, 5, &o, collect, &got, &st, &err) != 0 && err.code == NL_ERR_ARG,
          "exact_window is refused: there is no window");
    free(logits);
    nl_sampler_free(greedy);
    teardown(&s);
}

// nl_stats_state_norm against the reference's ||h_t|| and ||c_t||, bucket by bucket.
static void state_norms_over_time(void) {
    const char *names[2] = {"lstm-ln.json", "gru-none.json"};
    for (int i = 0; i < 2; i++) {
        Setup s;
        if (setup(&s, names[i], NL_NORM_AS_CONFIGURED, 1) != 0) continue;
        NlStats *st = NULL;
        NlError err;
        CHECK(nl_stats_create(&st, &s.cfg, 1, 0, &err) == 0, "%s", err.msg);
        nl_state_set_stats(s.state, st);
        int ids[N];
        random_tokens(ids, N, s.V, 5);
        double *logits = malloc(N * s.V * sizeof *logits), h[N], c[N];
        nl_forward(s.state, ids, N, 0, 1);
        ref_rnn_forward(logits, &s.cfg, nl_model_recurrent_weights(s.model), ids, N, h, c);
        int ok = 1, buckets = 0;
        for (int k = 0; k < NL_STATE_BUCKETS; k++) {
            size_t lo = ((size_t)1 << k) - 1, hi = ((size_t)2 << k) - 1;
            if (lo >= N) {
                ok &= isnan(nl_stats_state_norm(st, s.cfg.n_layer - 1, 0, k));  // no position: NaN
                continue;
            }
            double hs = 0.0, cs = 0.0;
            size_t count = 0;
            for (size_t t = lo; t < hi && t < N; t++, count++) {
                hs += h[t];
                cs += c[t];
            }
            double gh = nl_stats_state_norm(st, s.cfg.n_layer - 1, 0, k);
            double gc = nl_stats_state_norm(st, s.cfg.n_layer - 1, 1, k);
            ok &= fabs(gh - hs / count) <= 1e-5 * hs / count;
            ok &= s.cfg.arch == NL_ARCH_LSTM ? fabs(gc - cs / count) <= 1e-5 * cs / count : isnan(gc);
            buckets++;
        }
        CHECK(ok && buckets == 8, "%s: ||h_t|| (and ||c_t||) per time bucket match the reference (%d buckets)",
              names[i], buckets);
        free(logits);
        nl_state_set_stats(s.state, NULL);
        nl_stats_free(st);
        teardown(&s);
    }
}

// The transformer's run options a recurrent model cannot take are refused, naming the problem.
static void transformer_options_are_refused(void) {
    NlModel *m = NULL;
    NlState *s = NULL;
    NlError err;
    if (nl_model_load(&m, fixture("gru-ln.json"), NULL, &err) != 0) {
        CHECK(0, "%s", err.msg);
        return;
    }
    NlRunOptions o = NL_RUN_DEFAULTS;
    o.placement = NL_PLACE_POST;
    CHECK(nl_state_create(&s, m, &o, &err) != 0 && err.code == NL_ERR_ARG && strstr(err.msg, "placement"),
          "a placement is refused: %s", err.msg);
    o = NL_RUN_DEFAULTS;
    o.norm = NL_NORM_RMSNORM;
    CHECK(nl_state_create(&s, m, &o, &err) != 0 && strstr(err.msg, "rmsnorm"), "rmsnorm is refused: %s", err.msg);
    CHECK(s == NULL, "no state on failure");
    nl_model_free(m);
}

// The family's table (nl_family_info, nl_config_describe, nl_config_has_component): what the
// command line and the lab print and count from, instead of testing the arch.
static void the_tables_describe_the_lstm_and_the_gru(void) {
    for (size_t i = 0; i < N_FIXTURES; i++) {
        NlModel *m = load_fixture(FIXTURES[i]);
        if (!m) continue;
        const NlConfig *c = nl_model_config(m);
        const NlFamilyInfo *f = nl_family_info(c->arch);
        int lstm = c->arch == NL_ARCH_LSTM;
        CHECK(strcmp(f->name, lstm ? "lstm" : "gru") == 0 && !f->has_placement && !f->has_residual_stream &&
                  !f->prunes_rows,
              "%s: %s", FIXTURES[i], f->name);
        CHECK(f->state_vectors == (lstm ? 2 : 1) && strcmp(f->state_names[0], "h") == 0 &&
                  (!lstm || strcmp(f->state_names[1], "c") == 0),
              "%s: %d state vectors", FIXTURES[i], f->state_vectors);
        CHECK(f->norms == (1u << NL_NORM_LAYERNORM | 1u << NL_NORM_NONE), "%s: runs LayerNorm or none", FIXTURES[i]);
        CHECK(nl_model_state_bytes(m) == (size_t)(c->n_layer * c->n_hidden * f->state_vectors) * sizeof(float),
              "%s: state bytes are its vectors'", FIXTURES[i]);
        NlConfigField fields[NL_CONFIG_FIELDS_MAX];
        size_t k = nl_config_describe(c, fields);
        CHECK(k == 4 && strcmp(fields[0].key, "n_embd") == 0 && fields[0].number == c->n_input && c->n_input > 0 &&
                  c->n_embd == 0 && strcmp(fields[1].key, "n_hidden") == 0 && fields[1].number == c->n_hidden &&
                  strcmp(fields[2].string, nl_name(NL_NAMES_NORM, c->norm)) == 0 && fields[3].number == c->norm_eps,
              "%s: info's fields are config.json's (%zu)", FIXTURES[i], k);
        int comps = 0;
        for (int comp = 0; comp < NL_COMP_COUNT; comp++) comps += nl_config_has_component(c, (NlComponent)comp);
        CHECK(comps == 7 && nl_config_has_component(c, NL_COMP_RNN_GATES) && !nl_config_has_component(c, NL_COMP_NORM1),
              "%s: embed, the four rnn components, head and sampling (%d)", FIXTURES[i], comps);
        nl_model_free(m);
    }
}

int main(void) {
    RUN(forward_matches_naive_reference);
    RUN(the_tables_describe_the_lstm_and_the_gru);
    RUN(batches_keep_sequences_apart);
    RUN(eval_follows_the_segment_policy);
    RUN(generation_has_no_window);
    RUN(state_norms_over_time);
    RUN(transformer_options_are_refused);
    return check_summary("test_rnn");
}
