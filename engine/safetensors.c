// safetensors.c — parse and check a safetensors container (rules in safetensors.h).
#define _POSIX_C_SOURCE 200809L
#include "normlab_internal.h"
#include "safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"

#define FAIL(...)                                  \
    do {                                           \
        nl_error(err, NL_ERR_FORMAT, __VA_ARGS__); \
        goto cleanup;                              \
    } while (0)

static const char *const KNOWN_DTYPES[] = {"F64", "F16", "BF16", "I64",  "I32",     "I16",     "I8", "U8",
                                           "U16", "U32", "U64",  "BOOL", "F8_E4M3", "F8_E5M2", NULL};

typedef struct {
    size_t begin, end;
    size_t index;
} Span;

static int cmp_span(const void *a, const void *b) {
    const Span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

static int parse_dtype(const cJSON *e, const char *ctx, NlError *err) {
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    if (!cJSON_IsString(d)) {
        nl_error(err, NL_ERR_FORMAT, "%s: missing or non-string \"dtype\"", ctx);
        return -1;
    }
    if (strcmp(d->valuestring, "F32") == 0) return 0;
    for (int i = 0; KNOWN_DTYPES[i]; i++) {
        if (strcmp(KNOWN_DTYPES[i], d->valuestring) == 0) {
            nl_error(err, NL_ERR_FORMAT, "%s: dtype %s is not supported (only F32)", ctx, d->valuestring);
            return -1;
        }
    }
    nl_error(err, NL_ERR_FORMAT, "%s: unknown dtype \"%.40s\"", ctx, d->valuestring);
    return -1;
}

// Reads shape into t and its byte size (product * 4), overflow-checked.
static int parse_shape(StTensor *t, const cJSON *e, const char *ctx, NlError *err) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, "shape");
    if (!cJSON_IsArray(s)) {
        nl_error(err, NL_ERR_FORMAT, "%s: missing or non-array \"shape\"", ctx);
        return -1;
    }
    int nd = cJSON_GetArraySize(s);
    if (nd > ST_MAX_DIMS) {
        nl_error(err, NL_ERR_FORMAT, "%s: shape has %d dimensions (at most %d)", ctx, nd, ST_MAX_DIMS);
        return -1;
    }
    size_t bytes = sizeof(float);
    int i = 0;
    for (const cJSON *d = s->child; d; d = d->next, i++) {
        int64_t v;
        char dctx[320];
        snprintf(dctx, sizeof dctx, "%s: shape[%d]", ctx, i);
        if (nl_jsonx_as_int(d, 0, 9007199254740992.0, &v, dctx, err) != 0) return -1;
        t->shape[i] = (size_t)v;
        if (__builtin_mul_overflow(bytes, (size_t)v, &bytes)) {
            nl_error(err, NL_ERR_FORMAT, "%s: shape product overflows", ctx);
            return -1;
        }
    }
    t->ndim = nd;
    t->nbytes = bytes;
    return 0;
}

static int parse_offsets(Span *span, const cJSON *e, size_t data_len, const char *ctx, NlError *err) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsArray(o) || cJSON_GetArraySize(o) != 2) {
        nl_error(err, NL_ERR_FORMAT, "%s: \"data_offsets\" must be [begin, end]", ctx);
        return -1;
    }
    int64_t b, en;
    char dctx[320];
    snprintf(dctx, sizeof dctx, "%s: data_offsets", ctx);
    if (nl_jsonx_as_int(o->child, 0, 9007199254740992.0, &b, dctx, err) != 0) return -1;
    if (nl_jsonx_as_int(o->child->next, 0, 9007199254740992.0, &en, dctx, err) != 0) return -1;
    if (b > en) {
        nl_error(err, NL_ERR_FORMAT, "%s: data_offsets begin %lld > end %lld", ctx, (long long)b, (long long)en);
        return -1;
    }
    if ((uint64_t)en > data_len) {
        nl_error(err, NL_ERR_FORMAT, "%s: data_offsets end %lld is past the data section (%zu bytes)", ctx,
                 (long long)en, data_len);
        return -1;
    }
    span->begin = (size_t)b;
    span->end = (size_t)en;
    return 0;
}

static int parse_metadata(StFile *f, const cJSON *m, const char *what, NlError *err) {
    if (!cJSON_IsObject(m)) {
        nl_error(err, NL_ERR_FORMAT, "%s: __metadata__ must be an object", what);
        return -1;
    }
    size_t n = (size_t)cJSON_GetArraySize(m);
    f->meta_keys = calloc(n + 1, sizeof(char *));
    f->meta_values = calloc(n + 1, sizeof(char *));
    if (!f->meta_keys || !f->meta_values) {
        nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
        return -1;
    }
    for (const cJSON *c = m->child; c; c = c->next) {
        if (!cJSON_IsString(c)) {
            nl_error(err, NL_ERR_FORMAT, "%s: __metadata__ \"%.60s\" must be a string", what, c->string);
            return -1;
        }
        f->meta_keys[f->n_meta] = strdup(c->string);
        f->meta_values[f->n_meta] = strdup(c->valuestring);
        f->n_meta++;
        if (!f->meta_keys[f->n_meta - 1] || !f->meta_values[f->n_meta - 1]) {
            nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
            return -1;
        }
    }
    return 0;
}

static int parse_entry(StTensor *t, Span *span, const cJSON *e, size_t data_len, const char *what, NlError *err) {
    static const char *const FIELDS[] = {"dtype", "shape", "data_offsets", NULL};
    char ctx[300];
    snprintf(ctx, sizeof ctx, "%s: tensor \"%.200s\"", what, e->string);
    if (e->string[0] == '\0') {
        nl_error(err, NL_ERR_FORMAT, "%s: empty tensor name", what);
        return -1;
    }
    if (!cJSON_IsObject(e)) {
        nl_error(err, NL_ERR_FORMAT, "%s: entry must be an object", ctx);
        return -1;
    }
    if (nl_jsonx_only_keys(e, FIELDS, ctx, err) != 0) return -1;
    if (parse_dtype(e, ctx, err) != 0 || parse_shape(t, e, ctx, err) != 0 ||
        parse_offsets(span, e, data_len, ctx, err) != 0)
        return -1;
    if (span->end - span->begin != t->nbytes) {
        nl_error(err, NL_ERR_FORMAT, "%s: data_offsets span %zu bytes but shape x 4 bytes is %zu", ctx,
                 span->end - span->begin, t->nbytes);
        return -1;
    }
    t->name = strdup(e->string);
    if (!t->name) {
        nl_error(err, NL_ERR_NOMEM, "%s: out of memory", ctx);
        return -1;
    }
    return 0;
}

// Checks the spans cover [0, data_len) exactly once, in some order.
static int check_layout(const StFile *f, Span *spans, size_t data_len, const char *what, NlError *err) {
    qsort(spans, f->n, sizeof *spans, cmp_span);
    size_t at = 0;
    for (size_t i = 0; i < f->n; i++) {
        const char *name = f->tensors[spans[i].index].name;
        if (spans[i].begin != at) {
            nl_error(err, NL_ERR_FORMAT,
                     "%s: tensor \"%.200s\" starts at byte %zu of the data, expected %zu "
                     "(tensors must be contiguous and must not overlap)",
                     what, name, spans[i].begin, at);
            return -1;
        }
        at = spans[i].end;
    }
    if (at != data_len) {
        nl_error(err, NL_ERR_FORMAT, "%s: %zu trailing bytes after the last tensor", what, data_len - at);
        return -1;
    }
    return 0;
}

int nl_st_parse(StFile *out, const unsigned char *buf, size_t len, const char *what, NlError *err) {
    memset(out, 0, sizeof *out);
    cJSON *root = NULL;
    Span *spans = NULL;
    int rc = -1;
    if (len < 8) FAIL("%s: file is %zu bytes, too short for a safetensors header", what, len);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | buf[i];
    if (n < 2 || n > ST_MAX_HEADER || n > len - 8)
        FAIL("%s: header length %llu is invalid (file has %zu bytes after the length; limit %zu)", what,
             (unsigned long long)n, len - 8, ST_MAX_HEADER);
    if (buf[8] != '{') FAIL("%s: header does not start with '{'", what);
    root = nl_jsonx_parse((const char *)buf + 8, (size_t)n, what, err);
    if (!root) goto cleanup;
    if (!cJSON_IsObject(root)) FAIL("%s: header is not a JSON object", what);
    const unsigned char *data = buf + 8 + n;
    size_t data_len = len - 8 - (size_t)n;
    size_t count = (size_t)cJSON_GetArraySize(root);
    out->tensors = calloc(count + 1, sizeof *out->tensors);
    spans = calloc(count + 1, sizeof *spans);
    if (!out->tensors || !spans) FAIL("%s: out of memory", what);
    for (const cJSON *e = root->child; e; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) {
            if (parse_metadata(out, e, what, err) != 0) goto cleanup;
            continue;
        }
        StTensor *t = &out->tensors[out->n];
        Span *s = &spans[out->n];
        if (parse_entry(t, s, e, data_len, what, err) != 0) goto cleanup;
        t->data = data + s->begin;
        s->index = out->n++;
    }
    if (check_layout(out, spans, data_len, what, err) != 0) goto cleanup;
    rc = 0;
cleanup:
    cJSON_Delete(root);
    free(spans);
    if (rc != 0) nl_st_free(out);
    return rc;
}

void nl_st_free(StFile *f) {
    if (!f) return;
    for (size_t i = 0; f->tensors && i < f->n; i++) free(f->tensors[i].name);
    for (size_t i = 0; i < f->n_meta; i++) {
        free(f->meta_keys[i]);
        free(f->meta_values[i]);
    }
    free(f->tensors);
    free(f->meta_keys);
    free(f->meta_values);
    memset(f, 0, sizeof *f);
}
