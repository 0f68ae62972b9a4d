// jsonout.h — the command line's one JSON printer. cJSON writes a string's bytes as they are, so a
// path or a metadata value that is not UTF-8 would make invalid JSON; everything the CLI prints as
// JSON goes through here.
#ifndef NL_CLI_JSONOUT_H
#define NL_CLI_JSONOUT_H

#include <cjson/cJSON.h>

// item printed as JSON (with formatted, cJSON's indented form), every byte that is not part of a
// valid UTF-8 sequence written as U+FFFD (the bytes EF BF BD): one U+FFFD per byte, whether it is a
// stray continuation byte, a cut sequence, an overlong form, a surrogate (ED A0..BF xx) or above
// U+10FFFF. Only strings can hold such bytes: cJSON writes everything else in ASCII. Returns a
// string to free with free(), or NULL when memory runs out.
char *nl_jsonx_print(const cJSON *item, int formatted);

// A JSON string of len bytes that may hold NUL (a BPE model's text: cJSON's strings end at one), as
// a raw item: quotes, backslashes and control characters escaped (NUL as \u0000), the bytes that are
// not UTF-8 as U+FFFD. NULL when memory runs out.
cJSON *nl_jsonx_bytes(const char *s, size_t len);

#endif
