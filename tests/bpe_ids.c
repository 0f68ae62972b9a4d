// bpe_ids.c — tests/bpe_test.sh's driver: a byte-level BPE's ids of a file by the C tokenizer (bpe.h).
//   bpe_ids VOCAB.json MERGES.txt TEXT [--special]
//   bpe_ids TOKENIZER.json TEXT [--special]          (a Hugging Face tokenizer.json)
// Prints the ids as one JSON array, and fails (exit 1) unless the tokens' bytes join back into the
// text, byte for byte (or into its NFC form, for a tokenizer that normalizes).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bpe.h"
#include "nfc.h"
#include "normlab_internal.h"

static char *slurp(const char *path, size_t *len) {
    NlError err;
    char *buf = NULL;
    if (nl_read_file(path, (size_t)1 << 30, &buf, len, &err) != 0) {
        fprintf(stderr, "bpe_ids: %s\n", err.msg);
        exit(1);
    }
    return buf;
}

static int create(NlBpe **bpe, char **argv, int files, NlError *err) {
    size_t vlen, mlen;
    char *vocab = slurp(argv[1], &vlen), *merges = files == 2 ? slurp(argv[2], &mlen) : NULL;
    cJSON *root = files == 1 ? cJSON_ParseWithLength(vocab, vlen) : NULL;
    int rc = files == 2 ? nl_bpe_create(bpe, vocab, vlen, merges, mlen, "gpt2", err)
             : root     ? nl_bpe_from_json(bpe, root, argv[1], err)
                        : nl_error(err, NL_ERR_FORMAT, "%s: not JSON", argv[1]);
    cJSON_Delete(root);
    free(vocab);
    free(merges);
    return rc;
}

int main(int argc, char **argv) {
    int special = argc > 1 && strcmp(argv[argc - 1], "--special") == 0, files = argc - special - 2;
    if (files < 1 || files > 2) {
        fprintf(stderr,
                "usage: bpe_ids VOCAB.json MERGES.txt TEXT [--special] | bpe_ids TOKENIZER.json TEXT [--special]\n");
        return 2;
    }
    size_t tlen, n = 0;
    char *text = slurp(argv[files + 1], &tlen);
    NlBpe *bpe = NULL;
    NlError err;
    int *ids = malloc((NL_NFC_GROWTH * tlen + 1) * sizeof *ids), rc = 1;
    char *back = malloc(NL_NFC_GROWTH * tlen + 1), *nfc = malloc(NL_NFC_GROWTH * tlen + 1);
    if (!ids || !back || !nfc || create(&bpe, argv, files, &err) != 0 ||
        nl_bpe_encode(bpe, text, tlen, special, ids, &n, &err) != 0) {
        fprintf(stderr, "bpe_ids: %s\n", ids && back && nfc ? err.msg : "out of memory");
        goto done;
    }
    size_t at = 0;
    printf("[");
    for (size_t i = 0; i < n; i++) {
        size_t k;
        const unsigned char *b = nl_bpe_bytes(bpe, ids[i], &k);
        if (at + k <= NL_NFC_GROWTH * tlen) memcpy(back + at, b, k);
        at += k;
        printf("%s%d", i ? "," : "", ids[i]);
    }
    printf("]\n");
    size_t nfc_len = 0;
    rc = at == tlen && memcmp(back, text, tlen) == 0 ? 0 : 1;
    if (rc && nl_nfc(text, tlen, nfc, &nfc_len, &err) == 0 && at == nfc_len && memcmp(back, nfc, at) == 0) rc = 0;
    if (rc) fprintf(stderr, "bpe_ids: the tokens' bytes do not join back into the text\n");
done:
    nl_bpe_free(bpe);
    free(ids);
    free(back);
    free(nfc);
    free(text);
    return rc;
}
