// bpe.h — GPT-2's byte-level BPE (Radford et al. 2019; openai/gpt-2 encoder.py): text split by
// GPT-2's pre-tokenizer pattern, each piece's UTF-8 bytes merged by rank, ids from GPT-2's
// vocab.json and merges.txt (the files Hugging Face's GPT-2 snapshots hold).
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
// root: a Hugging Face tokenizer.json of a byte-level BPE (GPT-2's: model.type "BPE", its vocab
// and merges, as "A B" strings or [A, B] pairs; a ByteLevel pre-tokenizer without a prefix space; no
// normalizer; added_tokens each in the vocabulary under its id). Other kinds (WordPiece, Unigram,
// WordLevel, SentencePiece-style BPE) are refused by name.
int nl_bpe_from_json(NlBpe **out, const struct cJSON *root, const char *what, NlError *err);
void nl_bpe_free(NlBpe *bpe);
int nl_bpe_size(const NlBpe *bpe);
// The id of the special token "<|endoftext|>", or -1 when the vocabulary has none.
int nl_bpe_eot(const NlBpe *bpe);

// Encodes len bytes of text into ids (room for len ids is always enough: a token has at least one
// byte). With special, "<|endoftext|>" in the text is the special token (llama.cpp's parse_special);
// without, it is plain text, as in GPT-2's encoder and tiktoken's encode_ordinary. Every byte
// string encodes; the one failure is NL_ERR_NOMEM (room to merge the longest piece, 56 bytes a byte of it).
int nl_bpe_encode(const NlBpe *bpe, const char *text, size_t len, int special, int *ids, size_t *n_ids, NlError *err);
// The bytes of token id (0 <= id < size), *len of them (a token may hold any byte, NUL included).
const unsigned char *nl_bpe_bytes(const NlBpe *bpe, int id, size_t *len);

#pragma GCC visibility pop

#endif
