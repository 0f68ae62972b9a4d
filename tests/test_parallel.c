// test_parallel.c — engine threads give the same bytes as one thread (eval, sample streams), each
// worker really ran (its profiler counted positions), and the OpenBLAS kernel choice is the table
// docs/performance.md gives.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "normlab_internal.h"
#include "normlab_lab.h"

#define MAX_WORKERS 4

// A text of n ids in [0, V): a fixed pseudo-random walk, so windows differ.
static int *make_text(size_t n, int V) {
    int *ids = malloc(n * sizeof *ids);
    uint64_t s = 12345;
    for (size_t i = 0; ids && i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        ids[i] = (int)((s >> 33) % (uint64_t)V);
    }
    return ids;
}

// Evaluates ids on `workers` states of `batch` windows, each with a profiler; returns the result and
// each worker's count of positions through the forward pass.
static int eval_on(const NlModel *m, int workers, int batch, const int *ids, size_t n, size_t stride, NlEvalResult *r,
                   uint64_t *positions) {
    NlState *states[MAX_WORKERS] = {0};
    NlProfiler *profs[MAX_WORKERS] = {0};
    NlError err;
    const NlConfig *c = nl_model_config(m);
    NlRunOptions run = {
        .norm = c->norm, .placement = c->placement, .batch = batch, .threads = 1, .bn_stats = NL_BN_RUNNING};
    int rc = 0;
    for (int i = 0; i < workers && rc == 0; i++) {
        rc = nl_state_create(&states[i], m, &run, &err);
        if (rc == 0) rc = nl_profiler_create(&profs[i], c, 0, 0, &err);
        if (rc == 0) nl_state_set_profiler(states[i], profs[i]);
    }
    if (rc == 0) rc = nl_eval(states, (size_t)workers, ids, n, &(NlEvalOptions){.stride = stride}, r, &err);
    CHECK(rc == 0, "eval on %d workers: %s", workers, err.msg);
    for (int i = 0; i < workers; i++) {
        positions[i] = profs[i] ? nl_profiler_tokens(profs[i], NL_PHASE_PREFILL) : 0;
        nl_state_free(states[i]);
        nl_profiler_free(profs[i]);
    }
    return rc;
}

static void eval_is_the_same_bits_on_1_2_and_4_threads_and_every_thread_works(void) {
    NlModel *m = NULL;
    NlError err;
    if (nl_model_load(&m, fixture("ln-pre-t70.json"), NULL, &err) != 0) {
        CHECK(0, "%s", err.msg);
        return;
    }
    size_t n = 3000;  // 1 + ceil((2999 - 70) / 35) = 85 windows: 22 groups of 4
    int *ids = make_text(n, nl_model_config(m)->vocab_size);
    NlEvalResult one, many;
    uint64_t pos1[MAX_WORKERS], pos[MAX_WORKERS];
    if (eval_on(m, 1, 4, ids, n, 35, &one, pos1) == 0) {
        CHECK(one.count == n - 1, "scored %zu of %zu", one.count, n - 1);
        CHECK(pos1[0] == 85 * 70, "one worker ran %llu positions, expected 85 windows of 70",
              (unsigned long long)pos1[0]);
        for (int w = 2; w <= MAX_WORKERS; w += 2) {
            if (eval_on(m, w, 4, ids, n, 35, &many, pos) != 0) continue;
            CHECK(memcmp(&many.nll_sum, &one.nll_sum, sizeof one.nll_sum) == 0 && many.count == one.count,
                  "%d workers: %.17g over %zu, 1 worker: %.17g over %zu", w, many.nll_sum, many.count, one.nll_sum,
                  one.count);
            uint64_t total = 0;
            for (int i = 0; i < w; i++) {
                CHECK(pos[i] > 0, "worker %d of %d ran no window", i, w);
                total += pos[i];
            }
            CHECK(total == pos1[0], "%d workers ran %llu positions in all, 1 worker %llu", w, (unsigned long long)total,
                  (unsigned long long)pos1[0]);
        }
    }
    // Batching changes only the order of float sums: 1 window per call against 4, to 1e-6 relative.
    if (eval_on(m, 1, 1, ids, n, 35, &many, pos) == 0)
        CHECK(fabs(many.nll_sum - one.nll_sum) <= 1e-6 * fabs(one.nll_sum), "batch 1: %.9g, batch 4: %.9g",
              many.nll_sum, one.nll_sum);
    free(ids);
    nl_model_free(m);
}

static void eval_reports_the_first_non_finite_loss_whatever_the_threads(void) {
    NlModel *m = NULL;
    NlError err;
    if (nl_model_load(&m, fixture("overflow.json"), NULL, &err) != 0) {
        CHECK(0, "%s", err.msg);
        return;
    }
    int *ids = make_text(400, nl_model_config(m)->vocab_size);
    char first[sizeof err.msg] = "";
    for (int w = 1; w <= 3; w++) {
        NlState *states[3] = {0};
        NlRunOptions run = {.norm = nl_model_config(m)->norm,
                            .placement = nl_model_config(m)->placement,
                            .batch = 2,
                            .threads = 1,
                            .bn_stats = NL_BN_RUNNING};
        for (int i = 0; i < w; i++) nl_state_create(&states[i], m, &run, &err);
        NlEvalResult r;
        int rc = nl_eval(states, (size_t)w, ids, 400, &(NlEvalOptions){.stride = 4}, &r, &err);
        CHECK(rc != 0 && strstr(err.msg, "non-finite loss at token"), "%d workers: rc %d, '%s'", w, rc, err.msg);
        if (w == 1) snprintf(first, sizeof first, "%s", err.msg);
        else CHECK(strcmp(err.msg, first) == 0, "%d workers say '%s', 1 worker '%s'", w, err.msg, first);
        for (int i = 0; i < w; i++) nl_state_free(states[i]);
    }
    free(ids);
    nl_model_free(m);
}

typedef struct {
    int tokens[7][64];
    size_t len[7];
} Streams;

static int collect(int stream, int token, void *ctx) {
    Streams *s = ctx;
    if (s->len[stream] < 64) s->tokens[stream][s->len[stream]++] = token;
    return 0;
}

// 7 streams in groups of 3 on `workers` threads; returns each worker's decoded positions.
static int generate_on(const NlModel *m, int workers, Streams *out, uint64_t *positions) {
    NlState *states[MAX_WORKERS] = {0};
    NlProfiler *profs[MAX_WORKERS] = {0};
    NlSampler *samplers[7] = {0};
    NlError err;
    const NlConfig *c = nl_model_config(m);
    NlRunOptions run = {
        .norm = c->norm, .placement = c->placement, .batch = 3, .threads = 1, .bn_stats = NL_BN_RUNNING};
    int rc = 0;
    for (int i = 0; i < workers && rc == 0; i++) {
        rc = nl_state_create(&states[i], m, &run, &err);
        if (rc == 0) rc = nl_profiler_create(&profs[i], c, 0, 0, &err);
        if (rc == 0) nl_state_set_profiler(states[i], profs[i]);
    }
    for (int i = 0; i < 7 && rc == 0; i++)
        rc = nl_sampler_create(&samplers[i], c->vocab_size,
                               (NlSamplerParams){.temperature = 0.9, .top_k = 0, .top_p = 1.0}, 40 + (uint64_t)i, &err);
    const int prompt[] = {1, 2, 3};
    NlGenerateOptions g = {.n_new = 60, .exact_window = 0};
    NlGenerateStats st;
    memset(out, 0, sizeof *out);
    if (rc == 0)
        rc = nl_generate(
            states, (size_t)workers, samplers, 7, prompt, 3,
            &(NlGenerateOptions){.n_new = g.n_new, .exact_window = g.exact_window, .emit = collect, .emit_ctx = out},
            &st, &err);
    CHECK(rc == 0, "generate on %d workers: %s", workers, err.msg);
    CHECK(rc != 0 || st.decode_tokens == 59, "%zu decode steps, expected 59", st.decode_tokens);
    for (int i = 0; i < workers; i++) {
        positions[i] = profs[i] ? nl_profiler_tokens(profs[i], NL_PHASE_DECODE) : 0;
        nl_state_free(states[i]);
        nl_profiler_free(profs[i]);
    }
    for (int i = 0; i < 7; i++) nl_sampler_free(samplers[i]);
    return rc;
}

static void sample_streams_are_the_same_tokens_on_1_2_and_3_threads(void) {
    NlModel *m = NULL;
    NlError err;
    if (nl_model_load(&m, fixture("ln-pre-t70.json"), NULL, &err) != 0) {
        CHECK(0, "%s", err.msg);
        return;
    }
    Streams one, many;
    uint64_t pos[MAX_WORKERS];
    if (generate_on(m, 1, &one, pos) == 0) {
        for (int i = 0; i < 7; i++) CHECK(one.len[i] == 60, "stream %d has %zu tokens", i, one.len[i]);
        for (int w = 2; w <= 3; w++) {
            if (generate_on(m, w, &many, pos) != 0) continue;
            CHECK(memcmp(&one, &many, sizeof one) == 0, "%d workers: the streams differ from 1 worker's", w);
            for (int i = 0; i < w; i++) CHECK(pos[i] > 0, "worker %d of %d decoded nothing", i, w);
        }
    }
    nl_model_free(m);
}

static void merged_profiles_add_up_and_count_threads(void) {
    NlModel *m = NULL;
    NlError err;
    if (nl_model_load(&m, fixture("ln-pre-t70.json"), NULL, &err) != 0) {
        CHECK(0, "%s", err.msg);
        return;
    }
    NlProfiler *a = NULL, *b = NULL;
    const NlConfig *c = nl_model_config(m);
    nl_profiler_create(&a, c, 0, 0, &err);
    nl_profiler_create(&b, c, 0, 0, &err);
    double t = nl_profiler_begin(a);
    nl_profiler_record(a, t, 0, NL_COMP_QKV, 1, 5, 5);
    t = nl_profiler_begin(b);
    nl_profiler_record(b, t, 0, NL_COMP_QKV, 2, 5, 5);
    nl_profiler_record(b, t, -1, NL_COMP_EMBED, 2, 5, 5);
    nl_profiler_merge(a, b);
    const NlProfileCell *q = nl_profiler_cell(a, NL_PHASE_PREFILL, 0, NL_COMP_QKV);
    CHECK(q->calls == 2 && q->tokens == 15, "merged qkv: %llu calls, %llu tokens", (unsigned long long)q->calls,
          (unsigned long long)q->tokens);
    CHECK(nl_profiler_tokens(a, NL_PHASE_PREFILL) == 10, "positions %llu",
          (unsigned long long)nl_profiler_tokens(a, NL_PHASE_PREFILL));
    CHECK(nl_profiler_threads(a) == 2, "threads %d", nl_profiler_threads(a));
    nl_profiler_free(a);
    nl_profiler_free(b);
    nl_model_free(m);
}

// ---- the kernel family choice: a table of (reported family, CPU, environment) -> choice

static void blas_choice_follows_the_table(void) {
    const NlCpuFeatures sse = {0}, avx = {1, 0, 0, 0, 0, 0, 0}, avx2 = {1, 1, 1, 0, 0, 0, 0},
                        avx512 = {1, 1, 1, 1, 1, 1, 1}, avx512f_only = {1, 1, 1, 1, 0, 0, 0};
    struct {
        const char *reported;
        NlCpuFeatures cpu;
        const char *env;
        int opt_out;
        const char *want;  // NULL: keep
    } cases[] = {
        {"Prescott", avx512, NULL, 0, "SkylakeX"},  // the 2024 Xeon of the issue
        {"Prescott", avx2, NULL, 0, "Haswell"},  // an AVX2 CPU that OpenBLAS does not know
        {"prescott", avx512, NULL, 0, "SkylakeX"},  // names compare without case
        {"Nehalem", avx2, NULL, 0, "Haswell"},
        {"Sandybridge", avx2, NULL, 0, "Haswell"},  // AVX kernels on an AVX2 CPU
        {"Haswell", avx512, NULL, 0, "SkylakeX"},  // AVX2 kernels on an AVX-512 CPU
        {"Prescott", avx512f_only, NULL, 0, "Haswell"},  // AVX-512F without BW/VL/DQ is not SkylakeX
        {"Prescott", avx, NULL, 0, NULL},  // nothing better that normlab picks
        {"Prescott", sse, NULL, 0, NULL},  // a real SSE3 CPU
        {"Zen", avx2, NULL, 0, NULL},  // OpenBLAS already right
        {"Cooperlake", avx512, NULL, 0, NULL},
        {"SkylakeX", avx512, NULL, 0, NULL},
        {"Haswell", avx2, NULL, 0, NULL},
        {"Prescott", avx512, "Prescott", 0, NULL},  // the environment set it: never overridden
        {"Haswell", avx512, "Haswell", 0, NULL},
        {"Prescott", avx512, "", 0, "SkylakeX"},  // set but empty counts as unset
        {"Prescott", avx512, NULL, 1, NULL},  // NORMLAB_BLAS_AUTO=0
        {"NeoverseN2", avx512, NULL, 0, NULL},  // a family this table does not know
        {NULL, avx512, NULL, 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = nl_blas_choose_core_for(cases[i].reported, cases[i].cpu, cases[i].env, cases[i].opt_out);
        int same = (!got && !cases[i].want) || (got && cases[i].want && strcmp(got, cases[i].want) == 0);
        CHECK(same, "case %zu (%s, env %s, opt-out %d): got %s, want %s", i,
              cases[i].reported ? cases[i].reported : "NULL", cases[i].env ? cases[i].env : "unset", cases[i].opt_out,
              got ? got : "keep", cases[i].want ? cases[i].want : "keep");
    }
    CHECK(nl_blas_is_generic("Prescott") && nl_blas_is_generic("Nehalem") && !nl_blas_is_generic("Haswell") &&
              !nl_blas_is_generic("Cooperlake") && !nl_blas_is_generic("NeoverseN2"),
          "generic families");
    const char *core = nl_blas_core();
    CHECK(core && *core, "OpenBLAS reports its family: '%s'", core ? core : "NULL");
}

int main(void) {
    RUN(eval_is_the_same_bits_on_1_2_and_4_threads_and_every_thread_works);
    RUN(eval_reports_the_first_non_finite_loss_whatever_the_threads);
    RUN(sample_streams_are_the_same_tokens_on_1_2_and_3_threads);
    RUN(merged_profiles_add_up_and_count_threads);
    RUN(blas_choice_follows_the_table);
    return check_summary("test_parallel");
}
