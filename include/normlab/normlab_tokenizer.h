// normlab_tokenizer.h — the model's tokenizer, the public face of tokenizer/ (normlab.h includes it;
// an embedder that only tokenizes may include it alone).
#ifndef NORMLAB_TOKENIZER_H
#define NORMLAB_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "normlab_error.h"

// ---- tokenizer (tokenizer/)
//
// The model's tokenizer, of one of three kinds: character-level over Unicode code points (the shipped
// character models), GPT-2's byte-level BPE, or SentencePiece's BPE with byte fallback (Llama 2's,
// llama2.c's). Text in and out is bytes, UTF-8 for the character kind.
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
// Ownership: nl_tokenizer_create copies the pieces; the tokenizer owns its copy until
// nl_tokenizer_free. A model's tokenizer (nl_model_tokenizer) is borrowed for the model's lifetime.

typedef struct NlTokenizer NlTokenizer;

typedef enum { NL_TOKENIZER_CHAR, NL_TOKENIZER_BPE, NL_TOKENIZER_SPM } NlTokenizerKind;

// What a tokenizer is, beyond its pieces (nl_tokenizer_info).
typedef struct {
    NlTokenizerKind kind;
    // sentencepiece: its begin and end of sequence pieces (<s>, </s>), -1 for none; a byte-level BPE's bos
    // where its GGUF adds one (Llama 3's <|begin_of_text|>), its eos -1 (nl_tokenizer_eot's is GPT-2's);
    // a character model's -1
    int bos, eos;
    int add_bos;  // 1: a sequence starts with bos, as llama.cpp's add_bos (NL_ENCODE_BOS puts it there)
    // 1: encoding puts "▁" (a space) before a text, SentencePiece's dummy prefix: a decoded text's
    // first token then has one space more than the text (sentencepiece's decoder drops it)
    int dummy_prefix;
    // bpe: ids past the tokenizer's own, up to a model's vocab_size (Qwen's embedding has rows past
    // its vocabulary): tokens of no bytes, never encoded; 0 for the others
    int padding;
} NlTokenizerInfo;

// The most bytes a token holds: a character's 4; a BPE vocabulary's longest (GPT-2's: 128) is
// refused above this.
#define NL_TOKEN_MAX_BYTES 256

// nl_tokenizer_encode's flags.
enum {
    NL_ENCODE_SKIP_UNKNOWN = 1,  // char: drop characters outside the vocabulary (counted) instead of failing
    NL_ENCODE_SPECIAL = 2,  // bpe: a special added token ("<|endoftext|>", "<|im_start|>") is that token
    // in the text (else plain text; an added token that is not special always is);
    // sentencepiece: "<s>", "</s>", "<unk>" are (else plain text, as in sentencepiece)
    NL_ENCODE_BOS = 4,  // a tokenizer with add_bos (sentencepiece, a GGUF's BPE): bos first (the others have none)
    // sentencepiece: the text continues a sequence already encoded (generate -i's later lines): no
    // dummy prefix before it, as llama.cpp adds that space only at the start or after a control piece
    NL_ENCODE_CONTINUE = 8,
};

// Builds a tokenizer from n pieces (token id = index). Each piece must be exactly one valid UTF-8
// encoded code point other than NUL, and no two pieces may be equal.
int nl_tokenizer_create(NlTokenizer **out, const char *const *pieces, int n, NlError *err);
// A tokenizer from its files: path a tokenizer.json (merges_path NULL) — normlab's character
// vocabulary ({"type": "char", "vocab": [...]}), normlab's sentencepiece form ({"type":
// "sentencepiece", ...}, docs/format.md), or a Hugging Face tokenizer.json of a byte-level BPE
// (GPT-2's) or a SentencePiece-style BPE (Llama 2's) — or path GPT-2's vocab.json and merges_path
// its merges.txt. Every entry is checked; errors name the file.
int nl_tokenizer_load(NlTokenizer **out, const char *path, const char *merges_path, NlError *err);
void nl_tokenizer_free(NlTokenizer *tok);
int nl_tokenizer_size(const NlTokenizer *tok);
// Its kind, special pieces and how it encodes (one function for all: normlab.h keeps to 35).
NlTokenizerInfo nl_tokenizer_info(const NlTokenizer *tok);

// Room for the ids of len bytes of text, always enough: NFC (a BPE's normalizer) may lengthen a text
// threefold; sentencepiece adds a dummy prefix and bos.
#define NL_ENCODE_ROOM(len) (3 * (size_t)(len) + 2)

// Encodes len bytes of text into ids (room for NL_ENCODE_ROOM(len) ids). char: the text
// must be UTF-8, and a character not in the vocabulary is an error naming it and its 1-based
// character position, unless NL_ENCODE_SKIP_UNKNOWN is set: then it is dropped and counted in
// *n_skipped. bpe: every byte string encodes (*n_skipped is 0). sentencepiece: every byte string
// encodes, a character no piece holds as its UTF-8 bytes' pieces (<0xXX>).
int nl_tokenizer_encode(const NlTokenizer *tok, const char *text, size_t len, int flags, int *ids, size_t *n_ids,
                        size_t *n_skipped, NlError *err);

// The bytes of token id (0 <= id < size), *len of them: a BPE token may end inside a UTF-8
// character, or hold any byte, NUL included; its bos (a GGUF's, NlTokenizerInfo.bos) has none, as
// sentencepiece's. They are followed by a NUL. sentencepiece: "▁" is a
// space, <0xXX> its one byte, a control piece (<s>, </s>) no bytes, <unk> " ⁇ " (sentencepiece's);
// the leading space of a text's first token is the dummy prefix's (NlTokenizerInfo.dummy_prefix).
const char *nl_tokenizer_bytes(const NlTokenizer *tok, int id, size_t *len);

// Decodes one code point from s[0..len). Returns its byte length (1-4), or 0 if the bytes are not
// valid UTF-8 (truncated, overlong, surrogate, above U+10FFFF).
size_t nl_utf8_decode(const char *s, size_t len, uint32_t *cp);

#endif
