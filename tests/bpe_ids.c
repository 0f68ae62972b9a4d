// bpe_ids.c — tests/bpe_test.sh's driver: GPT-2's BPE ids of a file by the C tokenizer (bpe.h).
//   bpe_ids VOCAB.json MERGES.txt TEXT [--special]
// Prints the ids as one JSON array, and fails (exit 1) unless the tokens' bytes join back into the
// text, byte for byte.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpe.h"
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

int main(int argc, char **argv) {
    if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "--special") != 0)) {
        fprintf(stderr, "usage: bpe_ids VOCAB.json MERGES.txt TEXT [--special]\n");
        return 2;
    }
    size_t vlen, mlen, tlen, n = 0;
    char *vocab = slurp(argv[1], &vlen), *merges = slurp(argv[2], &mlen), *text = slurp(argv[3], &tlen);
    NlBpe *bpe = NULL;
    NlError err;
    int *ids = malloc((tlen + 1) * sizeof *ids), rc = 1;
    char *back = malloc(tlen + 1);
    if (!ids || !back || nl_bpe_create(&bpe, vocab, vlen, merges, mlen, "gpt2", &err) != 0 ||
        nl_bpe_encode(bpe, text, tlen, argc == 5, ids, &n, &err) != 0) {
        fprintf(stderr, "bpe_ids: %s\n", ids && back ? err.msg : "out of memory");
        goto done;
    }
    size_t at = 0;
    printf("[");
    for (size_t i = 0; i < n; i++) {
        size_t k;
        const unsigned char *b = nl_bpe_bytes(bpe, ids[i], &k);
        if (at + k <= tlen) memcpy(back + at, b, k);
        at += k;
        printf("%s%d", i ? "," : "", ids[i]);
    }
    printf("]\n");
    rc = at == tlen && memcmp(back, text, tlen) == 0 ? 0 : 1;
    if (rc) fprintf(stderr, "bpe_ids: the tokens' bytes do not join back into the text\n");
done:
    nl_bpe_free(bpe);
    free(ids);
    free(back);
    free(vocab);
    free(merges);
    free(text);
    return rc;
}
