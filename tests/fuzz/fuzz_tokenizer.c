// fuzz_tokenizer.c — tokenizer.json parsing on arbitrary bytes, then a round trip of every entry.
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    NlTokenizer *tok = NULL;
    NlError err;
    if (nl_tokenizer_parse(&tok, (const char *)data, size, "fuzz", &err) != 0) return 0;
    for (int i = 0; i < nl_tokenizer_size(tok); i++) {
        const char *piece = nl_tokenizer_piece(tok, i);
        int id = -1;
        size_t n = 0, skipped = 0;
        assert(nl_tokenizer_encode(tok, piece, strlen(piece), 0, &id, &n, &skipped, &err) == 0);
        assert(n == 1 && id == i);
    }
    nl_tokenizer_free(tok);
    return 0;
}
