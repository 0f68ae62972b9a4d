// tokenizer.h — the model's tokenizer, of one of two kinds: character-level over Unicode code
// points (the shipped character models), or GPT-2's byte-level BPE (bpe.h). Text in and out is bytes,
// UTF-8 for the character kind.
//
//   NlTokenizer *tok;
//   NlError err;
//   if (nl_tokenizer_create(&tok, pieces, n, &err) != 0) { puts(err.msg); ... }
//   size_t n_ids, n_skipped;
//   nl_tokenizer_encode(tok, "To be", 5, 0, ids, &n_ids, &n_skipped, &err);
//   size_t len;
//   fwrite(nl_tokenizer_bytes(tok, ids[0], &len), 1, len, stdout);
//   nl_tokenizer_free(tok);
//
// Ownership: nl_tokenizer_create copies the pieces, nl_tokenizer_create_bpe takes the BPE; the
// tokenizer owns them until nl_tokenizer_free. Pieces are borrowed for the tokenizer's lifetime.
// Functions return 0 on success and -1 with a one-line message in err->msg on failure.
#ifndef NL_TOKENIZER_H
#define NL_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "nl_error.h"

typedef struct NlTokenizer NlTokenizer;
typedef struct NlBpe NlBpe;

typedef enum { NL_TOKENIZER_CHAR, NL_TOKENIZER_BPE } NlTokenizerKind;

// The most bytes a token holds: a character's 4; a BPE vocabulary's longest (GPT-2's: 128) is
// refused above this.
#define NL_TOKEN_MAX_BYTES 256

// nl_tokenizer_encode's flags.
enum {
    NL_ENCODE_SKIP_UNKNOWN = 1,  // char: drop characters outside the vocabulary (counted) instead of failing
    NL_ENCODE_SPECIAL = 2,  // bpe: "<|endoftext|>" in the text is the special token (else plain text)
};

// Builds a tokenizer from n pieces (token id = index). Each piece must be exactly one valid UTF-8
// encoded code point other than NUL, and no two pieces may be equal.
int nl_tokenizer_create(NlTokenizer **out, const char *const *pieces, int n, NlError *err);
// A byte-level BPE tokenizer; it owns bpe from here on, even on failure.
int nl_tokenizer_create_bpe(NlTokenizer **out, NlBpe *bpe, NlError *err);
void nl_tokenizer_free(NlTokenizer *tok);
int nl_tokenizer_size(const NlTokenizer *tok);
NlTokenizerKind nl_tokenizer_kind(const NlTokenizer *tok);
// "char" or "bpe".
const char *nl_tokenizer_kind_name(const NlTokenizer *tok);
// The id of "<|endoftext|>", or -1 (a char tokenizer, or a BPE without it).
int nl_tokenizer_eot(const NlTokenizer *tok);

// Encodes len bytes of text into ids (room for at least len ids is always enough). char: the text
// must be UTF-8, and a character not in the vocabulary is an error naming it and its 1-based
// character position, unless NL_ENCODE_SKIP_UNKNOWN is set: then it is dropped and counted in
// *n_skipped. bpe: every byte string encodes (*n_skipped is 0).
int nl_tokenizer_encode(const NlTokenizer *tok, const char *text, size_t len, int flags, int *ids, size_t *n_ids,
                        size_t *n_skipped, NlError *err);

// The bytes of token id (0 <= id < size), *len of them: a BPE token may end inside a UTF-8
// character, or hold any byte, NUL included. They are followed by a NUL.
const char *nl_tokenizer_bytes(const NlTokenizer *tok, int id, size_t *len);
// The bytes of ids[0..n) together: the text they decode to, in bytes.
size_t nl_tokenizer_text_bytes(const NlTokenizer *tok, const int *ids, size_t n);
// The same bytes, NUL-terminated (a BPE token holding a NUL reads short: use nl_tokenizer_bytes).
const char *nl_tokenizer_piece(const NlTokenizer *tok, int id);

// Decodes one code point from s[0..len). Returns its byte length (1-4), or 0 if the bytes are not
// valid UTF-8 (truncated, overlong, surrogate, above U+10FFFF).
size_t nl_utf8_decode(const char *s, size_t len, uint32_t *cp);

// How many of s[0..len)'s last bytes (0 to 3) begin a UTF-8 character that more bytes could still
// complete: a stream of tokens holds them back until the character is whole.
size_t nl_utf8_pending(const char *s, size_t len);

// s[0..len) with each byte that is not part of valid UTF-8 as U+FFFD, into out (room for 3 len + 1
// bytes), NUL-terminated; returns the length written.
size_t nl_utf8_repair(const char *s, size_t len, char *out);

#endif
