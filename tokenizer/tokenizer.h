// tokenizer.h — the tokenizer's internals (the public API is normlab.h's tokenizer section): a
// tokenizer made from a BPE (bpe.h) or a SentencePiece BPE (spm.h), and a token's bytes
// NUL-terminated.
#ifndef NL_TOKENIZER_H
#define NL_TOKENIZER_H

#include "normlab_internal.h"

#pragma GCC visibility push(hidden)

// The id of "<|endoftext|>", or -1 (a char tokenizer, or a BPE without it).
int nl_tokenizer_eot(const NlTokenizer *tok);

typedef struct NlBpe NlBpe;

// A BPE tokenizer padded to n tokens (nl_bpe_pad); another kind, or n below its size: an error.
int nl_tokenizer_pad(NlTokenizer *tok, int n, NlError *err);

// A byte-level BPE tokenizer; it owns bpe from here on, even on failure.
int nl_tokenizer_create_bpe(NlTokenizer **out, NlBpe *bpe, NlError *err);
// The bos a byte-level BPE tokenizer puts first with NL_ENCODE_BOS (one of its ids, -1: none), where
// a GGUF's tokenizer.ggml.add_bos_token asks for one (Llama 3's); it has none until set.
int nl_tokenizer_set_bos(NlTokenizer *tok, int bos, NlError *err);

typedef struct NlSpm NlSpm;

// A sentencepiece tokenizer; it owns spm from here on, even on failure.
int nl_tokenizer_create_spm(NlTokenizer **out, NlSpm *spm, NlError *err);

// The same bytes, NUL-terminated (a BPE token holding a NUL reads short: use nl_tokenizer_bytes).
const char *nl_tokenizer_piece(const NlTokenizer *tok, int id);

#pragma GCC visibility pop

#endif
