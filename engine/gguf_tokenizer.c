// gguf_tokenizer.c — a GGUF file's tokenizer from its tokenizer.ggml.* keys (gguf_tokenizer.h):
// llama.cpp's SentencePiece (tokenizer.ggml.model "llama") and byte-level BPE ("gpt2").
#define _POSIX_C_SOURCE 200809L
#include "gguf_tokenizer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bpe.h"
#include "spm.h"
#include "tokenizer.h"

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
static int read_bpe(NlTokenizer **tok, const GgufMeta *m, const GgufKv *tokens, const GgufKv *types) {
    const char *names[N_PRES + 1] = {NULL};
    for (size_t i = 0; i < N_PRES; i++) names[i] = PRES[i].name;
    int pre, add_bos;
    int64_t bos;
    const GgufKv *merges;
    size_t n = tokens->count, text = 0, n_added = 0;
    if (nl_gguf_get_choice(
            m, "tokenizer.ggml.pre", names,
            "not a pre-tokenizer normlab runs (default, gpt-2, olmo, smollm, llama-bpe, qwen2; it never guesses)",
            &pre) ||
        nl_gguf_get_array(m, "tokenizer.ggml.merges", GGUF_STRING, 0, &merges) ||
        nl_gguf_get_bool(m, "tokenizer.ggml.add_bos_token", 0, &add_bos) ||
        nl_gguf_get_int(m, "tokenizer.ggml.bos_token_id", 0, 0, -1, (int64_t)n - 1, -1, &bos))
        return -1;
    if (!merges) return nl_error(m->err, NL_ERR_FORMAT, "%s: lacks tokenizer.ggml.merges", m->what);
    if (add_bos && bos < 0)
        return nl_error(m->err, NL_ERR_FORMAT, "%s: tokenizer.ggml.add_bos_token is true, and there is no bos_token_id",
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
    if (rc == 0 && nl_tokenizer_set_bos(*tok, add_bos ? (int)bos : -1, m->err) != 0) {  // (only one it adds)
        nl_tokenizer_free(*tok);
        *tok = NULL;
        rc = -1;
    }
    cJSON_Delete(vocab);
    cJSON_Delete(list);
    free(added);
    free(buf);
    return rc;
}

static int read_spm(NlTokenizer **tok, const GgufMeta *m, const GgufKv *tokens, const GgufKv *types);

int nl_gguf_tokenizer(NlTokenizer **tok, const GgufMeta *m) {
    static const char *const MODELS[] = {"llama", "gpt2", NULL};
    int model;
    const GgufKv *tokens, *types;
    if (nl_gguf_get_choice(m, "tokenizer.ggml.model", MODELS,
                           "normlab reads llama's SentencePiece and gpt2's byte-level BPE", &model) ||
        nl_gguf_get_array(m, "tokenizer.ggml.tokens", GGUF_STRING, 0, &tokens))
        return -1;
    if (!tokens || !tokens->count || tokens->count > 1 << 30)
        return nl_error(m->err, NL_ERR_FORMAT, "%s: lacks tokenizer.ggml.tokens", m->what);
    if (nl_gguf_get_array(m, "tokenizer.ggml.token_type", GGUF_I32, tokens->count, &types)) return -1;
    return model == 0 ? read_spm(tok, m, tokens, types) : read_bpe(tok, m, tokens, types);
}

// llama.cpp's SentencePiece (tokenizer.ggml.model "llama"): the pieces with their scores and types.
static int read_spm(NlTokenizer **tok, const GgufMeta *m, const GgufKv *tokens, const GgufKv *types) {
    int add_bos, prefix;
    int64_t bos, eos, unk;
    const GgufKv *scores;
    size_t n = tokens->count, text = 0;
    if (nl_gguf_get_array(m, "tokenizer.ggml.scores", GGUF_F32, n, &scores) ||
        nl_gguf_get_int(m, "tokenizer.ggml.bos_token_id", 0, 0, -1, (int64_t)n - 1, -1, &bos) ||
        nl_gguf_get_int(m, "tokenizer.ggml.eos_token_id", 0, 0, -1, (int64_t)n - 1, -1, &eos) ||
        nl_gguf_get_int(m, "tokenizer.ggml.unknown_token_id", 0, 0, 0, (int64_t)n - 1, 0, &unk) ||
        nl_gguf_get_bool(m, "tokenizer.ggml.add_bos_token", 1, &add_bos) ||
        nl_gguf_get_bool(m, "tokenizer.ggml.add_space_prefix", 1, &prefix))
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
