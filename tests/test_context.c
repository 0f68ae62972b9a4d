// test_context.c — the sequence context (context.c): fed past its window one token at a time, a line
// at a time, in a batch of streams and with nanoGPT's exact window, its logits are those of one
// forward call over the window the policy says it holds (generate's T/2 shift, restated here); an
// empty window fed more than T keeps the last T; a recurrent model goes through it unshifted, as one
// unbroken forward call would.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "context.h"
#include "normlab.h"
#include "normlab_internal.h"

// A KV-cached step and one forward call over the same window differ in float rounding only (~1e-6
// measured); 2e-5 still catches a window off by one token (logits move by 1e-2 or more).
#define ATOL 2e-5
#define RTOL 2e-5
#define MAX_T 64

typedef struct {
    NlModel *model;
    NlState *state, *ref;  // the context's state (batch streams) and the reference's (one sequence)
    size_t T, V;  // T: the window (SIZE_MAX: none)
} Setup;

static int setup(Setup *s, const char *name, int batch) {
    NlError err;
    NlRunOptions o = NL_RUN_DEFAULTS;
    o.batch = batch;
    memset(s, 0, sizeof *s);
    s->model = load_fixture(name);
    if (!s->model) return -1;
    if (nl_state_create(&s->state, s->model, &o, &err) != 0 || nl_state_create(&s->ref, s->model, NULL, &err) != 0) {
        CHECK(0, "%s: %s", name, err.msg);
        nl_state_free(s->state);
        nl_model_free(s->model);
        return -1;
    }
    s->T = nl_model_window(s->model);
    s->V = (size_t)nl_model_config(s->model)->vocab_size;
    return 0;
}

static void teardown(Setup *s) {
    nl_state_free(s->state);
    nl_state_free(s->ref);
    nl_model_free(s->model);
}

static int token_at(size_t i, size_t V) { return (int)((i * 7 + 3) % V); }

// The window the shift policy holds after ids arrive, restated: the new ids appended while they fit;
// else, into an empty window, the last T of them; else the most recent T/2 of old and new (a shift).
static void policy_feed(int *window, size_t *len, size_t T, const int *ids, size_t n, size_t *shifts) {
    int all[2 * MAX_T + 64];
    memcpy(all, window, *len * sizeof *all);
    memcpy(all + *len, ids, n * sizeof *all);
    size_t total = *len + n, keep = total <= T ? total : *len == 0 ? T : T / 2;
    if (total > T && *len > 0) ++*shifts;
    memcpy(window, all + total - keep, keep * sizeof *window);
    *len = keep;
}

// The largest |got - want| of each test so far, said once at its end.
static double worst;

// 1 when got (V) is within ATOL + RTOL |want| of want (atol, rtol 0: equal); the difference kept.
static int close_to(const float *got, const double *want, size_t V, double atol, double rtol) {
    int ok = 1;
    for (size_t v = 0; v < V; v++) {
        double d = fabs((double)got[v] - want[v]);
        worst = d > worst ? d : worst;
        ok &= d <= atol + rtol * fabs(want[v]);
    }
    return ok;
}

static void say_worst(const char *what) {
    printf("     %s: max |got - want| = %.3g (tolerance %g + %g|want|)\n", what, worst, ATOL, RTOL);
    worst = 0;
}

// The reference: one forward call over the whole window from position 0; logits (V) into want.
static void ref_logits(Setup *s, const int *window, size_t len, double *want) {
    const float *l = nl_forward(s->ref, window, len, 0, 1);
    for (size_t v = 0; v < s->V; v++) want[v] = l[v];
}

// Feeds a prompt of 3, then `step` tokens at a time, 40 in all (several windows of T = 9): every
// feed's logits and position against the policy's window run afresh.
static void feed_and_check(const char *fixture_name, size_t step) {
    Setup s;
    if (setup(&s, fixture_name, 1) != 0) return;
    NlContext *c = NULL;
    NlError err;
    CHECK(nl_context_create(&c, s.state, NULL, &err) == 0, "%s", err.msg);
    int window[MAX_T], ids[64];
    size_t len = 0, shifts = 0, fed = 0;
    double *want = malloc(s.V * sizeof *want);
    for (size_t n = 3; c && fed < 43; fed += n, n = step) {
        for (size_t i = 0; i < n; i++) ids[i] = token_at(fed + i, s.V);
        NlContextPosition pos;
        const float *got = nl_context_feed(c, ids, 1, n, &pos);
        policy_feed(window, &len, s.T, ids, n, &shifts);
        ref_logits(&s, window, len, want);
        char what[96];
        snprintf(what, sizeof what, "%s, %zu at a time, after %zu tokens", fixture_name, step, fed + n);
        CHECK(close_to(got, want, s.V, ATOL, RTOL), "%s: logits differ from the window's", what);
        CHECK(pos.len == len && pos.shifts == shifts, "%s: len %zu shifts %zu, want %zu %zu", what, pos.len, pos.shifts,
              len, shifts);
    }
    CHECK(shifts >= 3, "%s: %zu shifts, want several", fixture_name, shifts);
    say_worst(fixture_name);
    free(want);
    nl_context_free(c);
    teardown(&s);
}

static void one_token_at_a_time_shifts_as_generate(void) {
    feed_and_check("ln-pre-bias.json", 1);
    feed_and_check("rms-post-bias.json", 1);
}

static void a_line_at_a_time_shifts_keeping_the_newest_half(void) {
    feed_and_check("ln-pre-bias.json", 2);  // 2 < T/2: old and new tokens kept
    feed_and_check("ln-pre-bias.json", 6);  // 6 > T/2 = 4: only the line's last 4 kept
}

static void an_empty_window_keeps_the_last_t(void) {
    Setup s;
    if (setup(&s, "ln-pre-bias.json", 1) != 0) return;
    NlContext *c = NULL;
    NlError err;
    CHECK(nl_context_create(&c, s.state, NULL, &err) == 0, "%s", err.msg);
    int ids[20];
    for (size_t i = 0; i < 20; i++) ids[i] = token_at(i, s.V);
    NlContextPosition pos;
    double *want = malloc(s.V * sizeof *want);
    const float *got = c ? nl_context_feed(c, ids, 1, 20, &pos) : NULL;
    ref_logits(&s, ids + 20 - s.T, s.T, want);
    CHECK(got && close_to(got, want, s.V, ATOL, RTOL), "not the last T's logits");
    CHECK(got && pos.len == s.T && pos.shifts == 0, "len %zu shifts %zu", pos.len, pos.shifts);
    say_worst("prompt of 20, T 9");
    free(want);
    nl_context_free(c);
    teardown(&s);
}

// nanoGPT's window: every feed runs the last min(len, T) tokens afresh, so its logits are exactly
// those of that forward call (the same call, the same rounding); never a shift.
static void exact_window_recomputes_the_last_t(void) {
    Setup s;
    if (setup(&s, "ln-pre-bias.json", 1) != 0) return;
    NlContext *c = NULL;
    NlError err;
    CHECK(nl_context_create(&c, s.state, &(NlContextOptions){.exact_window = 1}, &err) == 0, "%s", err.msg);
    int all[40];
    double *want = malloc(s.V * sizeof *want);
    for (size_t i = 0; c && i < 40; i++) {
        all[i] = token_at(i, s.V);
        NlContextPosition pos;
        const float *got = nl_context_feed(c, all + i, 1, 1, &pos);
        size_t len = i + 1 < s.T ? i + 1 : s.T;
        ref_logits(&s, all + i + 1 - len, len, want);
        CHECK(close_to(got, want, s.V, 0.0, 0.0), "token %zu: not the last T's logits", i);
        CHECK(pos.len == len && pos.shifts == 0, "token %zu: len %zu shifts %zu", i, pos.len, pos.shifts);
    }
    say_worst("exact window (equal)");
    free(want);
    nl_context_free(c);
    teardown(&s);
}

// Three streams after one shared prompt, each then fed its own tokens past the window: each
// stream's logits are those of its own window run alone.
static void streams_shift_each_their_own_window(void) {
    enum { B = 3 };
    Setup s;
    if (setup(&s, "ln-pre-bias.json", B) != 0) return;
    NlContext *c = NULL;
    NlError err;
    CHECK(nl_context_create(&c, s.state, &(NlContextOptions){.streams = B}, &err) == 0, "%s", err.msg);
    int prompt[3] = {1, 4, 2}, window[B][MAX_T], toks[B];
    size_t len[B], shifts[B] = {0};
    double *want = malloc(s.V * sizeof *want);
    NlContextPosition pos;
    const float *got = c ? nl_context_feed(c, prompt, 1, 3, &pos) : NULL;
    for (size_t b = 0; b < B; b++) {
        len[b] = 0;
        policy_feed(window[b], &len[b], s.T, prompt, 3, &shifts[b]);
    }
    for (size_t i = 0; got && i < 25; i++) {
        for (size_t b = 0; b < B; b++) {
            ref_logits(&s, window[b], len[b], want);
            CHECK(close_to(got + b * s.V, want, s.V, ATOL, RTOL), "step %zu stream %zu differs", i, b);
            toks[b] = token_at(i * B + b * 5, s.V);
            policy_feed(window[b], &len[b], s.T, &toks[b], 1, &shifts[b]);
        }
        got = nl_context_feed(c, toks, B, 1, &pos);
        CHECK(pos.len == len[0] && pos.shifts == shifts[0], "step %zu: len %zu shifts %zu", i, pos.len, pos.shifts);
    }
    CHECK(shifts[0] >= 3, "%zu shifts, want several", shifts[0]);
    say_worst("3 streams");
    free(want);
    nl_context_free(c);
    teardown(&s);
}

// A recurrent model has no window: 300 tokens fed in pieces are one unbroken forward call.
static void a_recurrent_model_never_shifts(void) {
    static const char *const RNNS[] = {"lstm-ln.json", "gru-none.json"};
    for (size_t m = 0; m < 2; m++) {
        Setup s;
        if (setup(&s, RNNS[m], 1) != 0) return;
        NlContext *c = NULL;
        NlError err;
        CHECK(s.T == SIZE_MAX, "%s: window %zu", RNNS[m], s.T);
        CHECK(nl_context_create(&c, s.state, &(NlContextOptions){.exact_window = 1}, &err) == -1 &&
                  err.code == NL_ERR_ARG,
              "%s: exact_window accepted", RNNS[m]);
        CHECK(nl_context_create(&c, s.state, NULL, &err) == 0, "%s", err.msg);
        int all[300];
        for (size_t i = 0; i < 300; i++) all[i] = token_at(i, s.V);
        NlContextPosition pos = {0};
        const float *got = NULL;
        for (size_t at = 0, n = 5; c && at < 300; at += n, n = at < 200 ? 1 : 50)
            got = nl_context_feed(c, all + at, 1, n, &pos);  // a prompt, one token at a time, then lines
        double *want = malloc(s.V * sizeof *want);
        ref_logits(&s, all, 300, want);
        CHECK(got && close_to(got, want, s.V, ATOL, RTOL), "%s: logits differ from one call", RNNS[m]);
        CHECK(pos.len == 300 && pos.shifts == 0, "%s: len %zu shifts %zu", RNNS[m], pos.len, pos.shifts);
        say_worst(RNNS[m]);
        free(want);
        nl_context_free(c);
        teardown(&s);
    }
}

static void the_shift_keeps_half_the_window(void) {
    CHECK(nl_context_shift_keep(9) == 4 && nl_context_shift_keep(128) == 64, "T/2");
    CHECK(nl_context_shift_keep(1) == 1, "a window of 1 keeps its token");
}

int main(void) {
    RUN(one_token_at_a_time_shifts_as_generate);
    RUN(a_line_at_a_time_shifts_keeping_the_newest_half);
    RUN(an_empty_window_keeps_the_last_t);
    RUN(exact_window_recomputes_the_last_t);
    RUN(streams_shift_each_their_own_window);
    RUN(a_recurrent_model_never_shifts);
    RUN(the_shift_keeps_half_the_window);
    return check_summary("test_context");
}
