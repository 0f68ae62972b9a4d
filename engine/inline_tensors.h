// inline_tensors.h — a one-file model's inline tensors read (inline_tensors.c), for the loader.
#ifndef NL_INLINE_TENSORS_H
#define NL_INLINE_TENSORS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "bind.h"
#include "normlab_internal.h"

#pragma GCC visibility push(hidden)

// Reads every entry of tensors ({"NAME": {"shape": [1 to 8 sizes], "data": [numbers]}}, each data
// its shape's count) into a new *refs of *n (their data in a new float32 *data): both owned by the
// caller, also on failure (free them). Errors name `what` and the tensor.
int nl_inline_tensors_read(const cJSON *tensors, NlTensorRef **refs, size_t *n, float **data, const char *what,
                           NlError *err);

#pragma GCC visibility pop

#endif
