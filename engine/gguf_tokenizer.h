// gguf_tokenizer.h — a GGUF file's tokenizer (internal): llama.cpp's SentencePiece (tokenizer.ggml.model
// "llama": pieces, scores, token types, byte fallback, add_space_prefix, add_bos_token, the special ids)
// or byte-level BPE ("gpt2": tokens, merges, control and user-defined tokens, the pre-tokenizer named
// by tokenizer.ggml.pre, never guessed). docs/gguf.md lists what is read and what is refused.
#ifndef NL_GGUF_TOKENIZER_H
#define NL_GGUF_TOKENIZER_H

#include "gguf.h"
#include "normlab.h"

#pragma GCC visibility push(hidden)

// *out: the tokenizer m's keys describe, or an error naming the key.
int nl_gguf_tokenizer(NlTokenizer **out, const GgufMeta *m);

#pragma GCC visibility pop

#endif
