// jsonx.h — strict reading of untrusted JSON with cJSON.
//
// cJSON is lenient where a model loader must not be: it keeps the first of duplicate keys, accepts
// "\u0000" inside strings (silently truncating them), and its valueint saturates. These helpers
// parse with an explicit length, reject trailing bytes, duplicate keys and NUL escapes, and read
// integers only after checking they are finite, integral and inside a field-specific range.
// Every error names `what` (a file name or "file: key") in err->msg.

#ifndef NL_JSONX_H
#define NL_JSONX_H

#include <cjson/cJSON.h>

#include "normlab.h"

// Internal: hidden from the symbols a shared object built from these files would export.
#pragma GCC visibility push(hidden)

// Parses exactly len bytes (trailing whitespace allowed). The caller frees with cJSON_Delete.
cJSON *nl_jsonx_parse(const char *buf, size_t len, const char *what, NlError *err);

// Fails if obj has a member not in the NULL-terminated list `allowed`.
int nl_jsonx_only_keys(const cJSON *obj, const char *const *allowed, const char *what, NlError *err);

// Case-sensitive member lookups. `required` 0 lets a missing key keep *out unchanged and return 0.
int nl_jsonx_int(const cJSON *obj, const char *key, int required, double min, double max, int64_t *out,
                 const char *what, NlError *err);
int nl_jsonx_number(const cJSON *obj, const char *key, int required, double min, double max, double *out,
                    const char *what, NlError *err);
int nl_jsonx_bool(const cJSON *obj, const char *key, int required, int *out, const char *what, NlError *err);
// *out is borrowed from obj. `choices` (NULL-terminated) restricts the value; *index gets its place.
int nl_jsonx_choice(const cJSON *obj, const char *key, const char *const *choices, int *index, const char *what,
                    NlError *err);

// Reads an integer value already in hand (an array element): same checks as jsonx_int.
int nl_jsonx_as_int(const cJSON *item, double min, double max, int64_t *out, const char *what, NlError *err);

#pragma GCC visibility pop

#endif
