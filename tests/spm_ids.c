// spm_ids.c — tests/spm_test.sh's driver: a text's ids by the engine's tokenizer (normlab.h), read
// from a tokenizer.json as the model loader reads it.
//   spm_ids TOKENIZER.json TEXT [--special] [--bos]
// Prints the ids as one JSON array, and fails (exit 1) unless the tokens' bytes join back into the
// text, byte for byte, less the dummy prefix's space at the start (sentencepiece's decoder drops it)
// and with a "▁" typed in the text read as a space (as sentencepiece decodes it); not with --special.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "normlab.h"

int main(int argc, char **argv) {
    int flags = 0, rc = 1;
    for (int i = 3; i < argc; i++)
        flags |= strcmp(argv[i], "--special") == 0 ? NL_ENCODE_SPECIAL
                 : strcmp(argv[i], "--bos") == 0   ? NL_ENCODE_BOS
                                                   : 1 << 30;
    if (argc < 3 || flags & 1 << 30) {
        fprintf(stderr, "usage: spm_ids TOKENIZER.json TEXT [--special] [--bos]\n");
        return 2;
    }
    NlTokenizer *tok = NULL;
    NlError err;
    char *text = NULL, *back = NULL;
    size_t len = 0, n = 0, skipped = 0, at = 0;
    int *ids = NULL;
    if (nl_tokenizer_load(&tok, argv[1], NULL, &err) != 0 ||
        nl_read_file(argv[2], (size_t)1 << 30, &text, &len, &err) != 0 || !(ids = malloc((len + 2) * sizeof *ids)) ||
        !(back = malloc(len + 2)) || nl_tokenizer_encode(tok, text, len, flags, ids, &n, &skipped, &err) != 0) {
        fprintf(stderr, "spm_ids: %s\n", ids && back ? err.msg : "out of memory");
        goto done;
    }
    NlTokenizerInfo info = nl_tokenizer_info(tok);
    int first = 1;  // the first token with bytes: the dummy prefix's space is its first
    printf("[");
    for (size_t i = 0; i < n; i++) {
        size_t k;
        const char *b = nl_tokenizer_bytes(tok, ids[i], &k);
        if (first && k && info.dummy_prefix && b[0] == ' ' && !(flags & NL_ENCODE_SPECIAL)) b++, k--, first = 0;
        else if (k) first = 0;
        if (at + k <= len) memcpy(back + at, b, k);
        at += k;
        printf("%s%d", i ? "," : "", ids[i]);
    }
    printf("]\n");
    size_t want = 0;  // the text, each "▁" a space
    for (size_t i = 0; i < len; i++) {
        int space = info.kind == NL_TOKENIZER_SPM && i + 3 <= len && memcmp(text + i, "\xE2\x96\x81", 3) == 0;
        text[want++] = space ? ' ' : text[i];
        i += space ? 2 : 0;
    }
    // (with --special, a control piece typed in the text has no bytes: nothing to join)
    rc = (flags & NL_ENCODE_SPECIAL) || (at == want && memcmp(back, text, want) == 0) ? 0 : 1;
    if (rc) fprintf(stderr, "spm_ids: the tokens' bytes do not join back into the text\n");
done:
    nl_tokenizer_free(tok);
    free(ids);
    free(back);
    free(text);
    return rc;
}
