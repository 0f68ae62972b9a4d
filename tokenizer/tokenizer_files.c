// tokenizer_files.c — a tokenizer from its files, for an embedder without a model (normlab.h's
// nl_tokenizer_load): a tokenizer.json (normlab's character vocabulary, or Hugging Face's byte-level
// BPE), or GPT-2's vocab.json and merges.txt, read as the model loader reads them (one reader of the
// pair for both). Each file is read whole (regular files only, at most NL_TOKENIZER_CAP) and every
// entry checked.
#define _POSIX_C_SOURCE 200809L  // AT_FDCWD
#include <fcntl.h>
#include <stdlib.h>

#include "bpe.h"
#include "fileio.h"
#include "model.h"
#include "normlab.h"
#include "normlab_internal.h"
#include "tokenizer.h"

static int from_tokenizer_json(NlTokenizer **out, const char *path, NlError *err) {
    char *buf = NULL;
    size_t len = 0;
    if (nl_read_file(path, NL_TOKENIZER_CAP, &buf, &len, err) != 0) return -1;
    int rc = nl_tokenizer_parse(out, buf, len, path, err);
    free(buf);
    return rc;
}

int nl_tokenizer_bpe_files(NlTokenizer **out, int dirfd, const char *const names[2], const char *const whats[2],
                           const char *what, NlError *err) {
    char *vocab = NULL, *merges = NULL;
    size_t vocab_len = 0, merges_len = 0;
    NlBpe *bpe = NULL;
    int rc = nl_file_read_all(dirfd, names[0], whats[0], NL_TOKENIZER_CAP, &vocab, &vocab_len, err) != 0 ||
                     nl_file_read_all(dirfd, names[1], whats[1], NL_TOKENIZER_CAP, &merges, &merges_len, err) != 0 ||
                     nl_bpe_create(&bpe, vocab, vocab_len, merges, merges_len, what, err) != 0
                 ? -1
                 : nl_tokenizer_create_bpe(out, bpe, err);
    free(vocab);
    free(merges);
    return rc;
}

int nl_tokenizer_load(NlTokenizer **out, const char *path, const char *merges_path, NlError *err) {
    *out = NULL;
    if (!path) return nl_error(err, NL_ERR_ARG, "no tokenizer file given");
    const char *const files[2] = {path, merges_path};
    return merges_path ? nl_tokenizer_bpe_files(out, AT_FDCWD, files, files, path, err)
                       : from_tokenizer_json(out, path, err);
}
