// fuzz_prompt.c — the prompt encoder on arbitrary bytes, with and without --skip-unknown: an error
// or ids that decode back to the input's known characters.
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const VOCAB[] = {"\n", " ", "!", "'", ",", ".", "?", "A", "B", "a", "b", "c", "é", "€", "你", "😀"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    NlTokenizer *tok = NULL;
    NlError err;
    if (nl_tokenizer_create(&tok, VOCAB, 16, &err) != 0) abort();
    int *ids = malloc(NL_ENCODE_ROOM(size) * sizeof *ids);
    char *back = malloc(4 * size + 1);
    for (int skip = 0; skip < 2; skip++) {
        size_t n = 0, skipped = 0, at = 0;
        if (nl_tokenizer_encode(tok, (const char *)data, size, skip, ids, &n, &skipped, &err) != 0) continue;
        assert(n <= size);
        for (size_t i = 0; i < n; i++) {
            const char *p = nl_tokenizer_piece(tok, ids[i]);
            memcpy(back + at, p, strlen(p));
            at += strlen(p);
        }
        if (!skip) assert(at == size && memcmp(back, data, size) == 0);  // nothing unknown: exact round trip
    }
    free(ids);
    free(back);
    nl_tokenizer_free(tok);
    return 0;
}
