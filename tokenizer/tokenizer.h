// tokenizer.h — character-level tokenizer over Unicode code points, UTF-8 in and out.
//
//   NlTokenizer *tok;
//   NlError err;
//   if (nl_tokenizer_create(&tok, pieces, n, &err) != 0) { puts(err.msg); ... }
//   size_t n_ids, n_skipped;
//   nl_tokenizer_encode(tok, "To be", 5, 0, ids, &n_ids, &n_skipped, &err);
//   fputs(nl_tokenizer_piece(tok, ids[0]), stdout);
//   nl_tokenizer_free(tok);
//
// Ownership: nl_tokenizer_create copies the pieces; the tokenizer owns them until
// nl_tokenizer_free. Pieces returned by nl_tokenizer_piece are borrowed for the tokenizer's
// lifetime. Functions return 0 on success and -1 with a one-line message in err->msg on failure.
#ifndef NL_TOKENIZER_H
#define NL_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "nl_error.h"

typedef struct NlTokenizer NlTokenizer;

// Builds a tokenizer from n pieces (token id = index). Each piece must be exactly one valid UTF-8
// encoded code point other than NUL, and no two pieces may be equal.
int nl_tokenizer_create(NlTokenizer **out, const char *const *pieces, int n, NlError *err);
void nl_tokenizer_free(NlTokenizer *tok);
int nl_tokenizer_size(const NlTokenizer *tok);

// Encodes len bytes of UTF-8 text into ids (room for at least len ids is always enough).
// A character not in the vocabulary is an error naming it and its 1-based character position,
// unless skip_unknown is set: then it is dropped and counted in *n_skipped.
int nl_tokenizer_encode(const NlTokenizer *tok, const char *text, size_t len, int skip_unknown, int *ids, size_t *n_ids,
                        size_t *n_skipped, NlError *err);

// The NUL-terminated UTF-8 bytes of token id (0 <= id < size).
const char *nl_tokenizer_piece(const NlTokenizer *tok, int id);

// Decodes one code point from s[0..len). Returns its byte length (1-4), or 0 if the bytes are not
// valid UTF-8 (truncated, overlong, surrogate, above U+10FFFF).
size_t nl_utf8_decode(const char *s, size_t len, uint32_t *cp);

#endif
