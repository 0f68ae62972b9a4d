// unicode.h — the Unicode classes the pre-tokenizers' patterns use (internal): letters (\p{L}),
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

// The generated ranges (*n of them): functions, not variables, so that no global symbol but the
// nl_ functions is defined (a sanitizer build would export its own for a global table).
const NlUnicodeRange *nl_unicode_letters(size_t *n);
const NlUnicodeRange *nl_unicode_numbers(size_t *n);

// NFC's data (nfc.c): code points [first, last] of one nonzero canonical combining class; a code
// point's full canonical decomposition (at most 4, the rest 0); a primary composite of two.
typedef struct {
    uint32_t first, last;
    uint8_t ccc;
} NlCombiningRange;
typedef struct {
    uint32_t cp, to[4];
} NlDecomposition;
typedef struct {
    uint32_t first, second, composite;
} NlComposite;
const NlCombiningRange *nl_unicode_combining(size_t *n);
const NlDecomposition *nl_unicode_decompositions(size_t *n);
const NlComposite *nl_unicode_composites(size_t *n);

int nl_unicode_is_letter(uint32_t cp);
int nl_unicode_is_number(uint32_t cp);
int nl_unicode_is_space(uint32_t cp);

#pragma GCC visibility pop

#endif
