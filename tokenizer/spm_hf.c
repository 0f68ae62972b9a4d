// spm_hf.c — a Hugging Face tokenizer.json of a SentencePiece-style BPE (spm.h): Llama 2's and
// TinyLlama's, as HF's LlamaConverter writes them. Every part the file has is read as HF's tokenizers
// reads it, and a part normlab does not run is refused by name:
//   normalizer      Sequence[Prepend("▁"), Replace(" ", "▁")] (either part alone too), or null
//   pre_tokenizer   null, or the legacy Metaspace("▁", add_prefix_space | prepend_scheme, split)
//   model           BPE with byte_fallback, its vocab and merges (rank = order), unk_token
//   decoder         Replace, ByteFallback, Fuse, Strip (a Sequence of them), or Metaspace: not run,
//                   since they decode as nl_spm_bytes does, the leading space left to the caller
//   post_processor  TemplateProcessing: a special token before $A is bos, added (add_bos); one
//                   after it is eos. None: bos "<s>" and eos "</s>" when the vocab has them, not added
//   added_tokens    each in model.vocab under its id; the special ones are control pieces
#define _POSIX_C_SOURCE 200809L  // strdup
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "spm.h"
#include "tokenizer.h"

#define SPACE "\xE2\x96\x81"

static const cJSON *get(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

// o's "type", or "" when it has none (o null or absent included).
static const char *type_of(const cJSON *o) {
    const cJSON *t = cJSON_IsObject(o) ? get(o, "type") : NULL;
    return cJSON_IsString(t) ? t->valuestring : "";
}

static int is(const cJSON *o, const char *type) { return strcmp(type_of(o), type) == 0; }

static int text_is(const cJSON *v, const char *s) { return cJSON_IsString(v) && strcmp(v->valuestring, s) == 0; }

// A Replace(" ", "▁") normalizer (its pattern {"String": " "}).
static int replaces_space(const cJSON *n) {
    return is(n, "Replace") && text_is(get(get(n, "pattern"), "String"), " ") && text_is(get(n, "content"), SPACE);
}

static int is_spm_normalizer(const cJSON *n) {
    return (is(n, "Prepend") && text_is(get(n, "prepend"), SPACE)) || replaces_space(n);
}

int nl_spm_hf_kind(const cJSON *root, const char *what, NlError *err) {
    const cJSON *model = get(root, "model"), *norm = get(root, "normalizer"), *pre = get(root, "pre_tokenizer");
    const char *type = type_of(model), *pre_type = type_of(pre);
    if (strcmp(type, "BPE") != 0)
        return nl_error(err, NL_ERR_FORMAT,
                        "%s: a %.40s tokenizer (model.type): normlab reads byte-level BPE "
                        "(GPT-2's) and SentencePiece-style BPE (Llama 2's)",
                        what, *type ? type : "model.type-less");
    int spm =
        cJSON_IsTrue(get(model, "byte_fallback")) || strcmp(pre_type, "Metaspace") == 0 || is_spm_normalizer(norm);
    const cJSON *list = is(norm, "Sequence") ? get(norm, "normalizers") : NULL;
    for (const cJSON *n = cJSON_IsArray(list) ? list->child : NULL; n; n = n->next) spm |= is_spm_normalizer(n);
    return spm ? NL_TOKENIZER_SPM : NL_TOKENIZER_BPE;
}

typedef struct {
    int prefix, replace, split;  // a dummy prefix; spaces as "▁"; Metaspace's split
} Text;

// The normalizer and pre-tokenizer: what they do to the text.
static int read_text_rules(const cJSON *root, Text *t, const char *what, NlError *err) {
    const cJSON *norm = get(root, "normalizer"), *pre = get(root, "pre_tokenizer");
    const cJSON *one = is(norm, "Sequence") ? get(norm, "normalizers") : NULL, *n = norm;
    if (one && !cJSON_IsArray(one)) one = NULL;  // (refused below as a Sequence normalizer)
    if (one) n = one->child;
    *t = (Text){0, 0, 0};
    for (; n && !cJSON_IsNull(n); n = one ? n->next : NULL) {
        if (is(n, "Prepend") && text_is(get(n, "prepend"), SPACE)) t->prefix = 1;
        else if (replaces_space(n)) t->replace = 1;
        else
            return nl_error(err, NL_ERR_FORMAT,
                            "%s: a %.40s normalizer: normlab runs Prepend(\"" SPACE "\") and Replace(\" \", \"" SPACE
                            "\") only",
                            what, *type_of(n) ? type_of(n) : "typeless");
        if (!one) break;
    }
    if (pre && !cJSON_IsNull(pre)) {
        const cJSON *scheme = get(pre, "prepend_scheme"), *aps = get(pre, "add_prefix_space");
        if (!is(pre, "Metaspace"))
            return nl_error(err, NL_ERR_FORMAT,
                            "%s: a %.40s pre-tokenizer: a SentencePiece-style BPE has none, or "
                            "Metaspace(\"" SPACE "\")",
                            what, *type_of(pre) ? type_of(pre) : "typeless");
        if (!text_is(get(pre, "replacement"), SPACE))
            return nl_error(
                err, NL_ERR_FORMAT,
                "%s: pre_tokenizer: a SentencePiece-style BPE's Metaspace replaces a space with \"" SPACE "\"", what);
        t->replace = 1;
        t->split = !cJSON_IsFalse(get(pre, "split"));  // (HF's default: true)
        if (text_is(scheme, "always") || text_is(scheme, "first") || (!scheme && !cJSON_IsFalse(aps))) t->prefix = 1;
        else if (scheme && !text_is(scheme, "never"))
            return nl_error(err, NL_ERR_FORMAT, "%s: pre_tokenizer.prepend_scheme must be always, first or never",
                            what);
    }
    if (!t->replace)
        return nl_error(err, NL_ERR_FORMAT,
                        "%s: neither the normalizer nor the pre-tokenizer writes a space as \"" SPACE
                        "\" (Replace or Metaspace)",
                        what);
    return 0;
}

static int read_decoder(const cJSON *root, const char *what, NlError *err) {
    static const char *const RUN[] = {"Replace", "ByteFallback", "Fuse", "Strip", "Metaspace", NULL};
    const cJSON *dec = get(root, "decoder"), *list = is(dec, "Sequence") ? get(dec, "decoders") : NULL;
    if (!cJSON_IsArray(list)) list = NULL;  // (a Sequence without its list is refused as a decoder of its own)
    for (const cJSON *d = list ? list->child : dec; d && !cJSON_IsNull(d); d = list ? d->next : NULL) {
        int known = 0;
        for (int i = 0; RUN[i]; i++) known |= is(d, RUN[i]);
        if (!known)
            return nl_error(err, NL_ERR_FORMAT,
                            "%s: a %.40s decoder: a SentencePiece-style BPE decodes with Replace, "
                            "ByteFallback, Fuse and Strip",
                            what, *type_of(d) ? type_of(d) : "typeless");
        if (!list) break;
    }
    return 0;
}

// The id of the vocabulary's piece s (a cJSON lookup: for the few special tokens only), or -1.
static int vocab_id(const cJSON *vocab, const char *s) {
    const cJSON *v = s ? get(vocab, s) : NULL;
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1 << 30 ? (int)v->valuedouble : -1;
}

// TemplateProcessing's "single": a special token before $A is bos (added), one after it eos.
static int read_post(const cJSON *root, const cJSON *vocab, NlSpmSpec *sp, const char *what, NlError *err) {
    const cJSON *post = get(root, "post_processor");
    sp->bos = vocab_id(vocab, "<s>");
    sp->eos = vocab_id(vocab, "</s>");
    if (!post || cJSON_IsNull(post)) return 0;
    const cJSON *single = get(post, "single");
    if (!is(post, "TemplateProcessing") || !cJSON_IsArray(single))
        return nl_error(err, NL_ERR_FORMAT, "%s: a %.40s post-processor: normlab reads TemplateProcessing", what,
                        *type_of(post) ? type_of(post) : "typeless");
    int seen_a = 0;
    for (const cJSON *e = single->child; e; e = e->next) {
        const cJSON *special = get(e, "SpecialToken");
        if (get(e, "Sequence")) seen_a = 1;
        if (!special) continue;
        int id = vocab_id(vocab, cJSON_IsString(get(special, "id")) ? get(special, "id")->valuestring : NULL);
        if (id < 0)
            return nl_error(err, NL_ERR_FORMAT, "%s: post_processor.single names a special token not in model.vocab",
                            what);
        if (seen_a) sp->eos = id;
        else sp->bos = id, sp->add_bos = 1;
    }
    return 0;
}

// model.vocab into pieces (by id), added_tokens' special ones marked.
static int read_vocab(const cJSON *root, const cJSON *vocab, NlSpmSpec *sp, const char **pieces, unsigned char *special,
                      const char *what, NlError *err) {
    for (const cJSON *e = vocab->child; e; e = e->next) {
        double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
        int id = v >= 0 && v < sp->n ? (int)v : -1;  // (a cast of a double out of range is undefined)
        if (v != (double)id || id < 0 || id >= sp->n || pieces[id])
            return nl_error(err, NL_ERR_FORMAT,
                            "%s: model.vocab: \"%.60s\" has an id out of range, repeated or not a "
                            "number (ids are 0 to %d, each once)",
                            what, e->string, sp->n - 1);
        pieces[id] = e->string;
    }
    const cJSON *added = get(root, "added_tokens");
    int i = 0;
    for (const cJSON *e = cJSON_IsArray(added) ? added->child : NULL; e; e = e->next, i++) {
        const cJSON *content = get(e, "content"), *id = get(e, "id");
        int at = cJSON_IsString(content) ? vocab_id(vocab, content->valuestring) : -1;
        if (at < 0 || !cJSON_IsNumber(id) || id->valuedouble != at)
            return nl_error(err, NL_ERR_FORMAT, "%s: added_tokens[%d] is not in model.vocab under its id", what, i);
        special[at] = cJSON_IsTrue(get(e, "special"));
    }
    if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added))
        return nl_error(err, NL_ERR_FORMAT, "%s: added_tokens must be an array", what);
    return 0;
}

// model.merges, "A B" strings or [A, B] pairs, into pairs of piece texts (a string's cut at its
// one space: a piece never holds a space, "▁" stands for it). names holds the cut strings.
static int read_merges(const cJSON *merges, const char *(*pairs)[2], char **names, const char *what, NlError *err) {
    size_t r = 0;
    for (const cJSON *e = merges->child; e; e = e->next, r++) {
        const cJSON *x = cJSON_IsArray(e) ? e->child : NULL, *y = x ? x->next : NULL;
        const char *gap = cJSON_IsString(e) ? strchr(e->valuestring, ' ') : NULL;
        int one_gap = gap && !strchr(gap + 1, ' ');
        if (one_gap && !(names[r] = strdup(e->valuestring)))
            return nl_error(err, NL_ERR_NOMEM, "%s: out of memory for model.merges entry %zu", what, r + 1);
        if (one_gap) {
            names[r][gap - e->valuestring] = '\0';
            pairs[r][0] = names[r];
            pairs[r][1] = names[r] + (gap - e->valuestring) + 1;
        } else if (cJSON_IsString(x) && cJSON_IsString(y) && !y->next) {
            pairs[r][0] = x->valuestring;
            pairs[r][1] = y->valuestring;
        } else return nl_error(err, NL_ERR_FORMAT, "%s: model.merges entry %zu is not \"A B\" or [A, B]", what, r + 1);
    }
    return 0;
}

static int check_model(const cJSON *model, const char *what, NlError *err) {
    const cJSON *prefix = get(model, "continuing_subword_prefix"), *suffix = get(model, "end_of_word_suffix"),
                *dropout = get(model, "dropout");
    if (!cJSON_IsTrue(get(model, "byte_fallback")))
        return nl_error(err, NL_ERR_FORMAT,
                        "%s: model.byte_fallback is not true: normlab reads SentencePiece-style "
                        "BPE with byte fallback only",
                        what);
    if (cJSON_IsTrue(get(model, "ignore_merges")) || (prefix && !cJSON_IsNull(prefix) && !text_is(prefix, "")) ||
        (suffix && !cJSON_IsNull(suffix) && !text_is(suffix, "")) || (dropout && !cJSON_IsNull(dropout)))
        return nl_error(err, NL_ERR_FORMAT,
                        "%s: model has ignore_merges, a subword prefix, a word suffix or dropout: "
                        "not SentencePiece's BPE",
                        what);
    if (!cJSON_IsObject(get(model, "vocab")) || !cJSON_IsArray(get(model, "merges")))
        return nl_error(err, NL_ERR_FORMAT, "%s: model.vocab must be an object of piece: id, model.merges an array",
                        what);
    return 0;
}

int nl_spm_from_hf(NlSpm **out, const cJSON *root, const char *what, NlError *err) {
    *out = NULL;
    const cJSON *model = get(root, "model"), *vocab = get(model, "vocab"), *merges = get(model, "merges");
    Text t;
    if (check_model(model, what, err) != 0 || read_text_rules(root, &t, what, err) != 0 ||
        read_decoder(root, what, err) != 0)
        return -1;
    NlSpmSpec sp = {.n = cJSON_GetArraySize(vocab),
                    .n_merges = (size_t)cJSON_GetArraySize(merges),
                    .dummy_prefix = t.prefix,
                    .split_at_space = t.split};
    const cJSON *unk = get(model, "unk_token");
    sp.unk = vocab_id(vocab, cJSON_IsString(unk) ? unk->valuestring : "<unk>");
    const char **pieces = calloc((size_t)sp.n + 1, sizeof *pieces);
    unsigned char *special = calloc((size_t)sp.n + 1, 1);
    const char *(*pairs)[2] = calloc(sp.n_merges + 1, sizeof *pairs);
    char **names = calloc(sp.n_merges + 1, sizeof *names);
    int rc = pieces && special && pairs && names ? 0 : nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
    if (rc == 0) rc = read_vocab(root, vocab, &sp, pieces, special, what, err);
    if (rc == 0) rc = read_post(root, vocab, &sp, what, err);
    if (rc == 0) rc = read_merges(merges, pairs, names, what, err);
    if (rc == 0) {
        sp.pieces = pieces;
        sp.special = special;
        sp.merges = (const char *const(*)[2])pairs;
        rc = nl_spm_create(out, &sp, what, err);
    }
    for (size_t r = 0; names && r < sp.n_merges; r++) free(names[r]);
    free(names);
    free(pairs);
    free(special);
    free(pieces);
    return rc;
}
