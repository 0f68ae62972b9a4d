// fuzz_tokenizer.c — tokenizer.json parsing on arbitrary bytes (normlab's char kind and Hugging
// Face's BPE), then a round trip of every entry: a character is its own id; a BPE token's bytes
// encode to tokens whose bytes join back into them.
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    NlTokenizer *tok = NULL;
    NlError err;
    if (nl_tokenizer_parse(&tok, (const char *)data, size, "fuzz", &err) != 0) return 0;
    int bpe = nl_tokenizer_info(tok).kind == NL_TOKENIZER_BPE;
    for (int i = 0; i < nl_tokenizer_size(tok); i++) {
        size_t len, n = 0, skipped = 0, at = 0;
        const char *piece = nl_tokenizer_bytes(tok, i, &len);
        int *ids = malloc((len + 1) * sizeof *ids);
        assert(ids && nl_tokenizer_encode(tok, piece, len, 0, ids, &n, &skipped, &err) == 0);
        assert(bpe || (n == 1 && ids[0] == i));
        for (size_t k = 0; k < n; k++) {
            size_t part;
            const char *b = nl_tokenizer_bytes(tok, ids[k], &part);
            assert(at + part <= len && memcmp(piece + at, b, part) == 0);
            at += part;
        }
        assert(at == len);
        free(ids);
    }
    nl_tokenizer_free(tok);
    return 0;
}
