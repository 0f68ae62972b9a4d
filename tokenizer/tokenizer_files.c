// tokenizer_files.c — a tokenizer from its files, for an embedder without a model (normlab.h's
// nl_tokenizer_load): a tokenizer.json (normlab's character vocabulary, or Hugging Face's byte-level
// BPE), or GPT-2's vocab.json and merges.txt. Each file is read whole (nl_read_file: regular files
// only, at most 16 MiB, as the loader allows) and every entry checked.
#include <stdlib.h>

#include "bpe.h"
#include "model.h"
#include "normlab.h"
#include "normlab_internal.h"
#include "tokenizer.h"

#define TOKENIZER_FILE_CAP ((size_t)16 << 20)

static int from_tokenizer_json(NlTokenizer **out, const char *path, NlError *err) {
    char *buf = NULL;
    size_t len = 0;
    if (nl_read_file(path, TOKENIZER_FILE_CAP, &buf, &len, err) != 0) return -1;
    int rc = nl_tokenizer_parse(out, buf, len, path, err);
    free(buf);
    return rc;
}

static int from_vocab_merges(NlTokenizer **out, const char *vocab_path, const char *merges_path, NlError *err) {
    char *vocab = NULL, *merges = NULL;
    size_t vocab_len = 0, merges_len = 0;
    NlBpe *bpe = NULL;
    int rc = nl_read_file(vocab_path, TOKENIZER_FILE_CAP, &vocab, &vocab_len, err) != 0 ||
                     nl_read_file(merges_path, TOKENIZER_FILE_CAP, &merges, &merges_len, err) != 0 ||
                     nl_bpe_create(&bpe, vocab, vocab_len, merges, merges_len, vocab_path, err) != 0
                 ? -1
                 : nl_tokenizer_create_bpe(out, bpe, err);
    free(vocab);
    free(merges);
    return rc;
}

int nl_tokenizer_load(NlTokenizer **out, const char *path, const char *merges_path, NlError *err) {
    *out = NULL;
    if (!path) return nl_error(err, NL_ERR_ARG, "no tokenizer file given");
    return merges_path ? from_vocab_merges(out, path, merges_path, err) : from_tokenizer_json(out, path, err);
}
