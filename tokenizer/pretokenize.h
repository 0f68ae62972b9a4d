// pretokenize.h — the pre-tokenizer of a byte-level BPE (internal): where the piece that starts
// at a position of a text ends, as GPT-2's pattern splits it.
#ifndef NL_PRETOKENIZE_H
#define NL_PRETOKENIZE_H

#include <stddef.h>

#pragma GCC visibility push(hidden)

// The end of the piece that starts at text[at] (at < len). Pieces: a contraction ('s 't 're 've 'm
// 'll 'd), an optional space and letters, an optional space and digits, an optional space and a run
// of others, whitespace not followed by a non-space, whitespace.
size_t nl_bpe_piece_end(const char *text, size_t len, size_t at);

#pragma GCC visibility pop

#endif
