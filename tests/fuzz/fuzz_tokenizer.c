// fuzz_tokenizer.c — tokenizer.json parsing on arbitrary bytes (normlab's char and sentencepiece
// kinds, Hugging Face's byte-level and SentencePiece-style BPE), then a round trip of every entry: a
// character is its own id; a BPE token's bytes encode to tokens whose bytes join back into them (a
// sentencepiece piece's with the dummy prefix's space first).
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
    NlTokenizerInfo info = nl_tokenizer_info(tok);
    int bpe = info.kind != NL_TOKENIZER_CHAR;
    for (int i = 0; i < nl_tokenizer_size(tok); i++) {
        size_t len, n = 0, skipped = 0, at = 0;
        const char *piece = nl_tokenizer_bytes(tok, i, &len);
        int *ids = malloc(NL_ENCODE_ROOM(len) * sizeof *ids);
        assert(ids && nl_tokenizer_encode(tok, piece, len, NL_ENCODE_BOS, ids, &n, &skipped, &err) == 0);
        assert(n <= len + 2);
        int prefix = info.dummy_prefix && len;  // (the first token's first byte: the prefix's space)
        assert(bpe || (n == 1 && ids[0] == i));
        for (size_t k = 0; k < n; k++) {
            size_t part;
            const char *b = nl_tokenizer_bytes(tok, ids[k], &part);
            if (prefix && part) {
                assert(b[0] == ' ');
                b++, part--, prefix = 0;
            }
            assert(at + part <= len && memcmp(piece + at, b, part) == 0);
            at += part;
        }
        assert(at == len);
        free(ids);
    }
    nl_tokenizer_free(tok);
    return 0;
}
