// gguf_model.c — a GGUF file's model: config, tokenizer and tensors (gguf_model.h). The llama
// architecture so far (Llama, Mistral without a window, SmolLM2, TinyLlama), F32, F16, BF16, Q8_0 and
// Q4_0 tensors, and llama.cpp's SentencePiece (tokenizer.ggml.model "llama") and byte-level BPE
// ("gpt2") tokenizers.
#define _POSIX_C_SOURCE 200809L
#include "gguf_model.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bpe.h"
#include "dtype.h"
#include "gguf.h"
#include "model.h"
#include "spm.h"
#include "tokenizer.h"

#define CTX_LIMIT 65536  // the most positions the engine's config takes (config.c)
#define LAYER_MAX 4096

int nl_gguf_is_file(const char *path) {
    char magic[4];
    int fd = open(path, O_RDONLY | O_CLOEXEC), is = 0;
    if (fd < 0) return 0;
    is = read(fd, magic, 4) == 4 && memcmp(magic, "GGUF", 4) == 0;
    close(fd);
    return is;
}

// ---- the metadata's values

typedef struct {
    const GgufFile *f;
    const char *arch, *what;
    NlError *err;
} Meta;

// The key {arch}.suffix (arch NULL: suffix itself), or NULL.
static const GgufKv *key(const Meta *m, const char *suffix, int arch, char *name, size_t cap) {
    snprintf(name, cap, "%s%s%s", arch ? m->arch : "", arch ? "." : "", suffix);
    return nl_gguf_find(m->f, name);
}

// An integer key (any integer type) in [lo, hi]; a missing one is def, or an error where required.
static int get_int(const Meta *m, const char *suffix, int arch, int required, int64_t lo, int64_t hi, int64_t def,
                   int64_t *out) {
    char name[160];
    const GgufKv *kv = key(m, suffix, arch, name, sizeof name);
    *out = def;
    if (!kv) return required ? nl_error(m->err, NL_ERR_FORMAT, "%s: lacks the key %s", m->what, name) : 0;
    int64_t v = 0;
    uint64_t u = 0;
    switch (kv->type) {
    case GGUF_U8: u = *kv->data; break;
    case GGUF_I8: v = (int8_t)*kv->data; break;
    case GGUF_U16: {
        uint16_t x;
        memcpy(&x, kv->data, 2);
        u = x;
    } break;
    case GGUF_I16: {
        int16_t x;
        memcpy(&x, kv->data, 2);
        v = x;
    } break;
    case GGUF_U32: {
        uint32_t x;
        memcpy(&x, kv->data, 4);
        u = x;
    } break;
    case GGUF_I32: {
        int32_t x;
        memcpy(&x, kv->data, 4);
        v = x;
    } break;
    case GGUF_U64: memcpy(&u, kv->data, 8); break;
    case GGUF_I64: memcpy(&v, kv->data, 8); break;
    default: return nl_error(m->err, NL_ERR_FORMAT, "%s: key %s is not an integer", m->what, name);
    }
    if (u > (uint64_t)INT64_MAX) u = (uint64_t)INT64_MAX;
    v = v ? v : (int64_t)u;
    if (v < lo || v > hi)
        return nl_error(m->err, NL_ERR_FORMAT, "%s: key %s is %lld, not in [%lld, %lld]", m->what, name, (long long)v,
                        (long long)lo, (long long)hi);
    *out = v;
    return 0;
}

static int get_float(const Meta *m, const char *suffix, int required, double def, double *out) {
    char name[160];
    const GgufKv *kv = key(m, suffix, 1, name, sizeof name);
    *out = def;
    if (!kv) return required ? nl_error(m->err, NL_ERR_FORMAT, "%s: lacks the key %s", m->what, name) : 0;
    if (kv->type == GGUF_F32) {
        float x;
        memcpy(&x, kv->data, 4);
        *out = x;
    } else if (kv->type == GGUF_F64) memcpy(out, kv->data, 8);
    else return nl_error(m->err, NL_ERR_FORMAT, "%s: key %s is not a float", m->what, name);
    return 0;
}

static int get_bool(const Meta *m, const char *name, int def, int *out) {
    const GgufKv *kv = nl_gguf_find(m->f, name);
    *out = def;
    if (kv && kv->type != GGUF_BOOL) return nl_error(m->err, NL_ERR_FORMAT, "%s: key %s is not a bool", m->what, name);
    if (kv) *out = *kv->data != 0;
    return 0;
}

// A string key equal to one of choices (NULL-terminated): its index; missing or another: an error.
static int get_choice(const Meta *m, const char *name, const char *const *choices, const char *said, int *index) {
    const GgufKv *kv = nl_gguf_find(m->f, name);
    if (!kv || kv->type != GGUF_STRING)
        return nl_error(m->err, NL_ERR_FORMAT, "%s: lacks the string key %s", m->what, name);
    for (*index = 0; choices[*index]; ++*index)
        if (strlen(choices[*index]) == kv->strings[0].len &&
            !memcmp(choices[*index], kv->strings[0].s, kv->strings[0].len))
            return 0;
    return nl_error(m->err, NL_ERR_FORMAT, "%s: %s is \"%.*s\": %s", m->what, name,
                    (int)(kv->strings[0].len > 64 ? 64 : kv->strings[0].len), kv->strings[0].s, said);
}

// An array key of n elements of type elem, or NULL where it is absent; one of another shape: an error.
static int get_array(const Meta *m, const char *name, GgufType elem, size_t n, const GgufKv **out) {
    *out = nl_gguf_find(m->f, name);
    if (*out && ((*out)->type != GGUF_ARRAY || (*out)->elem != elem || (n && (*out)->count != n)))
        return nl_error(m->err, NL_ERR_FORMAT, "%s: key %s is not an array of the tokens' count of the type it needs",
                        m->what, name);
    return 0;
}

// ---- config.json's fields

static int read_config(NlConfig *config, const Meta *m, int tied, size_t n_tokens) {
    int64_t L, T, D, F, H, KVH, V, Dh, rot;
    double eps, theta;
    char name[160];
    if (get_int(m, "block_count", 1, 1, 1, LAYER_MAX, 0, &L) ||
        get_int(m, "context_length", 1, 1, 1, INT64_MAX, 0, &T) ||
        get_int(m, "embedding_length", 1, 1, 1, 1 << 20, 0, &D) ||
        get_int(m, "feed_forward_length", 1, 1, 1, 1 << 22, 0, &F) ||
        get_int(m, "attention.head_count", 1, 1, 1, 1 << 12, 0, &H) ||
        get_int(m, "attention.head_count_kv", 1, 0, 1, 1 << 12, H, &KVH) ||
        get_int(m, "vocab_size", 1, 0, 1, 1 << 30, (int64_t)n_tokens, &V) ||
        get_int(m, "attention.key_length", 1, 0, 2, 1024, D / H, &Dh) ||
        get_int(m, "rope.dimension_count", 1, 0, 2, 1024, Dh, &rot) ||
        get_float(m, "attention.layer_norm_rms_epsilon", 1, 0, &eps) || get_float(m, "rope.freq_base", 0, 1e4, &theta))
        return -1;
    if (rot != Dh)
        return nl_error(m->err, NL_ERR_FORMAT,
                        "%s: %s.rope.dimension_count %lld is not the head's %lld: normlab's "
                        "llama rotates whole heads",
                        m->what, m->arch, (long long)rot, (long long)Dh);
    if (key(m, "rope.scaling.type", 1, name, sizeof name) || nl_gguf_find(m->f, "llama.rope.scaling.factor"))
        return nl_error(m->err, NL_ERR_FORMAT, "%s: has %s: normlab runs RoPE unscaled only", m->what, name);
    cJSON *root = cJSON_CreateObject(), *format = cJSON_AddObjectToObject(root, "format");
    cJSON_AddStringToObject(format, "name", "normlab");
    cJSON_AddNumberToObject(format, "version", Dh != D / H ? 6 : 4);
    cJSON_AddStringToObject(root, "arch", "llama");
    const char *const keys[] = {"vocab_size", "n_layer", "n_head", "n_kv_head", "n_embd", "block_size", "n_inner"};
    const double values[] = {
        (double)V, (double)L, (double)H, (double)KVH, (double)D, (double)(T < CTX_LIMIT ? T : CTX_LIMIT), (double)F};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) cJSON_AddNumberToObject(root, keys[i], values[i]);
    cJSON_AddStringToObject(root, "norm", "rmsnorm");
    cJSON_AddStringToObject(root, "placement", "pre");
    cJSON_AddNumberToObject(root, "norm_eps", eps);
    cJSON_AddNumberToObject(root, "rope_theta", theta);
    cJSON_AddBoolToObject(root, "tie_embeddings", tied);
    if (Dh != D / H) cJSON_AddNumberToObject(root, "head_dim", (double)Dh);
    int rc = nl_config_from_json(config, root, m->what, m->err);
    cJSON_Delete(root);
    return rc;
}

// ---- the tokenizer

enum { TOKEN_NORMAL = 1, TOKEN_UNKNOWN = 2, TOKEN_CONTROL = 3, TOKEN_BYTE = 6 };  // tokenizer.ggml.token_type

// llama.cpp's names of the byte-level BPE pre-tokenizers (tokenizer.ggml.pre) normlab runs, as bpe.h's kinds
// (llama.cpp runs no normalizer for them: neither does this).
static const struct {
    const char *name;
    NlPattern pattern;
    int split_digits, ignore_merges;
} PRES[] = {{"default", NL_PATTERN_GPT2, 0, 0},     {"gpt-2", NL_PATTERN_GPT2, 0, 0},
            {"olmo", NL_PATTERN_GPT2, 0, 0},        {"smollm", NL_PATTERN_GPT2, 1, 0},
            {"llama-bpe", NL_PATTERN_CL100K, 0, 1}, {"qwen2", NL_PATTERN_QWEN2, 0, 0}};
#define N_PRES (sizeof PRES / sizeof PRES[0])
enum { TOKEN_USER = 4 };  // tokenizer.ggml.token_type: user-defined

// A byte-level BPE (tokenizer.ggml.model "gpt2"): the tokens (GPT-2's byte alphabet) as its vocabulary,
// its merges, its pre-tokenizer by name (never guessed: one missing or unknown is refused), control
// tokens special and user-defined ones always matched (bpe.h's added tokens).
static int read_bpe(NlTokenizer **tok, const Meta *m, const GgufKv *tokens, const GgufKv *types) {
    const char *names[N_PRES + 1] = {NULL};
    for (size_t i = 0; i < N_PRES; i++) names[i] = PRES[i].name;
    int pre, add_bos;
    const GgufKv *merges;
    size_t n = tokens->count, text = 0, n_added = 0;
    if (get_choice(
            m, "tokenizer.ggml.pre", names,
            "not a pre-tokenizer normlab runs (default, gpt-2, olmo, smollm, llama-bpe, qwen2; it never guesses)",
            &pre) ||
        get_array(m, "tokenizer.ggml.merges", GGUF_STRING, 0, &merges) ||
        get_bool(m, "tokenizer.ggml.add_bos_token", 0, &add_bos))
        return -1;
    if (!merges) return nl_error(m->err, NL_ERR_FORMAT, "%s: lacks tokenizer.ggml.merges", m->what);
    if (add_bos)
        return nl_error(m->err, NL_ERR_FORMAT,
                        "%s: tokenizer.ggml.add_bos_token is true: normlab's byte-level BPE "
                        "adds no BOS token yet",
                        m->what);
    for (size_t i = 0; i < n; i++) text += tokens->strings[i].len + 1;
    for (size_t i = 0; i < merges->count; i++) text += merges->strings[i].len + 1;
    char *buf = malloc(text), *at = buf;
    NlBpeAdded *added = calloc(n, sizeof *added);
    cJSON *vocab = cJSON_CreateObject(), *list = cJSON_CreateArray();
    int rc = buf && added && vocab && list ? 0 : nl_error(m->err, NL_ERR_NOMEM, "%s: out of memory", m->what);
    for (size_t i = 0; i < n + merges->count && rc == 0; i++) {  // the tokens, then the merges
        const GgufString *s = i < n ? &tokens->strings[i] : &merges->strings[i - n];
        int32_t type = TOKEN_NORMAL;
        if (types && i < n) memcpy(&type, types->data + 4 * i, 4);
        char *copy = memcpy(at, s->s, s->len);
        copy[s->len] = 0;
        at += s->len + 1;
        if (memchr(s->s, 0, s->len))
            rc = nl_error(m->err, NL_ERR_FORMAT, "%s: a token or merge holds a NUL byte", m->what);
        else if (i >= n)
            rc = cJSON_AddItemToArray(list, cJSON_CreateString(copy)) ? 0 : nl_error(m->err, NL_ERR_NOMEM, "no memory");
        else if (!cJSON_AddNumberToObject(vocab, copy, (double)i))
            rc = nl_error(m->err, NL_ERR_NOMEM, "%s: out of memory", m->what);
        if (i < n && (type == TOKEN_CONTROL || type == TOKEN_USER))
            added[n_added++] = (NlBpeAdded){.content = copy, .id = (int)i, .special = type == TOKEN_CONTROL};
    }
    NlBpeKind kind = {.pattern = PRES[pre].pattern,
                      .split_digits = PRES[pre].split_digits,
                      .ignore_merges = PRES[pre].ignore_merges,
                      .added = added,
                      .n_added = (int)n_added};
    NlBpe *bpe = NULL;
    if (rc == 0)
        rc = nl_bpe_build(&bpe, vocab, list, &kind, m->what, m->err) != 0 ? -1
                                                                          : nl_tokenizer_create_bpe(tok, bpe, m->err);
    cJSON_Delete(vocab);
    cJSON_Delete(list);
    free(added);
    free(buf);
    return rc;
}

static int read_spm(NlTokenizer **tok, const Meta *m, const GgufKv *tokens, const GgufKv *types);

static int read_tokenizer(NlTokenizer **tok, const Meta *m) {
    static const char *const MODELS[] = {"llama", "gpt2", NULL};
    int model;
    const GgufKv *tokens, *types;
    if (get_choice(m, "tokenizer.ggml.model", MODELS, "normlab reads llama's SentencePiece and gpt2's byte-level BPE",
                   &model) ||
        get_array(m, "tokenizer.ggml.tokens", GGUF_STRING, 0, &tokens))
        return -1;
    if (!tokens || !tokens->count || tokens->count > 1 << 30)
        return nl_error(m->err, NL_ERR_FORMAT, "%s: lacks tokenizer.ggml.tokens", m->what);
    if (get_array(m, "tokenizer.ggml.token_type", GGUF_I32, tokens->count, &types)) return -1;
    return model == 0 ? read_spm(tok, m, tokens, types) : read_bpe(tok, m, tokens, types);
}

// llama.cpp's SentencePiece (tokenizer.ggml.model "llama"): the pieces with their scores and types.
static int read_spm(NlTokenizer **tok, const Meta *m, const GgufKv *tokens, const GgufKv *types) {
    int add_bos, prefix;
    int64_t bos, eos, unk;
    const GgufKv *scores;
    size_t n = tokens->count, text = 0;
    if (get_array(m, "tokenizer.ggml.scores", GGUF_F32, n, &scores) ||
        get_int(m, "tokenizer.ggml.bos_token_id", 0, 0, -1, (int64_t)n - 1, -1, &bos) ||
        get_int(m, "tokenizer.ggml.eos_token_id", 0, 0, -1, (int64_t)n - 1, -1, &eos) ||
        get_int(m, "tokenizer.ggml.unknown_token_id", 0, 0, 0, (int64_t)n - 1, 0, &unk) ||
        get_bool(m, "tokenizer.ggml.add_bos_token", 1, &add_bos) ||
        get_bool(m, "tokenizer.ggml.add_space_prefix", 1, &prefix))
        return -1;
    for (size_t i = 0; i < n; i++) text += tokens->strings[i].len + 1;
    char *buf = malloc(text), **pieces = calloc(n, sizeof *pieces);
    double *score = calloc(n, sizeof *score);
    unsigned char *special = calloc(n, 1);
    int rc = buf && pieces && score && special ? 0 : nl_error(m->err, NL_ERR_NOMEM, "%s: out of memory", m->what);
    for (size_t i = 0, at = 0; i < n && rc == 0; i++) {
        const GgufString *s = &tokens->strings[i];
        int32_t type = TOKEN_NORMAL;
        float sc = 0;
        if (types) memcpy(&type, types->data + 4 * i, 4);
        if (scores) memcpy(&sc, scores->data + 4 * i, 4);
        if (memchr(s->s, 0, s->len) ||
            (type != TOKEN_NORMAL && type != TOKEN_UNKNOWN && type != TOKEN_CONTROL && type != TOKEN_BYTE))
            rc = nl_error(m->err, NL_ERR_FORMAT,
                          "%s: token %zu holds a NUL byte or has type %d, which normlab does not "
                          "read (normal 1, unknown 2, control 3, byte 6)",
                          m->what, i, (int)type);
        pieces[i] = memcpy(buf + at, s->s, s->len);
        buf[at + s->len] = 0;
        at += s->len + 1;
        score[i] = sc;
        special[i] = type == TOKEN_CONTROL;
    }
    NlSpmSpec spec = {.pieces = (const char *const *)pieces,
                      .scores = score,
                      .special = special,
                      .n = (int)n,
                      .unk = (int)unk,
                      .bos = (int)bos,
                      .eos = (int)eos,
                      .add_bos = add_bos,
                      .dummy_prefix = prefix};
    NlSpm *spm = NULL;
    if (rc == 0) rc = nl_spm_create(&spm, &spec, m->what, m->err) != 0 ? -1 : nl_tokenizer_create_spm(tok, spm, m->err);
    free(buf);
    free(pieces);
    free(score);
    free(special);
    return rc;
}

// ---- the tensors

// normlab's tensor of each layer, and the GGUF tensors (blk.N. less) it is made of, rows joined.
static const struct {
    const char *ours, *parts[3];
} LAYER[] = {
    {"ln_1.weight", {"attn_norm.weight"}},
    {"attn.c_attn.weight", {"attn_q.weight", "attn_k.weight", "attn_v.weight"}},
    {"attn.c_proj.weight", {"attn_output.weight"}},
    {"ln_2.weight", {"ffn_norm.weight"}},
    {"mlp.c_fc.weight", {"ffn_gate.weight", "ffn_up.weight"}},
    {"mlp.c_proj.weight", {"ffn_down.weight"}},
};
#define N_LAYER (sizeof LAYER / sizeof LAYER[0])

static NlDType dtype_of(unsigned type) {
    switch (type) {
    case GGUF_T_F16: return NL_DTYPE_F16;
    case GGUF_T_BF16: return NL_DTYPE_BF16;
    case GGUF_T_Q8_0: return NL_DTYPE_Q8_0;
    case GGUF_T_Q4_0: return NL_DTYPE_Q4_0;
    default: return NL_DTYPE_F32;
    }
}

typedef struct {
    const GgufFile *f;
    const GgufTensor **order;  // (n_tensors) by name, for bsearch
    unsigned char *used;  // (n_tensors)
    const char *what;
    NlError *err;
} Tensors;

static int by_name(const void *a, const void *b) {
    return strcmp((*(const GgufTensor *const *)a)->name, (*(const GgufTensor *const *)b)->name);
}

static const GgufTensor *find(const Tensors *ts, const char *name) {
    GgufTensor key = {.name = (char *)name};
    const GgufTensor *k = &key, *const *hit = bsearch(&k, ts->order, ts->f->n_tensors, sizeof *ts->order, by_name);
    return hit ? *hit : NULL;
}

// normlab's tensor `ours` from the GGUF tensors parts[0..n) (rows joined: one type and width, 1 or 2
// dims); *copy gets the bytes it takes in the owned buffer (joined, or not aligned for its type).
static int make_tensor(Tensors *ts, StTensor *t, const char *ours, const char *const *names, size_t n, size_t *copy) {
    const GgufTensor *part[3] = {NULL, NULL, NULL};
    if (n < 1 || n > 3) return nl_error(ts->err, NL_ERR_FORMAT, "%s: %s: no tensor names", ts->what, ours);
    size_t rows = 0;
    for (size_t k = 0; k < n; k++) {
        if (!(part[k] = find(ts, names[k])))
            return nl_error(ts->err, NL_ERR_FORMAT, "%s: lacks the tensor %s", ts->what, names[k]);
        ts->used[part[k] - ts->f->tensors] = 1;
        if (part[k]->n_dims > 2 || part[k]->type != part[0]->type || part[k]->ne[0] != part[0]->ne[0])
            return nl_error(ts->err, NL_ERR_FORMAT, "%s: tensor %s: not a matrix of %s's type and width", ts->what,
                            names[k], names[0]);
        rows += (size_t)part[k]->ne[1];
    }
    *t = (StTensor){.ndim = part[0]->n_dims, .type = dtype_of(part[0]->type), .data = part[0]->data};
    t->shape[0] = t->ndim == 2 ? rows : (size_t)part[0]->ne[0];
    t->shape[1] = (size_t)part[0]->ne[0];
    for (size_t k = 0; k < n; k++) t->nbytes += part[k]->nbytes;
    *copy = n > 1 || (uintptr_t)t->data % 4 ? t->nbytes : 0;
    if (!(t->name = malloc(strlen(ours) + 1))) return nl_error(ts->err, NL_ERR_NOMEM, "%s: out of memory", ts->what);
    strcpy(t->name, ours);
    return 0;
}

// The joined tensors' bytes, into one owned buffer (the parts found again by name).
static int join(Tensors *ts, StFile *st, void **owned, const char *const (*sources)[3], const size_t *n_parts,
                const size_t *copies, size_t total) {
    unsigned char *at = *owned = malloc(total ? total : 1);
    if (!at) return nl_error(ts->err, NL_ERR_NOMEM, "%s: out of memory", ts->what);
    for (size_t i = 0; i < st->n; i++) {
        if (!copies[i]) continue;
        const unsigned char *start = at;
        for (size_t k = 0; k < n_parts[i]; k++) {
            const GgufTensor *p = find(ts, sources[i][k]);
            at = (unsigned char *)memcpy(at, p->data, p->nbytes) + p->nbytes;
        }
        st->tensors[i].data = start;
        at += (size_t)(-(uintptr_t)at % 8);  // (each copy on 8 bytes)
    }
    return 0;
}

// The names of normlab's j-th tensor and its parts: the three outside the layers, then each layer's.
static size_t names_of(size_t j, char *ours, char (*parts)[64]) {
    static const char *const TOP[3][2] = {{"wte.weight", "token_embd.weight"},
                                          {"ln_f.weight", "output_norm.weight"},
                                          {"lm_head.weight", "output.weight"}};
    size_t n = 0, layer = (j - 3) / N_LAYER, row = (j - 3) % N_LAYER;
    if (j < 3) {
        snprintf(ours, 96, "%s", TOP[j][0]);
        snprintf(parts[0], 64, "%s", TOP[j][1]);
        return 1;
    }
    snprintf(ours, 96, "h.%zu.%s", layer, LAYER[row].ours);
    for (; n < 3 && LAYER[row].parts[n]; n++) snprintf(parts[n], 64, "blk.%zu.%s", layer, LAYER[row].parts[n]);
    return n;
}

static int read_tensors(StFile *st, void **owned, const GgufFile *f, int n_layer, const char *what, NlError *err) {
    Tensors ts = {f, calloc(f->n_tensors + 1, sizeof *ts.order), calloc(f->n_tensors + 1, 1), what, err};
    size_t n = 3 + N_LAYER * (size_t)n_layer, total = 0;
    char(*names)[3][64] = calloc(n, sizeof *names);
    const char *(*sources)[3] = calloc(n, sizeof *sources);
    size_t *n_parts = calloc(n, sizeof *n_parts), *copies = calloc(n, sizeof *copies);
    int rc =
        ts.order && ts.used && names && sources && n_parts && copies && (st->tensors = calloc(n, sizeof *st->tensors))
            ? 0
            : nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
    for (size_t i = 0; i < f->n_tensors && rc == 0; i++) ts.order[i] = &f->tensors[i];
    if (rc == 0) qsort(ts.order, f->n_tensors, sizeof *ts.order, by_name);
    for (size_t i = 0; i < n && rc == 0; i++) {
        char ours[96];
        size_t j = st->n;  // the tensor's place: i, less the tied head's
        n_parts[j] = names_of(i, ours, names[j]);
        if (i == 2 && !find(&ts, names[j][0])) continue;  // no output: the head is tied to token_embd
        for (size_t k = 0; k < n_parts[j]; k++) sources[j][k] = names[j][k];
        if ((rc = make_tensor(&ts, &st->tensors[j], ours, sources[j], n_parts[j], &copies[j])) == 0) st->n++;
        total += copies[j] + 8;
    }
    for (size_t i = 0; i < f->n_tensors && rc == 0; i++)
        if (!ts.used[i])
            rc = nl_error(err, NL_ERR_FORMAT, "%s: tensor %s is not one of a %d-layer llama model's", what,
                          f->tensors[i].name, n_layer);
    if (rc == 0) rc = join(&ts, st, owned, sources, n_parts, copies, total);
    free(ts.order);
    free(ts.used);
    free(names);
    free(sources);
    free(n_parts);
    free(copies);
    return rc;
}

// ---- the model

int nl_gguf_model(NlGgufParts *out, const unsigned char *buf, size_t len, const char *what, NlError *err) {
    static const char *const ARCHES[] = {"llama", NULL};
    GgufFile f;
    *out = (NlGgufParts){0};
    if (nl_gguf_parse(&f, buf, len, what, err) != 0) return -1;
    Meta m = {&f, "llama", what, err};
    const GgufKv *tokens = nl_gguf_find(&f, "tokenizer.ggml.tokens");
    int arch, rc = get_choice(&m, "general.architecture", ARCHES,
                              "normlab's GGUF reader runs llama (Llama, Mistral, SmolLM2, TinyLlama) so far", &arch);
    int tied = 1;
    for (size_t i = 0; i < f.n_tensors; i++) tied &= strcmp(f.tensors[i].name, "output.weight") != 0;
    if (rc == 0) rc = read_config(&out->config, &m, tied, tokens ? tokens->count : 0);
    if (rc == 0) rc = read_tokenizer(&out->tok, &m);
    if (rc == 0) rc = read_tensors(&out->st, &out->owned, &f, out->config.n_layer, what, err);
    nl_gguf_free(&f);
    if (rc != 0) {
        nl_tokenizer_free(out->tok);
        nl_st_free(&out->st);
        free(out->owned);
        *out = (NlGgufParts){0};
    }
    return rc;
}
