// config.c — config.json: every key checked, named in its error, against the
// format's rules (docs/format.md); the one table of names for each choice in config.json.
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jsonx.h"
#include "model.h"
#include "normlab.h"
#include "normlab_internal.h"

#define FAIL(...)                                  \
    do {                                           \
        nl_error(err, NL_ERR_FORMAT, __VA_ARGS__); \
        goto cleanup;                              \
    } while (0)

// The one table of names for each choice in config.json, shared by the loader and the CLI: each
// name beside its value, so that nothing depends on the order of an enum.
typedef struct {
    int value;
    const char *name;
} Named;

static const Named NORMS[] = {{NL_NORM_LAYERNORM, "layernorm"},
                              {NL_NORM_RMSNORM, "rmsnorm"},
                              {NL_NORM_BATCHNORM, "batchnorm"},
                              {NL_NORM_NONE, "none"},
                              {NL_NORM_DYT, "dyt"}};
static const Named BN_STATS[] = {{NL_BN_RUNNING, "running"}, {NL_BN_BATCH, "batch"}};
static const Named ARCHS[] = {
    {NL_ARCH_TRANSFORMER, "transformer"}, {NL_ARCH_LSTM, "lstm"}, {NL_ARCH_GRU, "gru"}, {NL_ARCH_LLAMA, "llama"}};
static const Named ACTIVATIONS[] = {
    {NL_ACT_GELU, "gelu"}, {NL_ACT_GELU_TANH, "gelu_tanh"}, {NL_ACT_RELU, "relu"}, {NL_ACT_SILU, "silu"}};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

// names (n + 1) = the table's names in order, NULL-terminated, for jsonx_choice.
static const char *const *names_of(const Named *t, size_t n, const char **names) {
    for (size_t i = 0; i < n; i++) names[i] = t[i].name;
    names[n] = NULL;
    return names;
}

static const char *name_of(const Named *t, size_t n, int value) {
    for (size_t i = 0; i < n; i++)
        if (t[i].value == value) return t[i].name;
    return "?";
}

// The value named `name`, compared without case; -1 when none is.
static int value_of(const Named *t, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(t[i].name, name) == 0) return t[i].value;
    return -1;
}

// Each kind's table, in NlNames order (the tokenizer's kinds are the tokenizer's own words).
static const Named *names_table(NlNames kind, size_t *n) {
    static const Named TOKENIZERS[] = {
        {NL_TOKENIZER_CHAR, "char"}, {NL_TOKENIZER_BPE, "bpe"}, {NL_TOKENIZER_SPM, "sentencepiece"}};
    static const Named QK_NORMS[] = {{NL_QK_NORM_ON, "on"}, {NL_QK_NORM_OFF, "off"}};
    static const Named DTYPES[] = {{NL_DTYPE_F32, "f32"},
                                   {NL_DTYPE_F16, "f16"},
                                   {NL_DTYPE_BF16, "bf16"},
                                   {NL_DTYPE_Q8_0, "q8_0"},
                                   {NL_DTYPE_Q4_0, "q4_0"}};
    switch (kind) {
    case NL_NAMES_NORM: *n = COUNT(NORMS); return NORMS;
    case NL_NAMES_PLACEMENT: break;  // the recipes' table: nl_name and nl_name_parse ask recipe.c
    case NL_NAMES_BN_STATS: *n = COUNT(BN_STATS); return BN_STATS;
    case NL_NAMES_ACTIVATION: *n = COUNT(ACTIVATIONS); return ACTIVATIONS;
    case NL_NAMES_ARCH: *n = COUNT(ARCHS); return ARCHS;
    case NL_NAMES_TOKENIZER: *n = COUNT(TOKENIZERS); return TOKENIZERS;
    case NL_NAMES_QK_NORM: *n = COUNT(QK_NORMS); return QK_NORMS;
    case NL_NAMES_DTYPE: *n = COUNT(DTYPES); return DTYPES;
    }
    *n = 0;
    return NULL;
}

const char *nl_name(NlNames kind, int value) {
    if (kind == NL_NAMES_PLACEMENT) {  // the recipes' table (recipe.c)
        const NlPlacementInfo *info = nl_recipe_info((NlPlacement)value);
        return info ? info->name : "?";
    }
    size_t n;
    const Named *t = names_table(kind, &n);
    return name_of(t, n, value);
}

int nl_name_parse(NlNames kind, const char *name, int *value) {
    if (kind == NL_NAMES_PLACEMENT) {
        const char *names[NL_PLACEMENTS_MAX + 1];
        NlPlacement values[NL_PLACEMENTS_MAX];
        size_t n = nl_recipe_placements(names, values);
        for (size_t i = 0; i < n; i++)
            if (strcasecmp(names[i], name) == 0) return *value = (int)values[i], 0;
        return -1;
    }
    size_t n;
    const Named *t = names_table(kind, &n);
    int v = value_of(t, n, name);
    if (v >= 0) *value = v;
    return v >= 0 ? 0 : -1;
}

// ---- config

// A config without "format" but with Hugging Face's "architectures" or "model_type": a snapshot
// given where a normlab model belongs. The error names it and the importer (GPT-2's: the only one).
static int reject_hf_snapshot(const cJSON *root, const char *what, NlError *err) {
    const cJSON *archs = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const cJSON *first = cJSON_IsArray(archs) ? cJSON_GetArrayItem(archs, 0) : NULL;
    if (!first && !type) return 0;
    const char *name = cJSON_IsString(first) ? first->valuestring : cJSON_IsString(type) ? type->valuestring : "";
    size_t n = strlen(what), tail = strlen("/config.json");
    int dir_len = (int)(n > tail && strcmp(what + n - tail, "/config.json") == 0 ? n - tail : n);
    if (cJSON_IsString(type) && strcmp(type->valuestring, "gpt2") == 0)
        nl_error(err, NL_ERR_FORMAT,
                 "%s: a Hugging Face %.80s snapshot, not a normlab model: import it with "
                 "tools/interop/import_hf_gpt2.py %.*s --out MODEL_DIR",
                 what, name, dir_len, what);
    else
        nl_error(err, NL_ERR_FORMAT,
                 "%s: a Hugging Face %.80s snapshot, not a normlab model: tools/interop/import_hf.py %.*s --out "
                 "MODEL_DIR imports Llama, Qwen2 and Qwen3 snapshots (and GPT-2's)",
                 what, name, dir_len, what);
    return -1;
}

// *version = the file's format version (1 to NL_FORMAT_VERSION).
static int parse_format(const cJSON *root, const char *what, int *version, NlError *err) {
    static const char *const KEYS[] = {"name", "version", NULL};
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "format");
    char ctx[300];
    snprintf(ctx, sizeof ctx, "%s: \"format\"", what);
    if (!f && reject_hf_snapshot(root, what, err) != 0) return -1;
    if (!cJSON_IsObject(f)) {
        nl_error(err, NL_ERR_FORMAT, "%s must be {\"name\": \"normlab\", \"version\": V}, V 1 to %d", ctx,
                 NL_FORMAT_VERSION);
        return -1;
    }
    if (nl_jsonx_only_keys(f, KEYS, ctx, err) != 0) return -1;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(f, "name");
    if (!cJSON_IsString(name) || strcmp(name->valuestring, NL_FORMAT_NAME) != 0) {
        nl_error(err, NL_ERR_FORMAT, "%s: name must be \"%s\"", ctx, NL_FORMAT_NAME);
        return -1;
    }
    int64_t v;
    if (nl_jsonx_int(f, "version", 1, 1, 1e9, &v, ctx, err) != 0) return -1;
    if (v > NL_FORMAT_VERSION) {
        nl_error(err, NL_ERR_FORMAT, "%s: version %lld is not supported (this build reads versions 1 to %d)", ctx,
                 (long long)v, NL_FORMAT_VERSION);
        return -1;
    }
    *version = (int)v;
    return 0;
}

// The version a file's norm needs (2: batchnorm or none; 5: dyt), and its residual_scale's; the
// placement's rules are its recipe's (nl_recipe_check_config). A file always names the version it needs.
static int check_versions(const NlConfig *c, const cJSON *root, int version, const char *what, NlError *err) {
    int has_scale = cJSON_GetObjectItemCaseSensitive(root, "residual_scale") != NULL;
    const char *feature = c->norm == NL_NORM_BATCHNORM ? "norm \"batchnorm\""
                          : c->norm == NL_NORM_NONE    ? "norm \"none\""
                                                       : NULL;
    int need = feature ? 2 : 1;
    if (c->norm == NL_NORM_DYT) feature = "norm \"dyt\"", need = 5;
    if (!feature && has_scale) feature = "\"residual_scale\"", need = 2;
    if (feature && version < need) {
        nl_error(err, NL_ERR_FORMAT, "%s: %s needs format version %d (the file says version %d)", what, feature, need,
                 version);
        return -1;
    }
    return nl_recipe_check_config(c, has_scale, version, what, err);
}

// The block a transformer-family config runs (docs/format.md): "placement" (default pre) and mix's
// "mix_post_layers", or config.json's own "block" (a list of steps; placement custom, or none given)
// with "final_norm" (default true), read here and made a recipe by recipe.c.
static int parse_block(NlConfig *c, const cJSON *root, int need_place, const char *what, NlError *err) {
    const char *names[NL_PLACEMENTS_MAX + 1], *steps[NL_RECIPE_STEPS_MAX + 1];
    const cJSON *block = cJSON_GetObjectItemCaseSensitive(root, "block");
    int place = 0, final_norm = -1, n = 0;  // placement may be left out: names[0] is pre
    int64_t mix = -1;
    nl_recipe_placements(names, NULL);
    if ((((need_place && !block) || cJSON_GetObjectItemCaseSensitive(root, "placement")) &&
         nl_jsonx_choice(root, "placement", names, &place, what, err) != 0) ||
        nl_jsonx_bool(root, "final_norm", 0, &final_norm, what, err) != 0 ||
        nl_jsonx_int(root, "mix_post_layers", 0, 0, c->n_layer, &mix, what, err) != 0)
        return -1;
    if (block && (n = cJSON_IsArray(block) ? cJSON_GetArraySize(block) : 0) < 1)
        return nl_error(err, NL_ERR_FORMAT, "%s: \"block\" must be a list of steps (strings)", what);
    for (int k = 0; k < n && k <= NL_RECIPE_STEPS_MAX; k++) {
        const cJSON *step = cJSON_GetArrayItem(block, k);
        if (!cJSON_IsString(step))
            return nl_error(err, NL_ERR_FORMAT, "%s: \"block\" step %d must be a string", what, k + 1);
        steps[k] = step->valuestring;
    }
    int given = cJSON_GetObjectItemCaseSensitive(root, "placement") ? place : -1;
    return nl_recipe_of_config(c, given, block ? steps : NULL, (size_t)n, final_norm, (int)mix, what, err);
}

static int parse_mlp_width(NlConfig *c, const cJSON *root, const char *what, NlError *err) {
    int has_ratio = cJSON_GetObjectItemCaseSensitive(root, "mlp_ratio") != NULL;
    int has_inner = cJSON_GetObjectItemCaseSensitive(root, "n_inner") != NULL;
    if (has_ratio == has_inner) {
        nl_error(err, NL_ERR_FORMAT, "%s: give exactly one of \"mlp_ratio\" and \"n_inner\"", what);
        return -1;
    }
    if (has_inner) {
        int64_t f;
        if (nl_jsonx_int(root, "n_inner", 1, 1, 1 << 20, &f, what, err) != 0) return -1;
        c->n_inner = (int)f;
        return 0;
    }
    double r;
    if (nl_jsonx_number(root, "mlp_ratio", 1, 0.0625, 64, &r, what, err) != 0) return -1;
    double f = r * c->n_embd;
    if (f != floor(f) || f < 1) {
        nl_error(err, NL_ERR_FORMAT, "%s: \"mlp_ratio\" %g x n_embd %d is not a whole number", what, r, c->n_embd);
        return -1;
    }
    c->n_inner = (int)f;
    return 0;
}

// A recurrent model (format version 3): arch lstm|gru, vocab_size, n_layer, n_embd, n_hidden,
// norm layernorm|none, norm_eps; no context window, so no block_size.
static int parse_rnn_config(NlConfig *c, const cJSON *root, NlArch arch, int version, const char *what, NlError *err) {
    static const char *const KEYS[] = {"format",   "arch", "vocab_size", "n_layer", "n_embd",
                                       "n_hidden", "norm", "norm_eps",   NULL};
    static const char *const RNN_NORMS[] = {"layernorm", "none", NULL};
    if (nl_jsonx_only_keys(root, KEYS, what, err) != 0) return -1;
    if (version < 3) {
        nl_error(err, NL_ERR_FORMAT, "%s: arch \"%s\" needs format version 3 (the file says version %d)", what,
                 nl_name(NL_NAMES_ARCH, arch), version);
        return -1;
    }
    int64_t v, l, e, h;
    int norm;
    double eps;
    if (nl_jsonx_int(root, "vocab_size", 1, 1, 1 << 20, &v, what, err) != 0 ||
        nl_jsonx_int(root, "n_layer", 1, 1, 256, &l, what, err) != 0 ||
        nl_jsonx_int(root, "n_embd", 1, 1, 1 << 16, &e, what, err) != 0 ||
        nl_jsonx_int(root, "n_hidden", 1, 1, 1 << 14, &h, what, err) != 0 ||
        nl_jsonx_choice(root, "norm", RNN_NORMS, &norm, what, err) != 0 ||
        nl_jsonx_number(root, "norm_eps", 1, 1e-12, 1, &eps, what, err) != 0)
        return -1;
    *c = (NlConfig){.arch = arch,
                    .vocab_size = (int)v,
                    .n_layer = (int)l,
                    .n_input = (int)e,
                    .n_hidden = (int)h,
                    .norm = norm == 0 ? NL_NORM_LAYERNORM : NL_NORM_NONE,
                    .norm_eps = eps,
                    .residual_scale = 1.0};
    return 0;
}

// The Llama family's keys of format version 6, refused in an older file.
static int need_v6(const cJSON *root, int version, const char *what, NlError *err) {
    static const char *const V6[] = {"head_dim",    "rope_dims",  "activation",   "gated_mlp",     "bias",
                                     "embed_scale", "attn_scale", "attn_softcap", "final_softcap", NULL};
    const cJSON *qk = cJSON_GetObjectItemCaseSensitive(root, "qk_norm");
    if (version >= 6) return 0;
    for (int i = 0; V6[i]; i++)
        if (cJSON_GetObjectItemCaseSensitive(root, V6[i]))
            return nl_error(err, NL_ERR_FORMAT, "%s: \"%s\" needs format version 6 (the file says version %d)", what,
                            V6[i], version);
    if (cJSON_IsString(qk))
        return nl_error(err, NL_ERR_FORMAT,
                        "%s: \"qk_norm\" as a string needs format version 6 (the file says version %d)", what, version);
    return 0;
}

// The heads' twists (v6): head_dim, an even Dh not tied to n_embd / n_head (Qwen3's; absent: n_embd /
// n_head, whole and even); qk_norm false, true or "head" (each head's Dh values), or "projection" (q's
// H Dh and k's KVH Dh values, OLMo 2's); rope_dims, the even count of a head's first dims RoPE turns
// (GPT-NeoX's and Phi's partial rotary; absent: all Dh).
static int parse_heads(NlConfig *c, const cJSON *root, const char *what, NlError *err) {
    static const char *const OVER[] = {"head", "projection", NULL};
    int64_t dh = 0, rot = 0, D = c->n_embd, H = c->n_head;
    int over = 0;
    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "qk_norm"))) {
        if (nl_jsonx_choice(root, "qk_norm", OVER, &over, what, err) != 0) return -1;
        c->qk_norm = over + NL_QK_OVER_HEAD;
    } else if (nl_jsonx_bool(root, "qk_norm", 0, &c->qk_norm, what, err) != 0) return -1;
    if (nl_jsonx_int(root, "head_dim", 0, 2, 1024, &dh, what, err) != 0 ||
        nl_jsonx_int(root, "rope_dims", 0, 2, 1024, &rot, what, err) != 0)
        return -1;
    if (dh % 2 != 0)
        return nl_error(err, NL_ERR_FORMAT, "%s: \"head_dim\" %lld is odd: RoPE turns pairs", what, (long long)dh);
    if (!dh && (D % H != 0 || (D / H) % 2 != 0))
        return nl_error(err, NL_ERR_FORMAT,
                        "%s: \"n_embd\" %lld over \"n_head\" %lld is not a whole, even head width (or give "
                        "\"head_dim\")",
                        what, (long long)D, (long long)H);
    c->head_dim = (int)dh;
    if (rot % 2 != 0 || (size_t)rot > nl_head_width(c))
        return nl_error(err, NL_ERR_FORMAT, "%s: \"rope_dims\" %lld must be even and at most the head width %zu", what,
                        (long long)rot, nl_head_width(c));
    c->rope_dims = (int)rot;
    return 0;
}

// The sliding windows (v7): sliding_window W (a local layer's query sees its last W positions, itself
// included), sliding_window_pattern k (layer i global when (i + 1) % k == 0; absent: every layer
// local) and rope_local_theta (the local layers' RoPE base; absent: rope_theta).
static int parse_windows(NlConfig *c, const cJSON *root, int version, const char *what, NlError *err) {
    static const char *const V7[] = {"sliding_window", "sliding_window_pattern", "rope_local_theta", NULL};
    int64_t w = 0, k = 0;
    for (int i = 0; V7[i] && version < 7; i++)
        if (cJSON_GetObjectItemCaseSensitive(root, V7[i]))
            return nl_error(err, NL_ERR_FORMAT, "%s: \"%s\" needs format version 7 (the file says version %d)", what,
                            V7[i], version);
    if (nl_jsonx_int(root, "sliding_window", 0, 1, 1 << 20, &w, what, err) != 0 ||
        nl_jsonx_int(root, "sliding_window_pattern", 0, 2, 256, &k, what, err) != 0 ||
        nl_jsonx_number(root, "rope_local_theta", 0, 1, FLT_MAX, &c->rope_local_theta, what, err) != 0)
        return -1;
    if ((k || c->rope_local_theta) && !w)
        return nl_error(err, NL_ERR_FORMAT,
                        "%s: \"sliding_window_pattern\" and \"rope_local_theta\" are for a model with a "
                        "\"sliding_window\"",
                        what);
    c->sliding_window = (int)w;
    c->sliding_window_pattern = (int)k;
    return 0;
}

// The MLP and linears of GPT-NeoX, Phi and Gemma (v6): activation (default silu), gated_mlp (default
// true: c_fc holds the gate's and the up projection's rows), bias (every linear has one; default false)
// and embed_scale (the embeddings' factor, in (0, 1e4]; Gemma's sqrt(D); default 1).
static int parse_mlp_kind(NlConfig *c, const cJSON *root, const char *what, NlError *err) {
    const char *an[COUNT(ACTIVATIONS) + 1];
    int act;
    if (cJSON_GetObjectItemCaseSensitive(root, "activation")) {
        if (nl_jsonx_choice(root, "activation", names_of(ACTIVATIONS, COUNT(ACTIVATIONS), an), &act, what, err) != 0)
            return -1;
        c->activation = (NlActivation)ACTIVATIONS[act].value;
    }
    if (nl_jsonx_bool(root, "gated_mlp", 0, &c->gated_mlp, what, err) != 0 ||
        nl_jsonx_bool(root, "bias", 0, &c->bias, what, err) != 0 ||
        nl_jsonx_number(root, "embed_scale", 0, 1e-30, 1e4, &c->embed_scale, what, err) != 0 ||
        nl_jsonx_number(root, "attn_scale", 0, 1e-30, 1e4, &c->attn_scale, what, err) != 0 ||
        nl_jsonx_number(root, "attn_softcap", 0, 1e-3, 1e4, &c->attn_softcap, what, err) != 0 ||
        nl_jsonx_number(root, "final_softcap", 0, 1e-3, 1e4, &c->final_softcap, what, err) != 0)
        return -1;
    return 0;
}

// A Llama model (format version 4; docs/llama.md): arch llama, vocab_size, n_layer, n_head,
// n_kv_head (dividing n_head; default n_head), n_embd, block_size, n_inner, norm rmsnorm|layernorm|none
// (default rmsnorm), placement pre|post|peri (default pre), norm_eps, rope_theta (> 0, default 10000),
// tie_embeddings, qk_norm and attn_bias (default false), and the v6 keys (parse_heads, parse_mlp_kind).
// No learned positions; by default a gated SiLU MLP without biases.
static int parse_llama_config(NlConfig *c, const cJSON *root, int version, const char *what, NlError *err) {
    static const char *const KEYS[] = {"format",
                                       "arch",
                                       "vocab_size",
                                       "n_layer",
                                       "n_head",
                                       "n_kv_head",
                                       "n_embd",
                                       "block_size",
                                       "n_inner",
                                       "norm",
                                       "placement",
                                       "norm_eps",
                                       "rope_theta",
                                       "qk_norm",
                                       "attn_bias",
                                       "tie_embeddings",
                                       "head_bias",
                                       "block",
                                       "final_norm",
                                       "mix_post_layers",
                                       "head_dim",
                                       "rope_dims",
                                       "activation",
                                       "gated_mlp",
                                       "bias",
                                       "embed_scale",
                                       "attn_scale",
                                       "attn_softcap",
                                       "final_softcap",
                                       "sliding_window",
                                       "sliding_window_pattern",
                                       "rope_local_theta",
                                       NULL};
    static const char *const LLAMA_NORMS[] = {"rmsnorm", "layernorm", "none", "dyt", NULL};
    static const NlNormType NORM_OF[] = {NL_NORM_RMSNORM, NL_NORM_LAYERNORM, NL_NORM_NONE, NL_NORM_DYT};
    if (nl_jsonx_only_keys(root, KEYS, what, err) != 0) return -1;
    if (version < 4) {
        nl_error(err, NL_ERR_FORMAT, "%s: arch \"llama\" needs format version 4 (the file says version %d)", what,
                 version);
        return -1;
    }
    int64_t v, l, h, kvh, d, t, f;
    int norm = 0, tie = 0, ab = 0, hb = 0;
    double eps = 1e-5, theta = 10000.0;
    if (nl_jsonx_int(root, "vocab_size", 1, 1, 1 << 20, &v, what, err) != 0 ||
        nl_jsonx_int(root, "n_layer", 1, 1, 256, &l, what, err) != 0 ||
        nl_jsonx_int(root, "n_head", 1, 1, 1024, &h, what, err) != 0 ||
        nl_jsonx_int(root, "n_embd", 1, 1, 1 << 16, &d, what, err) != 0 ||
        nl_jsonx_int(root, "block_size", 1, 1, 1 << 16, &t, what, err) != 0 ||
        nl_jsonx_int(root, "n_inner", 1, 1, 1 << 20, &f, what, err) != 0)
        return -1;
    kvh = h;
    if (nl_jsonx_int(root, "n_kv_head", 0, 1, 1024, &kvh, what, err) != 0 ||
        (cJSON_GetObjectItemCaseSensitive(root, "norm") &&
         nl_jsonx_choice(root, "norm", LLAMA_NORMS, &norm, what, err) != 0) ||
        nl_jsonx_number(root, "norm_eps", 0, 1e-12, 1, &eps, what, err) != 0 ||
        nl_jsonx_number(root, "rope_theta", 0, -1e300, 1e300, &theta, what, err) != 0 ||
        nl_jsonx_bool(root, "tie_embeddings", 0, &tie, what, err) != 0 ||
        nl_jsonx_bool(root, "attn_bias", 0, &ab, what, err) != 0 ||
        nl_jsonx_bool(root, "head_bias", 0, &hb, what, err) != 0)
        return -1;
    // RoPE's table is float (run.c's): a base below 1 turns pairs faster than a radian a position and,
    // near 0, overflows to inf (then NaN); above FLT_MAX it is no float
    if (!(theta >= 1 && theta <= FLT_MAX)) {
        nl_error(err, NL_ERR_FORMAT, "%s: \"rope_theta\" = %g must be in [1, %g] (RoPE's base, a float)", what, theta,
                 (double)FLT_MAX);
        return -1;
    }
    if (h % kvh != 0) {
        nl_error(err, NL_ERR_FORMAT, "%s: \"n_kv_head\" %lld does not divide \"n_head\" %lld", what, (long long)kvh,
                 (long long)h);
        return -1;
    }
    *c = (NlConfig){.arch = NL_ARCH_LLAMA,
                    .vocab_size = (int)v,
                    .n_layer = (int)l,
                    .n_head = (int)h,
                    .n_kv_head = (int)kvh,
                    .n_embd = (int)d,
                    .block_size = (int)t,
                    .n_inner = (int)f,
                    .norm = NORM_OF[norm],
                    .norm_eps = eps,
                    .residual_scale = 1.0,
                    .activation = NL_ACT_SILU,
                    .tie_embeddings = tie,
                    .rope = 1,
                    .rope_theta = theta,
                    .gated_mlp = 1,
                    .attn_bias = ab,
                    .head_bias = hb};
    if (need_v6(root, version, what, err) != 0 || parse_heads(c, root, what, err) != 0 ||
        parse_mlp_kind(c, root, what, err) != 0 || parse_windows(c, root, version, what, err) != 0 ||
        parse_block(c, root, 0, what, err) != 0)
        return -1;
    if (c->norm == NL_NORM_DYT && version < 5)
        return nl_error(err, NL_ERR_FORMAT, "%s: norm \"dyt\" needs format version 5 (the file says version %d)", what,
                        version);
    return nl_recipe_check_config(c, 0, version, what, err);
}

int nl_config_from_json(NlConfig *c, const cJSON *root, const char *what, NlError *err) {
    static const char *const KEYS[] = {
        "format",         "arch",           "vocab_size", "n_layer",   "n_head",     "n_embd",          "block_size",
        "mlp_ratio",      "n_inner",        "norm",       "placement", "norm_eps",   "activation",      "bias",
        "tie_embeddings", "residual_scale", "head_bias",  "block",     "final_norm", "mix_post_layers", NULL};
    if (!cJSON_IsObject(root)) {
        nl_error(err, NL_ERR_FORMAT, "%s: config must be a JSON object", what);
        return -1;
    }
    int version, arch = 0;  // arch may be left out: ARCHS[0] is transformer
    const char *archn[COUNT(ARCHS) + 1];
    if (parse_format(root, what, &version, err) != 0 ||
        (cJSON_GetObjectItemCaseSensitive(root, "arch") &&
         nl_jsonx_choice(root, "arch", names_of(ARCHS, COUNT(ARCHS), archn), &arch, what, err) != 0))
        return -1;
    if (ARCHS[arch].value == NL_ARCH_LLAMA) return parse_llama_config(c, root, version, what, err);
    if (ARCHS[arch].value != NL_ARCH_TRANSFORMER)
        return parse_rnn_config(c, root, (NlArch)ARCHS[arch].value, version, what, err);
    if (nl_jsonx_only_keys(root, KEYS, what, err) != 0) return -1;
    int64_t v, l, h, d, t;
    if (nl_jsonx_int(root, "vocab_size", 1, 1, 1 << 20, &v, what, err) != 0 ||
        nl_jsonx_int(root, "n_layer", 1, 1, 256, &l, what, err) != 0 ||
        nl_jsonx_int(root, "n_head", 1, 1, 1024, &h, what, err) != 0 ||
        nl_jsonx_int(root, "n_embd", 1, 1, 1 << 16, &d, what, err) != 0 ||
        nl_jsonx_int(root, "block_size", 1, 1, 1 << 16, &t, what, err) != 0)
        return -1;
    *c = (NlConfig){.vocab_size = (int)v,
                    .n_layer = (int)l,
                    .n_head = (int)h,
                    .n_kv_head = (int)h,
                    .n_embd = (int)d,
                    .block_size = (int)t};
    if (d % h != 0) {
        nl_error(err, NL_ERR_FORMAT, "%s: n_embd %lld is not divisible by n_head %lld", what, (long long)d,
                 (long long)h);
        return -1;
    }
    int norm, act;
    double eps, alpha = 1.0;
    const char *nn[COUNT(NORMS) + 1], *an[COUNT(ACTIVATIONS) + 1];
    if (parse_mlp_width(c, root, what, err) != 0 ||
        nl_jsonx_choice(root, "norm", names_of(NORMS, COUNT(NORMS), nn), &norm, what, err) != 0)
        return -1;
    // placement may be left out with norm none (it is pre)
    if (parse_block(c, root, NORMS[norm].value != NL_NORM_NONE, what, err) != 0 ||
        nl_jsonx_number(root, "residual_scale", 0, 1e-3, 1e3, &alpha, what, err) != 0 ||
        nl_jsonx_choice(root, "activation", names_of(ACTIVATIONS, COUNT(ACTIVATIONS), an), &act, what, err) != 0 ||
        nl_jsonx_number(root, "norm_eps", 1, 1e-12, 1, &eps, what, err) != 0 ||
        nl_jsonx_bool(root, "bias", 1, &c->bias, what, err) != 0 ||
        nl_jsonx_bool(root, "tie_embeddings", 1, &c->tie_embeddings, what, err) != 0 ||
        nl_jsonx_bool(root, "head_bias", 0, &c->head_bias, what, err) != 0)
        return -1;
    c->norm = (NlNormType)NORMS[norm].value;  // jsonx_choice gave the place in the names list
    c->activation = (NlActivation)ACTIVATIONS[act].value;
    c->norm_eps = eps;
    c->residual_scale = alpha;
    return check_versions(c, root, version, what, err);
}

// ---- entry points on bytes in memory (fuzzing, tests)

int nl_config_parse(NlConfig *out, const char *buf, size_t len, const char *what, NlError *err) {
    cJSON *root = nl_jsonx_parse(buf, len, what, err);
    int rc = root ? nl_config_from_json(out, root, what, err) : -1;
    cJSON_Delete(root);
    return rc;
}

// ---- config.json rewritten (normlab fold's)

int nl_config_json_set(const char *json, size_t len, const char *const *keys, const int *values, size_t n, char **out,
                       const char *what, NlError *err) {
    cJSON *root = nl_jsonx_parse(json, len, what, err);
    *out = NULL;
    if (!root) return -1;
    int ok = cJSON_IsObject(root);
    for (size_t i = 0; ok && i < n; i++) {
        cJSON *v = cJSON_CreateBool(values[i]);
        ok = v &&
             (cJSON_GetObjectItemCaseSensitive(root, keys[i]) ? cJSON_ReplaceItemInObjectCaseSensitive(root, keys[i], v)
                                                              : cJSON_AddItemToObject(root, keys[i], v));
    }
    if (ok) *out = cJSON_Print(root);
    cJSON_Delete(root);
    if (*out) return 0;
    return nl_error(err, ok ? NL_ERR_NOMEM : NL_ERR_FORMAT, ok ? "out of memory" : "%s: config must be a JSON object",
                    what);
}
