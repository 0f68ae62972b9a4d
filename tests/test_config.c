// test_config.c — config.json at every documented bound and "only with" rule, and exactly the
// tensors each norm x placement x bias combination needs (docs/format.md), through the loader's
// inline form: each case expecting its own message.
#define _GNU_SOURCE
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model.h"
#include "normlab.h"

static const char *const TOKENIZER = "{\"type\": \"char\", \"vocab\": [\"a\", \"b\", \"c\"]}";
// ---- every documented bound and "only with" rule of config.json (docs/format.md)

// A buffer that grows: the generated configs and inline models.
typedef struct {
    char *s;
    size_t len, cap;
} Buf;

static void put(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->len + (size_t)n + 1 > b->cap) {
        b->cap = 2 * (b->len + (size_t)n + 1);
        b->s = realloc(b->s, b->cap);
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

// The smallest transformer (version 1) and LSTM (version 3), as key/value pairs in file order.
static const char *const BASE_T[][2] = {
    {"vocab_size", "3"},   {"n_layer", "1"},           {"n_head", "1"},           {"n_embd", "2"},
    {"block_size", "2"},   {"n_inner", "4"},           {"norm", "\"layernorm\""}, {"placement", "\"pre\""},
    {"norm_eps", "1e-05"}, {"activation", "\"gelu\""}, {"bias", "false"},         {"tie_embeddings", "true"}};
static const char *const BASE_R[][2] = {{"arch", "\"lstm\""}, {"vocab_size", "3"}, {"n_layer", "1"},
                                        {"n_embd", "2"},      {"n_hidden", "2"},   {"norm", "\"layernorm\""},
                                        {"norm_eps", "1e-05"}};
// The smallest Llama (version 4): the keys it needs, the rest defaulted.
static const char *const BASE_L[][2] = {{"arch", "\"llama\""}, {"vocab_size", "3"}, {"n_layer", "1"}, {"n_head", "2"},
                                        {"n_embd", "4"},       {"block_size", "2"}, {"n_inner", "4"}};

// config.json from a base and edits "key=value;...": a value replaces the base's, "-" removes the
// key, a new key is added at the end; "version=N" sets the format's version (1, or 3 for recurrent).
static void config_with(Buf *b, char base, const char *edits) {
    char keys[24][32], vals[24][400], ed[512];
    const char *const(*pairs)[2] = base == 'R' ? BASE_R : base == 'L' ? BASE_L : BASE_T;
    size_t n = base == 'R'   ? sizeof BASE_R / sizeof BASE_R[0]
               : base == 'L' ? sizeof BASE_L / sizeof BASE_L[0]
                             : sizeof BASE_T / sizeof BASE_T[0];
    for (size_t i = 0; i < n; i++) {
        snprintf(keys[i], sizeof keys[i], "%s", pairs[i][0]);
        snprintf(vals[i], sizeof vals[i], "%s", pairs[i][1]);
    }
    char version[16] = "1";
    if (base != 'T') version[0] = base == 'R' ? '3' : '4';
    snprintf(ed, sizeof ed, "%s", edits);
    for (char *save = NULL, *e = strtok_r(ed, ";", &save); e; e = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(e, '=');
        *eq = '\0';
        if (strcmp(e, "version") == 0) {
            snprintf(version, sizeof version, "%s", eq + 1);
            continue;
        }
        size_t i = 0;
        while (i < n && strcmp(keys[i], e) != 0) i++;
        if (i == n) snprintf(keys[n++], sizeof keys[0], "%s", e);
        snprintf(vals[i], sizeof vals[i], "%s", eq + 1);
    }
    put(b, "{\"format\": {\"name\": \"normlab\", \"version\": %s}", version);
    for (size_t i = 0; i < n; i++)
        if (strcmp(vals[i], "-") != 0) put(b, ", \"%s\": %s", keys[i], vals[i]);
    put(b, "}");
}

// The parsed value a valid case pins: "field=value" of the NlConfig.
static int config_has(const NlConfig *c, const char *want) {
    char field[32];
    double v;
    if (sscanf(want, "%31[^=]=%lf", field, &v) != 2) return 0;
    double got = strcmp(field, "n_inner") == 0                  ? c->n_inner
                 : strcmp(field, "residual_scale") == 0         ? c->residual_scale
                 : strcmp(field, "placement") == 0              ? (double)c->placement
                 : strcmp(field, "norm") == 0                   ? (double)c->norm
                 : strcmp(field, "norm_eps") == 0               ? c->norm_eps
                 : strcmp(field, "arch") == 0                   ? (double)c->arch
                 : strcmp(field, "activation") == 0             ? (double)c->activation
                 : strcmp(field, "n_hidden") == 0               ? c->n_hidden
                 : strcmp(field, "n_input") == 0                ? c->n_input
                 : strcmp(field, "vocab_size") == 0             ? c->vocab_size
                 : strcmp(field, "n_layer") == 0                ? c->n_layer
                 : strcmp(field, "n_head") == 0                 ? c->n_head
                 : strcmp(field, "n_embd") == 0                 ? c->n_embd
                 : strcmp(field, "block_size") == 0             ? c->block_size
                 : strcmp(field, "n_kv_head") == 0              ? c->n_kv_head
                 : strcmp(field, "rope_theta") == 0             ? c->rope_theta
                 : strcmp(field, "qk_norm") == 0                ? c->qk_norm
                 : strcmp(field, "head_dim") == 0               ? c->head_dim
                 : strcmp(field, "rope_dims") == 0              ? c->rope_dims
                 : strcmp(field, "gated_mlp") == 0              ? c->gated_mlp
                 : strcmp(field, "bias") == 0                   ? c->bias
                 : strcmp(field, "embed_scale") == 0            ? c->embed_scale
                 : strcmp(field, "attn_scale") == 0             ? c->attn_scale
                 : strcmp(field, "attn_softcap") == 0           ? c->attn_softcap
                 : strcmp(field, "final_softcap") == 0          ? c->final_softcap
                 : strcmp(field, "sliding_window") == 0         ? c->sliding_window
                 : strcmp(field, "sliding_window_pattern") == 0 ? c->sliding_window_pattern
                 : strcmp(field, "rope_local_theta") == 0       ? c->rope_local_theta
                 : strcmp(field, "tie_embeddings") == 0         ? c->tie_embeddings
                 : strcmp(field, "mix_post_layers") == 0        ? c->mix_post_layers
                 : strcmp(field, "final_norm") == 0             ? c->recipe.final_norm
                 : strcmp(field, "steps") == 0                  ? c->recipe.block[0].n_steps
                 : strcmp(field, "buffers") == 0                ? nl_recipe_buffers(&c->recipe)
                                                                : NAN;
    return got == v;
}

// One case of tests/fixtures/config_bounds.txt (its header says the format): the refused config's
// message, or the value an accepted one parses to.
static void config_case(const char *line) {
    char base[4], edits[512], expect[256];
    if (sscanf(line, "%3[^|]|%511[^|]|%255[^\n]", base, edits, expect) != 3) {
        CHECK(0, "config_bounds.txt: malformed line '%s'", line);
        return;
    }
    Buf b = {0};
    config_with(&b, base[0], edits);
    NlConfig cfg;
    NlError err = {NL_OK, ""};
    int rc = nl_config_parse(&cfg, b.s, b.len, "config.json", &err);
    if (!strchr(expect, '"'))
        CHECK(rc == 0 && config_has(&cfg, expect), "%s|%s: should load with %s, got rc %d '%s'", base, edits, expect,
              rc, err.msg);
    else
        CHECK(rc != 0 && strstr(err.msg, expect) && err.code == NL_ERR_FORMAT, "%s|%s: expected '%s', got rc %d '%s'",
              base, edits, expect, rc, err.msg);
    free(b.s);
}

static void config_keys_at_every_bound_and_only_with_rule(void) {
    FILE *f = fopen(fixture("config_bounds.txt"), "r");
    char line[600];
    int cases = 0;
    while (f && fgets(line, sizeof line, f))
        if (line[0] != '#' && line[0] != '\n') config_case(line), cases++;
    if (f) fclose(f);
    CHECK(cases >= 90, "config_bounds.txt: %d cases read", cases);
}

// ---- which tensors each combination needs (docs/format.md, the tensor tables)

typedef struct {
    char name[48];
    int d0, d1;  // d1 0: one dimension
    int optional;  // RMSNorm's bias
} Need;

typedef struct {
    int rnn;  // 0 transformer, 1 lstm, 2 gru
    const char *norm, *placement;
    int bias, tie;
} Combo;

static int need_add(Need *n, int k, const char *name, int d0, int d1, int optional) {
    snprintf(n[k].name, sizeof n[k].name, "%s", name);
    n[k].d0 = d0, n[k].d1 = d1, n[k].optional = optional;
    return k + 1;
}

// A norm's tensors under `norm`, each (d): weight and bias; RMSNorm's bias optional; BatchNorm's
// running statistics too; none for norm none.
static int need_norm(Need *n, int k, const char *norm, const char *prefix, int d) {
    static const char *const SUFFIX[] = {"weight", "bias", "running_mean", "running_var"};
    int count = strcmp(norm, "none") == 0 ? 0 : strcmp(norm, "batchnorm") == 0 ? 4 : 2;
    for (int i = 0; i < count; i++) {
        char name[48];
        snprintf(name, sizeof name, "%s.%s", prefix, SUFFIX[i]);
        k = need_add(n, k, name, d, 0, i == 1 && strcmp(norm, "rmsnorm") == 0);
    }
    return k;
}

// The tensors of c with V 3, D 2 (E 3 for recurrent), T 2, F 4, S 2, one transformer layer or two
// recurrent ones (layer 1's input is S wide); returns their count.
static int needs_of(const Combo *c, Need *n) {
    int k = 0, V = 3, D = 2, F = 4, S = 2, E = 3;
    char p[48];
    if (c->rnn) {
        int lstm = c->rnn == 1, ln = strcmp(c->norm, "layernorm") == 0, G = lstm ? 4 : 3, gates = lstm ? 4 : 2;
        k = need_add(n, k, "wte.weight", V, E, 0);
        for (int i = 0; i < 2; i++) {
            const char *const LN[] = {"ln_ih", "ln_hh", lstm ? "ln_cell" : "ln_ih_cand", lstm ? NULL : "ln_hh_cand"};
            snprintf(p, sizeof p, "rnn.%d.weight_ih", i), k = need_add(n, k, p, G * S, i ? S : E, 0);
            snprintf(p, sizeof p, "rnn.%d.weight_hh", i), k = need_add(n, k, p, G * S, S, 0);
            if (lstm) snprintf(p, sizeof p, "rnn.%d.bias", i), k = need_add(n, k, p, 4 * S, 0, 0);
            if (!lstm && !ln) {
                snprintf(p, sizeof p, "rnn.%d.bias_ih", i), k = need_add(n, k, p, 3 * S, 0, 0);
                snprintf(p, sizeof p, "rnn.%d.bias_hh", i), k = need_add(n, k, p, 3 * S, 0, 0);
            }
            for (int j = 0; ln && j < 4 && LN[j]; j++) {
                snprintf(p, sizeof p, "rnn.%d.%s", i, LN[j]);
                k = need_norm(n, k, "layernorm", p, j < 2 ? gates * S : S);
            }
        }
        k = need_add(n, k, "lm_head.weight", V, S, 0);
        return need_add(n, k, "lm_head.bias", V, 0, 0);
    }
    k = need_add(n, k, "wte.weight", V, D, 0);
    k = need_add(n, k, "wpe.weight", 2, D, 0);
    const char *const LIN[] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};
    const int out[] = {3 * D, D, F, D}, in[] = {D, D, D, F};
    for (int j = 0; j < 4; j++) {
        if (j == 0 || j == 2) k = need_norm(n, k, c->norm, j == 0 ? "h.0.ln_1" : "h.0.ln_2", D);
        snprintf(p, sizeof p, "h.0.%s.weight", LIN[j]), k = need_add(n, k, p, out[j], in[j], 0);
        if (c->bias) snprintf(p, sizeof p, "h.0.%s.bias", LIN[j]), k = need_add(n, k, p, out[j], 0, 0);
    }
    if (strcmp(c->placement, "peri") == 0)
        k = need_norm(n, need_norm(n, k, c->norm, "h.0.ln_1_post", D), c->norm, "h.0.ln_2_post", D);
    if (strcmp(c->placement, "post") != 0) k = need_norm(n, k, c->norm, "ln_f", D);
    if (!c->tie) k = need_add(n, k, "lm_head.weight", V, D, 0);
    return k;
}

// An inline model of c with the tensors n[0..k) but `skip` (-1: none), plus `extra` (NULL: none)
// of shape (1); every weight 0.5, but running_var's first value `var0`.
static void inline_model(Buf *b, const Combo *c, const Need *n, int k, int skip, const char *extra, float var0) {
    char edits[256];
    if (c->rnn)
        snprintf(edits, sizeof edits, "arch=\"%s\";n_layer=2;n_embd=3;norm=\"%s\"", c->rnn == 1 ? "lstm" : "gru",
                 c->norm);
    else
        snprintf(edits, sizeof edits, "version=2;norm=\"%s\";placement=\"%s\";bias=%s;tie_embeddings=%s", c->norm,
                 c->placement, c->bias ? "true" : "false", c->tie ? "true" : "false");
    put(b, "{\"config\": ");
    config_with(b, c->rnn ? 'R' : 'T', edits);
    put(b, ", \"tokenizer\": %s, \"tensors\": {", TOKENIZER);
    if (extra) put(b, "\"%s\": {\"shape\": [1], \"data\": [0.5]}", extra);
    for (int i = 0, first = !extra; i < k; i++) {
        if (i == skip) continue;
        put(b, "%s\"%s\": {\"shape\": [%d", first ? "" : ", ", n[i].name, n[i].d0);
        if (n[i].d1) put(b, ", %d", n[i].d1);
        put(b, "], \"data\": [");
        int var = strstr(n[i].name, "running_var") != NULL;
        for (int j = 0; j < n[i].d0 * (n[i].d1 ? n[i].d1 : 1); j++) put(b, j ? ", %g" : "%g", var && !j ? var0 : 0.5);
        put(b, "]}");
        first = 0;
    }
    put(b, "}}");
}

// Loads an inline model of c (see inline_model); expects failure naming `expect`, or success.
static void expect_inline(const Combo *c, const Need *n, int k, int skip, const char *extra, float var0,
                          const char *expect, const char *label) {
    Buf b = {0};
    inline_model(&b, c, n, k, skip, extra, var0);
    NlModel *m = NULL;
    NlError err = {NL_OK, ""};
    int rc = nl_model_load_inline(&m, b.s, b.len, "inline.json", &err);
    if (!expect) CHECK(rc == 0 && m, "%s: should load, got '%s'", label, err.msg);
    else
        CHECK(rc != 0 && !m && strstr(err.msg, expect), "%s: expected '%s', got rc %d '%s'", label, expect, rc,
              err.msg);
    nl_model_free(m);
    free(b.s);
}

// Every transformer combination (norm x placement x bias x tie, norm none with pre only) and every
// recurrent one (lstm, gru x layernorm, none) loads with exactly its tensors: without any required
// one it fails naming it (RMSNorm's biases may go; wte.weight is named by the vocabulary check),
// and with any tensor that only another combination needs it fails naming that as unexpected.
// BatchNorm's running variance may be 0 (or -0), not below.
static const char *const NORM[] = {"layernorm", "rmsnorm", "batchnorm", "none"};
static const char *const PLACE[] = {"pre", "post", "peri"};

static void each_combination_needs_exactly_its_tensors(void) {
    Combo combos[48];
    int nc = 0;
    for (int nm = 0; nm < 4; nm++)
        for (int pl = 0; pl < (nm == 3 ? 1 : 3); pl++)
            for (int bt = 0; bt < 4; bt++) combos[nc++] = (Combo){0, NORM[nm], PLACE[pl], bt & 1, bt >> 1};
    for (int r = 1; r <= 2; r++)
        for (int nm = 0; nm < 4; nm += 3) combos[nc++] = (Combo){r, NORM[nm], "pre", 0, 0};
    Need mine[64], other[64];
    char label[160];
    for (int i = 0; i < nc; i++) {
        const Combo *c = &combos[i];
        int k = needs_of(c, mine);
        snprintf(label, sizeof label, "%s %s %s bias %d tie %d",
                 c->rnn ? (c->rnn == 1 ? "lstm" : "gru") : "transformer", c->norm, c->placement, c->bias, c->tie);
        expect_inline(c, mine, k, -1, NULL, 0.5f, NULL, label);
        for (int j = 0; j < k; j++) {
            char want[96], what[240];
            snprintf(want, sizeof want, "missing tensor \"%s\"", mine[j].name);
            if (j == 0) snprintf(want, sizeof want, "wte.weight has 0 rows");  // checked first, with the vocabulary
            snprintf(what, sizeof what, "%s without %s", label, mine[j].name);
            expect_inline(c, mine, k, j, NULL, 0.5f, mine[j].optional ? NULL : want, what);
        }
        char tried[128][48];  // each name that only other combinations need, once
        int nt = 0;
        for (int o = 0; o < nc; o++) {
            int ko = needs_of(&combos[o], other);
            for (int j = 0; j < ko; j++) {
                int have = 0;
                for (int q = 0; q < k && !have; q++) have = strcmp(mine[q].name, other[j].name) == 0;
                for (int q = 0; q < nt && !have; q++) have = strcmp(tried[q], other[j].name) == 0;
                if (have || nt == 128) continue;
                snprintf(tried[nt++], sizeof tried[0], "%s", other[j].name);
                char want[96], what[240];
                snprintf(want, sizeof want, "unexpected tensor \"%s\" (not used by this config)", other[j].name);
                snprintf(what, sizeof what, "%s with %s", label, other[j].name);
                expect_inline(c, mine, k, -1, other[j].name, 0.5f, want, what);
            }
        }
        if (strcmp(c->norm, "batchnorm") == 0 && c->bias && c->tie) {
            expect_inline(c, mine, k, -1, NULL, 0.0f, NULL, "running_var 0");
            expect_inline(c, mine, k, -1, NULL, -0.0f, NULL, "running_var -0");
            expect_inline(c, mine, k, -1, NULL, -FLT_TRUE_MIN, "has a negative variance", "running_var below 0");
        }
    }
}

int main(void) {
    RUN(config_keys_at_every_bound_and_only_with_rule);
    RUN(each_combination_needs_exactly_its_tensors);
    return check_summary("test_config");
}
