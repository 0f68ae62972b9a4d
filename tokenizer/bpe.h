// bpe.h — GPT-2's byte-level BPE (Radford et al. 2019; openai/gpt-2 encoder.py): text split by
// GPT-2's pre-tokenizer pattern, each piece's UTF-8 bytes merged by rank, ids from GPT-2's
// vocab.json and merges.txt (the files Hugging Face's GPT-2 snapshots hold); and the byte-level BPEs
// of Hugging Face's tokenizer.json (Qwen, Llama 3, OLMo 2, SmolLM2, GPT-NeoX): another pattern, the
// digits split out, the NFC normalizer, added tokens.
//
//   NlBpe *bpe;
//   if (nl_bpe_create(&bpe, vocab, vocab_len, merges, merges_len, "gpt2", &err) != 0) { ... }
//   nl_bpe_encode(bpe, "Hello world", 11, 0, ids, &n_ids, &err);   // ids: room for 11
//   const unsigned char *b = nl_bpe_bytes(bpe, ids[0], &len);       // "Hello"
//   nl_bpe_free(bpe);
//
// Text is bytes. Valid UTF-8 is split as GPT-2's Python encoder splits the decoded string; an
// invalid byte is a character of its own, of none of the pattern's classes (like punctuation), so
// that every byte string encodes and decodes back to itself.
#ifndef NL_BPE_H
#define NL_BPE_H

#include <stddef.h>

#include "normlab_internal.h"
#include "pretokenize.h"

// Internal: the model's tokenizer (tokenizer.h) holds one; hidden from a shared object.
#pragma GCC visibility push(hidden)

typedef struct NlBpe NlBpe;
struct cJSON;

// vocab_json: {"token": id, ...} with each token written in GPT-2's byte-to-unicode alphabet (or a
// special token such as "<|endoftext|>"); ids 0..n-1 each once. merges: "#version" line optional,
// then "A B" per line, rank = line order, each merge of two tokens into a third in the vocabulary,
// each pair once; every token of two bytes or more but "<|endoftext|>" made by some merge. `what`
// names the files in errors. Every entry is checked.
int nl_bpe_create(NlBpe **out, const char *vocab_json, size_t vocab_len, const char *merges, size_t merges_len,
                  const char *what, NlError *err);
// An added token: matched in the text before the pre-tokenizer (Hugging Face's AddedVocabulary), a
// special one only when asked; normalized: matched in the normalized text, else in the text as given.
typedef struct {
    const char *content;  // its text (UTF-8, at most NL_TOKEN_MAX_BYTES bytes), while building
    int id, special, normalized;
} NlBpeAdded;

// What surrounds the vocabulary and merges: the pattern, the Digits pre-tokenizer's individual split
// before it, the NFC normalizer, model.ignore_merges (a piece that is a token is that token), and
// the added tokens (the caller's, read while building).
typedef struct {
    NlPattern pattern;
    int split_digits, nfc, ignore_merges;
    const NlBpeAdded *added;
    int n_added;
} NlBpeKind;

// vocab: model.vocab; merges: model.merges ("A B" strings or [A, B] pairs); each added token in
// model.vocab under its id (the same bytes) or past it, ids 0..n-1 each held (bpe_hf.c reads the rest
// of a tokenizer.json into kind).
int nl_bpe_build(NlBpe **out, const struct cJSON *vocab, const struct cJSON *merges, const NlBpeKind *kind,
                 const char *what, NlError *err);
// root: a Hugging Face tokenizer.json of a byte-level BPE (bpe_hf.c: the parts it reads and those it
// refuses by name).
int nl_bpe_from_json(NlBpe **out, const struct cJSON *root, const char *what, NlError *err);
void nl_bpe_free(NlBpe *bpe);
// Tokens of no bytes after the last, up to n in all (a model's embedding rows past the vocabulary):
// never encoded, decoded as nothing.
void nl_bpe_pad(NlBpe *bpe, int n);
int nl_bpe_padding(const NlBpe *bpe);
int nl_bpe_size(const NlBpe *bpe);
// The id of the special token "<|endoftext|>", or -1 when the vocabulary has none.
int nl_bpe_eot(const NlBpe *bpe);

// Encodes len bytes of text into ids (room for len ids is always enough without a normalizer, a
// token having at least one byte; NL_NFC_GROWTH * len with NFC). With special, a special added token
// ("<|endoftext|>", "<|im_start|>") in the text is that token (llama.cpp's parse_special); without,
// it is plain text, as in GPT-2's encoder and tiktoken's encode_ordinary. An added token that is not
// special is always that token (Hugging Face's and llama.cpp's rule for user-defined tokens). Every
// byte string encodes; the one failure is NL_ERR_NOMEM (room to merge the longest piece, 56 bytes a
// byte of it).
int nl_bpe_encode(const NlBpe *bpe, const char *text, size_t len, int special, int *ids, size_t *n_ids, NlError *err);
// The bytes of token id (0 <= id < size), *len of them (a token may hold any byte, NUL included).
const unsigned char *nl_bpe_bytes(const NlBpe *bpe, int id, size_t *len);

#pragma GCC visibility pop

#endif
