// unicode.h — the Unicode classes GPT-2's pre-tokenizer pattern uses (internal): letters (\p{L}),
// numbers (\p{N}) from the generated tables (unicode_tables.c, tools/dev/unicode_tables.py), and
// whitespace (\s) as in GPT-2's Python regex and Hugging Face's tokenizers: Unicode's White_Space
// property, which has U+0085 and not U+FEFF.
#ifndef NL_UNICODE_H
#define NL_UNICODE_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

typedef struct {
    uint32_t first, last;
} NlUnicodeRange;

extern const NlUnicodeRange NL_UNICODE_LETTERS[];
extern const size_t NL_UNICODE_LETTERS_COUNT;
extern const NlUnicodeRange NL_UNICODE_NUMBERS[];
extern const size_t NL_UNICODE_NUMBERS_COUNT;

int nl_unicode_is_letter(uint32_t cp);
int nl_unicode_is_number(uint32_t cp);
int nl_unicode_is_space(uint32_t cp);

#pragma GCC visibility pop

#endif
