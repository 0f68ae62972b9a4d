// nfc.h — Unicode's Normalization Form C (UAX #15), the normalizer a Hugging Face tokenizer.json may
// name ("NFC": Qwen 2 and 3, GPT-NeoX) (internal): canonical decomposition, canonical ordering,
// canonical composition, from the generated tables (unicode_tables.c) and Hangul's arithmetic.
#ifndef NL_NFC_H
#define NL_NFC_H

#include <stddef.h>

#include "normlab_internal.h"

#pragma GCC visibility push(hidden)

// NFC can lengthen a text up to threefold (in UTF-8 bytes): room for that many is always enough.
#define NL_NFC_GROWTH 3

// text[0..len) in NFC into out (room for NL_NFC_GROWTH * len bytes), *out_len of them. A byte that
// is not UTF-8 is kept as it is, a character that blocks composition. The one failure is
// NL_ERR_NOMEM. ASCII (nothing to compose) is copied at once.
int nl_nfc(const char *text, size_t len, char *out, size_t *out_len, NlError *err);

#pragma GCC visibility pop

#endif
