// pretokenize.h — the pre-tokenizers of a byte-level BPE (internal): where the piece that starts at
// a position of a text ends, for each pattern a Hugging Face tokenizer.json may name, and the
// individual digits' split of the Digits pre-tokenizer.
//
//   NlPattern p = nl_pattern_of_regex(regex);      // -1: a pattern normlab does not run
//   for (size_t at = 0; at < len; at = nl_piece_end(p, text, len, at)) ...
#ifndef NL_PRETOKENIZE_H
#define NL_PRETOKENIZE_H

#include <stddef.h>

#pragma GCC visibility push(hidden)

// The patterns, each written out as its alternatives, tried in order at a piece's start:
//   GPT2    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   CL100K  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//           \s*[\r\n]+|\s+(?!\S)|\s+          (tiktoken's cl100k_base: Llama 3, OLMo 2)
//   QWEN2   CL100K with \p{N} for \p{N}{1,3}: each digit a piece (Qwen 2 and 3)
typedef enum { NL_PATTERN_GPT2, NL_PATTERN_CL100K, NL_PATTERN_QWEN2 } NlPattern;

// The pattern whose regex (as a tokenizer.json's Split spells it) this is, or -1.
int nl_pattern_of_regex(const char *regex);
const char *nl_pattern_name(NlPattern pattern);
// The end of the piece that starts at text[at] (at < len). Invalid UTF-8 bytes are characters of
// their own, of no class the patterns name (like punctuation).
size_t nl_piece_end(NlPattern pattern, const char *text, size_t len, size_t at);
// The length of the number character (\p{N}) at text[at], or 0 when it is none: the Digits
// pre-tokenizer with individual_digits cuts each one out (SmolLM2).
size_t nl_number_at(const char *text, size_t len, size_t at);

#pragma GCC visibility pop

#endif
