// test_profile.c — the profiler's deterministic parts: FLOP and byte counts against hand-computed
// formulas, the JSON report's fields, the Chrome trace's names and nesting, rows + uncovered = wall,
// and generation unchanged by profiling, the text summary against the full table of the same
// profiler. No duration is asserted.
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "normlab_internal.h"
#include "normlab_lab.h"
#include "report_profile.h"

// ln-pre-bias.json: V=11, D=12, H=3, F=20, T=9, L=2, LayerNorm, biases, gelu.
static const NlConfig CFG = {.vocab_size = 11,
                             .n_layer = 2,
                             .n_head = 3,
                             .n_embd = 12,
                             .block_size = 9,
                             .n_inner = 20,
                             .norm = NL_NORM_LAYERNORM,
                             .placement = NL_PLACE_PRE,
                             .norm_eps = 1e-5,
                             .activation = NL_ACT_GELU,
                             .bias = 1,
                             .tie_embeddings = 1};

static void expect_cost(NlComponent c, size_t B, size_t n, size_t ctx, double flops, double bytes) {
    double f, b;
    nl_profile_cost(&CFG, 0, c, B, n, ctx, &f, &b);
    CHECK(f == flops && b == bytes, "%s n=%zu ctx=%zu: %g FLOPs %g bytes, expected %g and %g", nl_component_name(c), n,
          ctx, f, b, flops, bytes);
}

static void costs_match_hand_computed_formulas(void) {
    // qkv, 5 positions: 2*5*12*36 + 5*36 bias adds; bytes 4*(12*36 W + 36 b + 5*12 in + 5*36 out)
    expect_cost(NL_COMP_QKV, 1, 5, 5, 4500, 2832);
    // attention prefill of 5 at position 0: 15 unmasked pairs, 4*15*12 + 4*15*3;
    // bytes 4*(5*36 qkv + 2*5*12 appended + 2*5*12 cache read + 5*12 out)
    expect_cost(NL_COMP_ATTENTION, 1, 5, 5, 900, 1920);
    // attention of 2 new positions after 3 cached (5 keys): 2*3 + 3 = 9 pairs, 4*9*12 + 4*9*3
    expect_cost(NL_COMP_ATTENTION, 1, 2, 5, 540, 4 * (2 * 36 + 2 * 2 * 12 + 2 * 5 * 12 + 2 * 12));
    // attention decode at position 6 (7 keys): 4*7*12 + 4*7*3
    expect_cost(NL_COMP_ATTENTION, 1, 1, 7, 420, 4 * (36 + 24 + 2 * 7 * 12 + 12));
    // LayerNorm of 5 rows: 8 FLOPs per element; bytes 4*(2*5*12 + 2*12)
    expect_cost(NL_COMP_NORM1, 1, 5, 5, 480, 576);
    expect_cost(NL_COMP_MLP_UP, 1, 5, 5, 2500, 4 * (240 + 20 + 60 + 100));
    expect_cost(NL_COMP_MLP_DOWN, 1, 1, 3, 2 * 20 * 12 + 12, 4 * (240 + 12 + 20 + 12));
    expect_cost(NL_COMP_ACTIVATION, 1, 5, 5, 500, 4 * 2 * 100);  // gelu: 5 FLOPs per element
    expect_cost(NL_COMP_LM_HEAD, 1, 1, 9, 264, 620);
    expect_cost(NL_COMP_RESIDUAL, 1, 2, 2, 24, 4 * 3 * 24);
    // two sequences: row-wise work doubles; a linear reads its weights once for both
    expect_cost(NL_COMP_ATTENTION, 2, 5, 5, 2 * 900, 2 * 1920);
    expect_cost(NL_COMP_QKV, 2, 5, 5, 9000, 4 * (432 + 36 + 120 + 360));
    NlConfig rms = CFG;
    rms.norm = NL_NORM_RMSNORM;
    double f, b;
    nl_profile_cost(&rms, 0, NL_COMP_NORM2, 1, 5, 5, &f, &b);
    CHECK(f == 300, "RMSNorm of 5 rows: 5 FLOPs per element, got %g", f);
    rms.norm = NL_NORM_DYT;
    nl_profile_cost(&rms, 0, NL_COMP_NORM2, 1, 5, 5, &f, &b);
    CHECK(f == 240, "DyT of 5 rows: 4 FLOPs per element (alpha, tanh, gain, bias), got %g", f);
    // a sliding window of 4 on layer 0 (pattern 2: layer 1 global): 10 queries from 0 see 1+2+3+4*7 = 34
    // keys, not 55; bytes read the 9 + 4 = 13 keys some query sees, all 10 here (decode: the last 4)
    NlConfig local = CFG;
    local.sliding_window = 4;
    local.sliding_window_pattern = 2;
    nl_profile_cost(&local, 0, NL_COMP_ATTENTION, 1, 10, 10, &f, &b);
    CHECK(f == 34 * 4 * 15, "a local layer's prefill of 10: 34 pairs, got %g FLOPs", f);
    nl_profile_cost(&local, 1, NL_COMP_ATTENTION, 1, 10, 10, &f, &b);
    CHECK(f == 55 * 4 * 15, "the global layer's: 55 pairs, got %g FLOPs", f);
    nl_profile_cost(&local, 0, NL_COMP_ATTENTION, 1, 1, 9, &f, &b);
    CHECK(f == 4 * 4 * 15 && b == 4 * (36 + 24 + 2 * 4 * 12 + 12),
          "a local layer's decode at 8: 4 keys read, got %g %g", f, b);
}

// A recurrent model's components (E 7, S 5; the LSTM's 4 gate blocks, the GRU's 3), by
// docs/profiling.md: products 2 FLOPs a multiply-add and no bias (the norms add the biases); rnn_norm 8
// FLOPs per normalised feature (`ctx` of them a row), 1 without LayerNorm; gates 10 per state unit
// (the LSTM's cell update, ctx 0, or the GRU's), 3 for the LSTM's h (ctx 1); the head adds its bias.
static void recurrent_costs_match_hand_computed_formulas(void) {
    NlConfig lstm = {.arch = NL_ARCH_LSTM,
                     .vocab_size = 11,
                     .n_layer = 2,
                     .n_input = 7,
                     .n_hidden = 5,
                     .norm = NL_NORM_LAYERNORM,
                     .norm_eps = 1e-5};
    double f, b;
    nl_profile_cost(&lstm, 0, NL_COMP_RNN_INPUT, 1, 3, 7, &f, &b);  // (3, 7) -> (3, 20)
    CHECK(f == 2 * 3 * 7 * 20 && b == 4 * (7 * 20 + 3 * 7 + 3 * 20), "input_proj: %g FLOPs %g bytes", f, b);
    nl_profile_cost(&lstm, 0, NL_COMP_RNN_RECURRENT, 2, 1, 5, &f, &b);  // two sequences' h: (2, 5) -> (2, 20)
    CHECK(f == 2 * 2 * 5 * 20 && b == 4 * (5 * 20 + 2 * 5 + 2 * 20), "recurrent_proj: %g FLOPs %g bytes", f, b);
    nl_profile_cost(&lstm, 0, NL_COMP_RNN_NORM, 1, 3, 20, &f, &b);
    CHECK(f == 3 * 20 * 8 && b == 4 * (2 * 3 * 20 + 2 * 20), "rnn_norm: %g FLOPs %g bytes", f, b);
    nl_profile_cost(&lstm, 0, NL_COMP_RNN_GATES, 1, 1, 0, &f, &b);  // the cell's update
    CHECK(f == 10 * 5 && b == 4 * (2 * 20 + 2 * 5), "lstm gates, c: %g FLOPs %g bytes", f, b);
    nl_profile_cost(&lstm, 0, NL_COMP_RNN_GATES, 1, 1, 1, &f, &b);  // h from it
    CHECK(f == 3 * 5 && b == 4 * 3 * 5, "lstm gates, h: %g FLOPs %g bytes", f, b);
    nl_profile_cost(&lstm, 0, NL_COMP_LM_HEAD, 1, 1, 0, &f, &b);
    CHECK(f == 2 * 5 * 11 + 11 && b == 4 * (11 * 5 + 5 + 11 + 11), "recurrent head: %g FLOPs %g bytes", f, b);
    NlConfig gru = lstm;
    gru.arch = NL_ARCH_GRU;
    gru.norm = NL_NORM_NONE;
    nl_profile_cost(&gru, 0, NL_COMP_RNN_GATES, 1, 1, 0, &f, &b);
    CHECK(f == 10 * 5 && b == 4 * (2 * 15 + 2 * 5), "gru gates: %g FLOPs %g bytes", f, b);
    nl_profile_cost(&gru, 0, NL_COMP_RNN_NORM, 1, 1, 15, &f, &b);
    CHECK(f == 15, "a plain GRU's rnn_norm only adds biases: %g FLOPs", f);
}

typedef struct {
    int tokens[64];
    size_t n;
} Collected;

static int collect(int stream, int token, void *ctx) {
    (void)stream;
    Collected *c = ctx;
    if (c->n < 64) c->tokens[c->n++] = token;
    return 0;
}

// Generates 30 tokens from the fixture, with or without a profiler; the profiler is returned.
static NlProfiler *generate(Collected *out, int profile) {
    NlModel *m = NULL;
    NlState *s = NULL;
    NlSampler *smp = NULL;
    NlProfiler *p = NULL;
    NlError err;
    if (nl_model_load(&m, fixture("ln-pre-bias.json"), NULL, &err) != 0 || nl_state_create(&s, m, NULL, &err) != 0 ||
        nl_sampler_create(&smp, 11, (NlSamplerParams){.temperature = 0.9, .top_k = 0, .top_p = 1.0}, 5, &err) != 0 ||
        (profile && nl_profiler_create(&p, nl_model_config(m), 100000, 0, &err) != 0)) {
        CHECK(0, "%s", err.msg);
    } else {
        nl_state_set_profiler(s, p);
        int prompt[3] = {1, 2, 3};
        NlGenerateOptions o = {.n_new = 30, .exact_window = 0};
        NlGenerateStats st;
        CHECK(generate_one(s, smp, prompt, 3, &o, collect, out, &st, &err) == 0, "%s", err.msg);
    }
    nl_sampler_free(smp);
    nl_state_free(s);
    nl_model_free(m);
    return p;
}

static void profiling_does_not_change_the_output(void) {
    Collected a = {{0}, 0}, b = {{0}, 0};
    nl_profiler_free(generate(&a, 0));
    NlProfiler *p = generate(&b, 1);
    CHECK(a.n == 30 && b.n == 30 && memcmp(a.tokens, b.tokens, sizeof a.tokens) == 0,
          "same tokens with the profiler on");
    // 30 tokens: 1 prefill of 3 positions, 29 decode steps (context shifts re-prefill 3 positions each)
    CHECK(nl_profiler_cell(p, NL_PHASE_PREFILL, 0, NL_COMP_QKV)->calls == 1, "one prefill call per layer");
    CHECK(nl_profiler_cell(p, NL_PHASE_DECODE, 1, NL_COMP_QKV)->calls == 29, "29 decode calls per layer: %llu",
          (unsigned long long)nl_profiler_cell(p, NL_PHASE_DECODE, 1, NL_COMP_QKV)->calls);
    CHECK(nl_profiler_cell(p, NL_PHASE_DECODE, -1, NL_COMP_SAMPLING)->calls == 30, "30 samples");
    CHECK(nl_profiler_cell(p, NL_PHASE_DECODE, 0, NL_COMP_RESIDUAL)->calls == 58, "two residual adds per step");
    nl_profiler_free(p);
}

static cJSON *report_json(const NlProfiler *p, int trace) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ReportInfo info = {.model = "fixture \"quoted\"",
                       .product_threads = 1,
                       .engine_threads = 1,
                       .blas_core = "Haswell",
                       .blas_core_source = "openblas"};
    int rc = trace ? report_profile_trace(f, p, &info) : report_profile_json(f, p, &info);
    fclose(f);
    CHECK(rc == 0, "report written");
    cJSON *root = cJSON_Parse(buf);
    CHECK(root != NULL, "%s parses as JSON", trace ? "trace" : "report");
    free(buf);
    return root;
}

static void json_report_has_stable_fields_and_covers_the_wall(void) {
    Collected c = {{0}, 0};
    NlProfiler *p = generate(&c, 1);
    cJSON *root = report_json(p, 0);
    if (!root) {
        nl_profiler_free(p);
        return;
    }
    CHECK(cJSON_IsString(cJSON_GetObjectItem(root, "model")) &&
              cJSON_IsNumber(cJSON_GetObjectItem(root, "blas_threads")) &&
              cJSON_IsNumber(cJSON_GetObjectItem(root, "engine_threads")) &&
              cJSON_IsBool(cJSON_GetObjectItem(root, "hw_counters")),
          "top-level fields");
    const cJSON *phases = cJSON_GetObjectItem(root, "phases");
    CHECK(cJSON_GetArraySize(phases) == 2, "prefill and decode");
    static const char *const ROW_FIELDS[] = {"layer", "component", "calls",        "tokens", "seconds", "us_per_token",
                                             "share", "flops",     "gflops_per_s", "bytes",  "gb_per_s"};
    for (const cJSON *ph = phases ? phases->child : NULL; ph; ph = ph->next) {
        double wall = cJSON_GetObjectItem(ph, "wall_seconds")->valuedouble, sum = 0.0;
        const cJSON *rows = cJSON_GetObjectItem(ph, "rows");
        CHECK(cJSON_GetArraySize(rows) == 2 * 9 + 4, "L x 9 layer rows + 4 model rows: %d", cJSON_GetArraySize(rows));
        for (const cJSON *r = rows->child; r; r = r->next) {
            for (size_t k = 0; k < sizeof ROW_FIELDS / sizeof ROW_FIELDS[0]; k++)
                if (!cJSON_HasObjectItem(r, ROW_FIELDS[k])) CHECK(0, "row lacks %s", ROW_FIELDS[k]);
            sum += cJSON_GetObjectItem(r, "seconds")->valuedouble;
        }
        double uncovered = cJSON_GetObjectItem(ph, "uncovered_seconds")->valuedouble;
        CHECK(fabs(sum + uncovered - wall) <= 1e-9 * (1 + wall), "rows %.9g + uncovered %.9g = wall %.9g", sum,
              uncovered, wall);
        CHECK(sum <= wall * (1 + 1e-9), "rows never exceed the phase wall time");
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(ph, "layer_totals")) == 2, "a total per layer");
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(ph, "component_totals")) == NL_COMP_COUNT - 8,
              "a total per component (but peri's output norms, sub's inner ones and the 4 recurrent ones)");
    }
    cJSON_Delete(root);
    nl_profiler_free(p);
}

static void trace_nests_components_inside_layers(void) {
    Collected c = {{0}, 0};
    NlProfiler *p = generate(&c, 1);
    cJSON *root = report_json(p, 1);
    if (!root) {
        nl_profiler_free(p);
        return;
    }
    const cJSON *ev = cJSON_GetObjectItem(root, "traceEvents");
    int n_layer = 0, n_comp = 0;
    for (const cJSON *e = ev ? ev->child : NULL; e; e = e->next) {
        if (strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, "X") != 0) continue;
        if (strncmp(cJSON_GetObjectItem(e, "name")->valuestring, "layer ", 6) == 0) n_layer++;
        else n_comp++;
    }
    CHECK(n_layer == 2 * 30, "one layer event per layer per forward pass: %d", n_layer);
    // per forward: 2 layers x 10 component calls + embed + final_norm + lm_head; plus 30 samplings
    CHECK(n_comp == 30 * (2 * 10 + 3) + 30, "component events: %d", n_comp);
    // Nesting by time: every component of layer l starts and ends within the next "layer l" event.
    const cJSON *e = ev ? ev->child : NULL;
    int inside = 1;
    for (; e; e = e->next) {
        if (strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, "X") != 0) continue;
        int layer = (int)cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "layer")->valuedouble;
        const char *name = cJSON_GetObjectItem(e, "name")->valuestring;
        if (layer < 0 || strncmp(name, "layer ", 6) == 0) continue;
        const cJSON *l = e->next;
        while (l && strncmp(cJSON_GetObjectItem(l, "name")->valuestring, "layer ", 6) != 0) l = l->next;
        if (!l) {
            inside = 0;
            break;
        }
        double ts = cJSON_GetObjectItem(e, "ts")->valuedouble, dur = cJSON_GetObjectItem(e, "dur")->valuedouble;
        double lts = cJSON_GetObjectItem(l, "ts")->valuedouble, ldur = cJSON_GetObjectItem(l, "dur")->valuedouble;
        inside &= ts >= lts - 1e-3 && ts + dur <= lts + ldur + 1e-3;  // timestamps printed to 1 ns
    }
    CHECK(inside, "every component event lies inside its layer event");
    cJSON *other = cJSON_GetObjectItem(root, "otherData");
    CHECK(other && strcmp(cJSON_GetObjectItem(other, "model")->valuestring, "fixture \"quoted\"") == 0,
          "model name escaped");
    cJSON_Delete(root);
    nl_profiler_free(p);
}

static char *report_text(const NlProfiler *p, const char *prompt, int summary) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ReportInfo info = {.model = "fixture",
                       .product_threads = 1,
                       .engine_threads = 1,
                       .blas_core = "Haswell",
                       .blas_core_source = "openblas"};
    CHECK(report_profile_view(f, p, &info, prompt, summary) == 0, "text report written");
    fclose(f);
    return buf;
}

// Whether text holds line (without its newline) as one whole line.
static int has_line(const char *text, const char *line, size_t n) {
    for (const char *t = text; t && *t; t = strchr(t, '\n') ? strchr(t, '\n') + 1 : NULL)
        if (strncmp(t, line, n) == 0 && (t[n] == '\n' || t[n] == '\0')) return 1;
    return 0;
}

// The summary's rows are the table's rows of the same profiler: its component totals and wall lines
// verbatim, its layers the slowest first; the pruned last layer is marked and explained in both.
static void text_summary_is_drawn_from_the_table(void) {
    Collected c = {{0}, 0};
    NlProfiler *p = generate(&c, 1);
    char *table = report_text(p, NULL, 0), *sum = report_text(p, "\"ab\" (2 characters, -p)", 1), *plain = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&plain, &len);
    ReportInfo info = {.model = "fixture",
                       .product_threads = 1,
                       .engine_threads = 1,
                       .blas_core = "Haswell",
                       .blas_core_source = "openblas"};
    CHECK(report_profile_text(f, p, &info) == 0, "report_profile_text written");
    fclose(f);
    // The full table: each layer's rows in the table's own form ("    L name" at the line start), in
    // every phase, and no prompt line.
    int rows = 0;
    for (const char *t = plain; t && *t; t = strchr(t, '\n') ? strchr(t, '\n') + 1 : NULL)
        rows += strncmp(t, "    0 qkv ", 10) == 0 || strncmp(t, "    1 qkv ", 10) == 0 ||
                strncmp(t, "    0 mlp_down ", 15) == 0 || strncmp(t, "    1 mlp_down ", 15) == 0;
    CHECK(plain && rows >= 4 && !strstr(plain, "\nprompt: "),
          "report_profile_text: each layer's qkv and mlp_down rows, every phase, no prompt line (%d rows)", rows);
    CHECK(sum && strstr(sum, "\nprompt: \"ab\" (2 characters, -p)\n") && !strstr(table, "\nprompt: "),
          "the prompt line only where given");
    int comps = 0, layers = 0, ordered = 1, walls = 0, notes = 0;
    double last = INFINITY;
    for (const char *t = sum; t && *t; t = strchr(t, '\n') ? strchr(t, '\n') + 1 : NULL) {
        size_t n = strcspn(t, "\n");
        int layer_row = strstr(t, " (all) ") && strstr(t, " (all) ") < t + n;
        if (strncmp(t, "== ", 3) == 0) last = INFINITY;
        if (strncmp(t, "  all ", 6) == 0 || strncmp(t, "wall ", 5) == 0 || strncmp(t, "* layer ", 8) == 0 ||
            layer_row) {
            CHECK(has_line(table, t, n), "summary line in the table: %.*s", (int)n, t);
            comps += strncmp(t, "  all ", 6) == 0, walls += strncmp(t, "wall ", 5) == 0;
            notes += strncmp(t, "* layer 1: from attention on", 28) == 0;
        }
        if (layer_row) {
            double ms = strtod(t + 29, NULL);  // the total ms column (after "%5s %-14s %7llu ")
            ordered &= ms <= last;
            last = ms, layers++;
        }
    }
    CHECK(comps >= 2 * 10 && walls == 2 && layers == 2 * 2 && ordered, "%d component rows, %d walls, %d layers%s",
          comps, walls, layers, ordered ? "" : ", not slowest first");
    // prefill (3 positions) and the context shifts of decode (T = 9) prune layer 1's rows after qkv
    CHECK(notes == 2 && strstr(table, "\n   1* attention ") && strstr(table, "\n   1* (all) ") &&
              !strstr(table, "\n   0* "),
          "layer 1 marked and explained in both phases, layer 0 not (%d notes)", notes);
    free(table);
    free(sum);
    free(plain);
    nl_profiler_free(p);
}

// profile's prompt line counts the model's tokens: a character model's characters from the text, a
// BPE model's tokens as given (one for the newline an empty prompt falls back to).
static void prompt_line_counts_the_models_tokens(void) {
    char buf[256];
    CHECK(strcmp(report_prompt_line(buf, sizeof buf, NULL, "h\xc3\xa9llo", NULL, 0),
                 "\"h\xc3\xa9llo\" (5 characters, -p)") == 0,
          "a character model's prompt line counts characters: %s", buf);
    CHECK(strcmp(report_prompt_line_tokens(buf, sizeof buf, NULL, "h\xc3\xa9llo", NULL, 0, 0),
                 "\"h\xc3\xa9llo\" (5 characters, -p)") == 0,
          "tokens 0: the character count, as report_prompt_line: %s", buf);
    CHECK(strcmp(report_prompt_line_tokens(buf, sizeof buf, NULL, NULL, "KING: hello", 0, 3),
                 "\"KING: hello\" (3 tokens, the default)") == 0,
          "a BPE model's prompt line counts its tokens: %s", buf);
    CHECK(strcmp(report_prompt_line_tokens(buf, sizeof buf, NULL, "hello", NULL, 0, 1), "\"hello\" (1 token, -p)") == 0,
          "one BPE token, singular: %s", buf);
    CHECK(strcmp(report_prompt_line_tokens(buf, sizeof buf, NULL, "", NULL, 0, 1),
                 "\"\\n\" (1 token: -p gave an empty prompt)") == 0,
          "a BPE model's empty prompt is one token: %s", buf);
    CHECK(strcmp(report_prompt_line_tokens(buf, sizeof buf, "p.txt", NULL, NULL, 0, 7), "the file \"p.txt\" (-f)") == 0,
          "a prompt file is named, not counted, for either kind: %s", buf);
}

int main(void) {
    RUN(costs_match_hand_computed_formulas);
    RUN(recurrent_costs_match_hand_computed_formulas);
    RUN(profiling_does_not_change_the_output);
    RUN(json_report_has_stable_fields_and_covers_the_wall);
    RUN(trace_nests_components_inside_layers);
    RUN(text_summary_is_drawn_from_the_table);
    RUN(prompt_line_counts_the_models_tokens);
    return check_summary("test_profile");
}
