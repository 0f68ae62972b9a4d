// inline_tensors.c — a one-file model's "tensors" object ({"NAME": {"shape": [...], "data": [...]}})
// read into tensor references and one float32 buffer (the test fixtures' form; docs/format.md).
#include "inline_tensors.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "jsonx.h"

// Reads {"shape": [...], "data": [...]} into ref, copying the numbers to dst (room checked by caller).
static int read_inline_tensor(NlTensorRef *ref, const cJSON *e, float *dst, size_t room, size_t *used, const char *what,
                              NlError *err) {
    static const char *const KEYS[] = {"shape", "data", NULL};
    char ctx[300];
    snprintf(ctx, sizeof ctx, "%s: tensor \"%.200s\"", what, e->string);
    if (!cJSON_IsObject(e)) {
        nl_error(err, NL_ERR_FORMAT, "%s: must be {\"shape\", \"data\"}", ctx);
        return -1;
    }
    if (nl_jsonx_only_keys(e, KEYS, ctx, err) != 0) return -1;
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(e, "data");
    if (!cJSON_IsArray(shape) || !cJSON_IsArray(data)) {
        nl_error(err, NL_ERR_FORMAT, "%s: \"shape\" and \"data\" must be arrays", ctx);
        return -1;
    }
    int nd = cJSON_GetArraySize(shape), k = 0;
    if (nd < 1 || nd > ST_MAX_DIMS) {
        nl_error(err, NL_ERR_FORMAT, "%s: shape must have 1 to %d dimensions", ctx, ST_MAX_DIMS);
        return -1;
    }
    size_t count = 1;
    for (const cJSON *d = shape->child; d; d = d->next, k++) {
        int64_t v;
        if (nl_jsonx_as_int(d, 0, 1 << 30, &v, ctx, err) != 0) return -1;
        ref->shape[k] = (size_t)v;
        if (__builtin_mul_overflow(count, (size_t)v, &count)) {
            nl_error(err, NL_ERR_FORMAT, "%s: shape product overflows", ctx);
            return -1;
        }
    }
    size_t n = (size_t)cJSON_GetArraySize(data);
    if (n != count) {
        nl_error(err, NL_ERR_FORMAT, "%s: data has %zu numbers, shape needs %zu", ctx, n, count);
        return -1;
    }
    if (n > room) {
        nl_error(err, NL_ERR_FORMAT, "%s: out of room", ctx);
        return -1;
    }
    size_t i = 0;
    for (const cJSON *x = data->child; x; x = x->next, i++) {
        if (!cJSON_IsNumber(x)) {
            nl_error(err, NL_ERR_FORMAT, "%s: data[%zu] is not a number", ctx, i);
            return -1;
        }
        dst[i] = (float)x->valuedouble;
    }
    ref->name = e->string;
    ref->ndim = nd;
    ref->data = dst;
    *used = n;
    return 0;
}

// Total numbers in every tensor's "data" array, overflow-checked (0 entries are checked later).
static size_t inline_count(const cJSON *tensors) {
    size_t total = 0;
    for (const cJSON *e = tensors->child; e; e = e->next) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "data");
        if (cJSON_IsArray(d) && __builtin_add_overflow(total, (size_t)cJSON_GetArraySize(d), &total)) return SIZE_MAX;
    }
    return total;
}

int nl_inline_tensors_read(const cJSON *tensors, NlTensorRef **refs, size_t *n, float **data, const char *what,
                           NlError *err) {
    size_t room = inline_count(tensors), at = 0, i = 0;
    *n = (size_t)cJSON_GetArraySize(tensors);
    *refs = NULL;
    *data = NULL;
    if (room == SIZE_MAX || room > SIZE_MAX / sizeof(float))
        return nl_error(err, NL_ERR_FORMAT, "%s: too many numbers", what);
    *refs = calloc(*n + 1, sizeof **refs);
    *data = malloc((room + 1) * sizeof(float));
    if (!*refs || !*data) return nl_error(err, NL_ERR_FORMAT, "%s: out of memory", what);
    for (const cJSON *e = tensors->child; e; e = e->next, i++) {
        size_t used;
        if (read_inline_tensor(&(*refs)[i], e, *data + at, room - at, &used, what, err) != 0) return -1;
        at += used;
    }
    return 0;
}
