// safetensors.c — parse and check a safetensors container (rules in safetensors.h).
#define _POSIX_C_SOURCE 200809L
#include "normlab_internal.h"
#include "safetensors.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
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

// The dtypes read, and the bytes of one value. A U8 tensor holds a quantized matrix's blocks (its
// type is set from __metadata__ once the header is read: resolve_blocks).
static const struct {
    const char *name;
    NlDType type;
    size_t size;
} READ_DTYPES[] = {
    {"F32", NL_DTYPE_F32, 4}, {"F16", NL_DTYPE_F16, 2}, {"BF16", NL_DTYPE_BF16, 2}, {"U8", NL_DTYPE_COUNT, 1}};
#define N_READ_DTYPES (sizeof READ_DTYPES / sizeof READ_DTYPES[0])

// The entry's dtype into t->type (NL_DTYPE_COUNT for U8) and the bytes of one value into *size.
static int parse_dtype(StTensor *t, size_t *size, const cJSON *e, const char *ctx, NlError *err) {
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    if (!cJSON_IsString(d)) {
        nl_error(err, NL_ERR_FORMAT, "%s: missing or non-string \"dtype\"", ctx);
        return -1;
    }
    for (size_t i = 0; i < N_READ_DTYPES; i++)
        if (strcmp(d->valuestring, READ_DTYPES[i].name) == 0) {
            t->type = READ_DTYPES[i].type;
            *size = READ_DTYPES[i].size;
            return 0;
        }
    for (int i = 0; KNOWN_DTYPES[i]; i++) {
        if (strcmp(KNOWN_DTYPES[i], d->valuestring) == 0) {
            nl_error(err, NL_ERR_FORMAT, "%s: dtype %s is not supported (F32, F16, BF16, or U8 blocks)", ctx,
                     d->valuestring);
            return -1;
        }
    }
    nl_error(err, NL_ERR_FORMAT, "%s: unknown dtype \"%.40s\"", ctx, d->valuestring);
    return -1;
}

// Reads shape into t and its byte size (product * size), overflow-checked.
static int parse_shape(StTensor *t, size_t size, const cJSON *e, const char *ctx, NlError *err) {
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
    size_t bytes = size;
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
    size_t size;
    if (parse_dtype(t, &size, e, ctx, err) != 0 || parse_shape(t, size, e, ctx, err) != 0 ||
        parse_offsets(span, e, data_len, ctx, err) != 0)
        return -1;
    if (span->end - span->begin != t->nbytes) {
        nl_error(err, NL_ERR_FORMAT, "%s: data_offsets span %zu bytes but shape x %zu bytes is %zu", ctx,
                 span->end - span->begin, size, t->nbytes);
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

static StTensor *find_tensor(StFile *f, const char *name) {
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
    return NULL;
}

// U8 tensor t of the blocks of type (Q8_0, Q4_0): (rows, bytes a row) becomes (rows, weights a row).
static int block_shape(StTensor *t, NlDType type, const char *what, NlError *err) {
    size_t bytes = nl_dtype_block_bytes(type);
    if (t->ndim != 2 || t->shape[1] % bytes != 0) {
        nl_error(err, NL_ERR_FORMAT,
                 "%s: tensor \"%.200s\" holds %s blocks but its %zu bytes are not rows of whole blocks of %zu "
                 "bytes (shape (rows, bytes a row) expected)",
                 what, t->name, nl_name(NL_NAMES_DTYPE, type), t->nbytes, bytes);
        return -1;
    }
    t->shape[1] = t->shape[1] / bytes * NL_QBLOCK;
    t->type = type;
    return 0;
}

// Gives every U8 tensor the type of blocks its "dtype.NAME" entry names (each must name a U8 tensor,
// every U8 tensor must have one), then takes those entries out of the metadata.
static int resolve_blocks(StFile *f, const char *what, NlError *err) {
    size_t prefix = strlen(ST_DTYPE_KEY), kept = 0;
    for (size_t i = 0; i < f->n_meta; i++) {
        const char *key = f->meta_keys[i], *value = f->meta_values[i];
        if (strncmp(key, ST_DTYPE_KEY, prefix) != 0) continue;
        StTensor *t = find_tensor(f, key + prefix);
        int type = -1;
        if (!t || t->type != NL_DTYPE_COUNT)
            return nl_error(err, NL_ERR_FORMAT, "%s: __metadata__ \"%.200s\" names no U8 tensor", what, key);
        if (nl_name_parse(NL_NAMES_DTYPE, value, &type) != 0 || nl_dtype_block(type) != NL_QBLOCK)
            return nl_error(err, NL_ERR_FORMAT,
                            "%s: __metadata__ \"%.200s\": unknown type of blocks \"%.40s\" (Q8_0 or Q4_0)", what, key,
                            value);
        if (block_shape(t, type, what, err) != 0) return -1;
    }
    for (size_t i = 0; i < f->n; i++)
        if (f->tensors[i].type == NL_DTYPE_COUNT)
            return nl_error(err, NL_ERR_FORMAT,
                            "%s: tensor \"%.200s\" is U8, and __metadata__ has no \"" ST_DTYPE_KEY
                            "%.200s\" to say which blocks it holds",
                            what, f->tensors[i].name, f->tensors[i].name);
    for (size_t i = 0; i < f->n_meta; i++) {
        if (strncmp(f->meta_keys[i], ST_DTYPE_KEY, prefix) == 0) {
            free(f->meta_keys[i]);
            free(f->meta_values[i]);
            continue;
        }
        f->meta_keys[kept] = f->meta_keys[i];
        f->meta_values[kept++] = f->meta_values[i];
    }
    f->n_meta = kept;
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
    if (check_layout(out, spans, data_len, what, err) != 0 || resolve_blocks(out, what, err) != 0) goto cleanup;
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

int nl_st_write_header(FILE *out, const StEntry *entries, size_t n, const char *const *meta_keys,
                       const char *const *meta_values, size_t n_meta, size_t *header_bytes, NlError *err) {
    cJSON *root = cJSON_CreateObject(), *meta = n_meta ? cJSON_AddObjectToObject(root, "__metadata__") : NULL;
    int ok = root && (meta || !n_meta);
    for (size_t i = 0; ok && i < n_meta; i++) ok = cJSON_AddStringToObject(meta, meta_keys[i], meta_values[i]) != NULL;
    size_t at = 0;
    for (size_t i = 0; ok && i < n; i++) {
        const StEntry *e = &entries[i];
        cJSON *t = cJSON_AddObjectToObject(root, e->name), *shape = t ? cJSON_AddArrayToObject(t, "shape") : NULL;
        cJSON *offsets = shape ? cJSON_AddArrayToObject(t, "data_offsets") : NULL;
        ok = offsets && cJSON_AddStringToObject(t, "dtype", e->dtype);
        for (int k = 0; ok && k < e->ndim; k++)
            ok = cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)e->shape[k]));
        ok = ok && cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)at)) &&
             cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)(at + e->nbytes)));
        at += e->nbytes;
    }
    char *json = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!json) return nl_error(err, NL_ERR_NOMEM, "out of memory for a safetensors header");
    // the data section starts on a cache line (64 bytes): memory-mapped weights read from an aligned
    // start decoded 1.3-1.9x faster than from 8 bytes past one (docs/families.md, "Speed")
    size_t len = strlen(json), padded = (8 + len + 63) / 64 * 64 - 8;
    unsigned char size[8];
    for (int i = 0; i < 8; i++) size[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    int wrote = fwrite(size, 1, 8, out) == 8 && fwrite(json, 1, len, out) == len;
    for (size_t i = len; wrote && i < padded; i++) wrote = fputc(' ', out) != EOF;
    free(json);
    if (!wrote) return nl_error(err, NL_ERR_IO, "cannot write the safetensors header: %s", strerror(errno));
    *header_bytes = 8 + padded;
    return 0;
}
