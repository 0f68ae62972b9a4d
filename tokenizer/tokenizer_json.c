// tokenizer_json.c — a model's tokenizer.json (model.h's nl_tokenizer_from_json and
// nl_tokenizer_parse): normlab's character vocabulary ({"type": "char"}), its sentencepiece form, or
// a Hugging Face tokenizer.json (it has a "model": a byte-level BPE, bpe_hf.c, or a SentencePiece-style
// one, spm_hf.c). Every key checked, named in its error.
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bpe.h"
#include "jsonx.h"
#include "model.h"
#include "normlab.h"
#include "normlab_internal.h"
#include "spm.h"
#include "tokenizer.h"

#define FAIL(...)                                  \
    do {                                           \
        nl_error(err, NL_ERR_FORMAT, __VA_ARGS__); \
        goto cleanup;                              \
    } while (0)

// A Hugging Face tokenizer.json (it has a "model"): a byte-level BPE or a SentencePiece-style one.
static int hf_from_json(NlTokenizer **tok, const cJSON *root, const char *what, NlError *err) {
    NlBpe *bpe;
    NlSpm *spm;
    switch (nl_spm_hf_kind(root, what, err)) {
    case NL_TOKENIZER_BPE:
        return nl_bpe_from_json(&bpe, root, what, err) != 0 ? -1 : nl_tokenizer_create_bpe(tok, bpe, err);
    case NL_TOKENIZER_SPM:
        return nl_spm_from_hf(&spm, root, what, err) != 0 ? -1 : nl_tokenizer_create_spm(tok, spm, err);
    default: return -1;
    }
}

int nl_tokenizer_from_json(NlTokenizer **tok, const cJSON *root, const char *what, NlError *err) {
    static const char *const KEYS[] = {"type", "vocab", NULL};
    const char **pieces = NULL;
    int rc = -1;
    if (!cJSON_IsObject(root)) FAIL("%s: tokenizer must be a JSON object", what);
    if (cJSON_GetObjectItemCaseSensitive(root, "model")) return hf_from_json(tok, root, what, err);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "type");
    if (cJSON_IsString(type) && strcmp(type->valuestring, "sentencepiece") == 0) {
        NlSpm *spm;
        return nl_spm_from_json(&spm, root, what, err) != 0 ? -1 : nl_tokenizer_create_spm(tok, spm, err);
    }
    if (nl_jsonx_only_keys(root, KEYS, what, err) != 0) goto cleanup;
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "char") != 0)
        FAIL("%s: \"type\" must be \"char\" or \"sentencepiece\" (or the file a Hugging Face tokenizer.json, with a "
             "\"model\")",
             what);
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(root, "vocab");
    if (!cJSON_IsArray(vocab)) FAIL("%s: \"vocab\" must be an array of one-character strings", what);
    int n = cJSON_GetArraySize(vocab), i = 0;
    pieces = calloc((size_t)n + 1, sizeof *pieces);
    if (!pieces) FAIL("%s: out of memory", what);
    for (const cJSON *e = vocab->child; e; e = e->next, i++) {
        if (!cJSON_IsString(e)) FAIL("%s: vocab[%d] is not a string", what, i);
        pieces[i] = e->valuestring;
    }
    NlError terr;
    if (nl_tokenizer_create(tok, pieces, n, &terr) != 0) {
        nl_error(err, terr.code, "%s: %s", what, terr.msg);
        goto cleanup;
    }
    rc = 0;
cleanup:
    free(pieces);
    return rc;
}

int nl_tokenizer_parse(NlTokenizer **out, const char *buf, size_t len, const char *what, NlError *err) {
    *out = NULL;
    cJSON *root = nl_jsonx_parse(buf, len, what, err);
    int rc = root ? nl_tokenizer_from_json(out, root, what, err) : -1;
    cJSON_Delete(root);
    return rc;
}
