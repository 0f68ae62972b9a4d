// bpe_hf.c — a Hugging Face tokenizer.json of a byte-level BPE (bpe.h): GPT-2's, and those of Qwen 2
// and 3, Llama 3, OLMo 2, SmolLM2 and GPT-NeoX. Every part the file has is read as Hugging Face's
// tokenizers reads it, and a part normlab does not run is refused by name:
//   normalizer      null, or NFC
//   pre_tokenizer   ByteLevel with its regex (GPT-2's pattern); or a Sequence of Split(a pattern
//                   pretokenize.h knows, Isolated) and ByteLevel without its regex (Qwen, Llama 3,
//                   OLMo 2); or of Digits(individual_digits) and ByteLevel with its regex (SmolLM2);
//                   never a prefix space
//   model           BPE without byte fallback, dropout, subword prefix or word suffix; its vocab, its
//                   merges (rank = order), ignore_merges
//   added_tokens    {id, content, special, normalized}, without lstrip, rstrip or single_word
//   decoder, post_processor: not run (ByteLevel decodes as nl_bpe_bytes does; a BOS the
//                   post-processor adds is the model's to add)
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bpe.h"

#define MAX_ADDED 4096

static const cJSON *get(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

// o's "type", or "" when it has none (o null or absent included).
static const char *type_of(const cJSON *o) {
    const cJSON *t = cJSON_IsObject(o) ? get(o, "type") : NULL;
    return cJSON_IsString(t) ? t->valuestring : "";
}

static int is(const cJSON *o, const char *type) { return strcmp(type_of(o), type) == 0; }

// A member that is absent, null or "" (a string member left empty).
static int empty(const cJSON *o, const char *key) {
    const cJSON *v = get(o, key);
    return !v || cJSON_IsNull(v) || (cJSON_IsString(v) && !*v->valuestring);
}

// A ByteLevel pre-tokenizer without a prefix space, with its regex or without (use_regex: true when
// absent, as Hugging Face's default).
static int byte_level(const cJSON *p, int with_regex) {
    const cJSON *use = get(p, "use_regex");
    return is(p, "ByteLevel") && !cJSON_IsTrue(get(p, "add_prefix_space")) &&
           (with_regex ? !cJSON_IsFalse(use) : cJSON_IsFalse(use));
}

// The pre-tokenizer into kind's pattern and split_digits.
static int read_pre_tokenizer(const cJSON *pre, NlBpeKind *kind, const char *what, NlError *err) {
    const cJSON *list = is(pre, "Sequence") ? get(pre, "pretokenizers") : NULL;
    const cJSON *first = cJSON_IsArray(list) ? list->child : NULL, *second = first ? first->next : NULL;
    const cJSON *regex = get(get(first, "pattern"), "Regex"), *behavior = get(first, "behavior");
    kind->pattern = NL_PATTERN_GPT2;
    if (byte_level(pre, 1)) return 0;
    if (!second || second->next) {
    } else if (is(first, "Digits") && cJSON_IsTrue(get(first, "individual_digits")) && byte_level(second, 1)) {
        kind->split_digits = 1;
        return 0;
    } else if (is(first, "Split") && cJSON_IsString(regex) && byte_level(second, 0) && cJSON_IsString(behavior) &&
               strcmp(behavior->valuestring, "Isolated") == 0 && !cJSON_IsTrue(get(first, "invert"))) {
        int pattern = nl_pattern_of_regex(regex->valuestring);
        if (pattern >= 0) {
            kind->pattern = (NlPattern)pattern;
            return 0;
        }
        return nl_error(err, NL_ERR_FORMAT,
                        "%s: pre_tokenizer's Split pattern \"%.80s\" is none normlab runs (GPT-2's, cl100k's, "
                        "Qwen 2's)",
                        what, regex->valuestring);
    }
    return nl_error(err, NL_ERR_FORMAT,
                    "%s: a %.40s pre-tokenizer: normlab runs ByteLevel, Split(a known pattern) then ByteLevel, "
                    "and Digits(individual) then ByteLevel, each without a prefix space",
                    what, *type_of(pre) ? type_of(pre) : "missing");
}

static int read_normalizer(const cJSON *norm, NlBpeKind *kind, const char *what, NlError *err) {
    kind->nfc = is(norm, "NFC");
    if (!norm || cJSON_IsNull(norm) || kind->nfc) return 0;
    return nl_error(err, NL_ERR_FORMAT, "%s: a %.40s normalizer: normlab's byte-level BPE runs NFC or none", what,
                    *type_of(norm) ? type_of(norm) : "type-less");
}

static int read_model(const cJSON *model, NlBpeKind *kind, const char *what, NlError *err) {
    const cJSON *ignore = get(model, "ignore_merges");
    if (cJSON_IsTrue(get(model, "byte_fallback")))
        return nl_error(err, NL_ERR_FORMAT, "%s: a byte-level BPE with byte_fallback is none normlab runs", what);
    if (!empty(model, "dropout") || !empty(model, "continuing_subword_prefix") || !empty(model, "end_of_word_suffix") ||
        (ignore && !cJSON_IsBool(ignore)))
        return nl_error(err, NL_ERR_FORMAT,
                        "%s: model.dropout, a subword prefix, a word suffix or a non-boolean ignore_merges is not "
                        "a byte-level BPE normlab runs",
                        what);
    kind->ignore_merges = cJSON_IsTrue(ignore);
    return 0;
}

// added_tokens into *added (malloc'd, *n of them): each with an id, a content and no flag normlab
// does not run.
static int read_added(const cJSON *list, NlBpeAdded **added, int *n, const char *what, NlError *err) {
    *added = NULL;
    *n = 0;
    if (!list || cJSON_IsNull(list)) return 0;
    int count = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : -1;
    if (count < 0 || count > MAX_ADDED)
        return nl_error(err, NL_ERR_FORMAT, "%s: added_tokens must be an array of at most %d tokens", what, MAX_ADDED);
    if (!(*added = calloc((size_t)count + 1, sizeof **added)))
        return nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
    for (const cJSON *e = list->child; e; e = e->next, (*n)++) {
        const cJSON *id = get(e, "id"), *content = get(e, "content");
        static const char *const UNRUN[] = {"lstrip", "rstrip", "single_word"};
        double v = cJSON_IsNumber(id) ? id->valuedouble : -1;
        size_t len = cJSON_IsString(content) ? strlen(content->valuestring) : 0;
        if (v < 0 || v >= (1 << 24) || v != (double)(int)v || len == 0 || len > NL_TOKEN_MAX_BYTES)
            return nl_error(err, NL_ERR_FORMAT,
                            "%s: added_tokens[%d] needs an id (0 or more) and a content of 1 to %d bytes", what, *n,
                            NL_TOKEN_MAX_BYTES);
        for (size_t k = 0; k < sizeof UNRUN / sizeof UNRUN[0]; k++)
            if (cJSON_IsTrue(get(e, UNRUN[k])))
                return nl_error(err, NL_ERR_FORMAT, "%s: added_tokens[%d] (\"%.40s\"): %s is not run by normlab", what,
                                *n, content->valuestring, UNRUN[k]);
        (*added)[*n] = (NlBpeAdded){content->valuestring, (int)v, cJSON_IsTrue(get(e, "special")),
                                    !cJSON_IsFalse(get(e, "normalized"))};
    }
    return 0;
}

int nl_bpe_from_json(NlBpe **out, const cJSON *root, const char *what, NlError *err) {
    *out = NULL;
    const cJSON *model = get(root, "model");
    NlBpeKind kind = {0};
    NlBpeAdded *added = NULL;
    if (!cJSON_IsObject(model))
        return nl_error(err, NL_ERR_FORMAT, "%s: a Hugging Face tokenizer.json needs a \"model\" object", what);
    int rc = read_model(model, &kind, what, err) != 0 || read_normalizer(get(root, "normalizer"), &kind, what, err) ||
                     read_pre_tokenizer(get(root, "pre_tokenizer"), &kind, what, err) != 0 ||
                     read_added(get(root, "added_tokens"), &added, &kind.n_added, what, err) != 0
                 ? -1
                 : 0;
    kind.added = added;
    if (rc == 0) rc = nl_bpe_build(out, get(model, "vocab"), get(model, "merges"), &kind, what, err);
    free(added);
    return rc;
}
