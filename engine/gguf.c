// gguf.c — parse and check a GGUF container (rules in gguf.h). Every read goes through Cursor,
// which refuses a read past the end; every count is held against the bytes left before anything
// of that count is allocated.
#define _POSIX_C_SOURCE 200809L
#include "gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "normlab_internal.h"

#define MAX_KEY 255  // bytes of a key
#define MAX_NAME 63  // bytes of a tensor's name (ggml's GGML_MAX_NAME less its NUL)
#define MAX_ALIGNMENT ((size_t)1 << 20)

typedef struct {
    const unsigned char *buf;
    size_t len, at;
    const char *what;
    NlError *err;
} Cursor;

// ggml's tensor types by id: name, weights a block holds and its bytes (0: a type normlab does not
// read, whose size it need not know: it is refused by name).
static const struct {
    const char *name;
    size_t block, bytes;
} TYPES[] = {
    [0] = {"F32", 1, 4},         [1] = {"F16", 1, 2},       [2] = {"Q4_0", 32, 18},      [3] = {"Q4_1", 32, 20},
    [6] = {"Q5_0", 32, 22},      [7] = {"Q5_1", 32, 24},    [8] = {"Q8_0", 32, 34},      [9] = {"Q8_1", 0, 0},
    [10] = {"Q2_K", 256, 84},    [11] = {"Q3_K", 256, 110}, [12] = {"Q4_K", 256, 144},   [13] = {"Q5_K", 256, 176},
    [14] = {"Q6_K", 256, 210},   [15] = {"Q8_K", 0, 0},     [16] = {"IQ2_XXS", 0, 0},    [17] = {"IQ2_XS", 0, 0},
    [18] = {"IQ3_XXS", 0, 0},    [19] = {"IQ1_S", 0, 0},    [20] = {"IQ4_NL", 0, 0},     [21] = {"IQ3_S", 0, 0},
    [22] = {"IQ2_S", 0, 0},      [23] = {"IQ4_XS", 0, 0},   [24] = {"I8", 0, 0},         [25] = {"I16", 0, 0},
    [26] = {"I32", 0, 0},        [27] = {"I64", 0, 0},      [28] = {"F64", 0, 0},        [29] = {"IQ1_M", 0, 0},
    [30] = {"BF16", 1, 2},       [31] = {"Q4_0_4_4", 0, 0}, [32] = {"Q4_0_4_8", 0, 0},   [33] = {"Q4_0_8_8", 0, 0},
    [34] = {"TQ1_0", 0, 0},      [35] = {"TQ2_0", 0, 0},    [36] = {"IQ4_NL_4_4", 0, 0}, [37] = {"IQ4_NL_4_8", 0, 0},
    [38] = {"IQ4_NL_8_8", 0, 0}, [39] = {"MXFP4", 0, 0},
};
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])

// The bytes of one value of a scalar type (0: a string or an array).
static const size_t SCALAR_BYTES[GGUF_N_TYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

const char *nl_gguf_type_name(unsigned type) { return type < N_TYPES ? TYPES[type].name : NULL; }

static int fail(Cursor *c, const char *fmt, const char *a, const char *b) {
    nl_error(c->err, NL_ERR_FORMAT, fmt, c->what, a, b);
    return -1;
}

static int take(Cursor *c, size_t n, const unsigned char **p, const char *thing) {
    *p = c->buf + c->at;
    if (n > c->len - c->at) return fail(c, "%s: %s%s runs past the end of the file", thing, "");
    *p = c->buf + c->at;
    c->at += n;
    return 0;
}

static int read_u32(Cursor *c, uint32_t *v, const char *thing) {
    const unsigned char *p;
    if (take(c, 4, &p, thing) != 0) return -1;
    *v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return 0;
}

static int read_u64(Cursor *c, uint64_t *v, const char *thing) {
    uint32_t lo, hi;
    if (read_u32(c, &lo, thing) != 0 || read_u32(c, &hi, thing) != 0) return -1;
    *v = (uint64_t)hi << 32 | lo;
    return 0;
}

// A string: its length (within the file) and bytes, borrowed.
static int read_string(Cursor *c, GgufString *s, const char *thing) {
    uint64_t n;
    const unsigned char *p;
    if (read_u64(c, &n, thing) != 0) return -1;
    if (n > c->len - c->at) return fail(c, "%s: %s%s's length runs past the end of the file", thing, "");
    if (take(c, (size_t)n, &p, thing) != 0) return -1;
    *s = (GgufString){(const char *)p, (size_t)n};
    return 0;
}

// An owned NUL-terminated copy of a key or a name of at most max bytes, with no NUL inside.
static char *owned_name(Cursor *c, const GgufString *s, size_t max, const char *thing) {
    if (s->len == 0 || s->len > max || memchr(s->s, 0, s->len)) {
        fail(c, "%s: %s%s is empty, over its length limit or holds a NUL byte", thing, "");
        return NULL;
    }
    char *out = malloc(s->len + 1);
    if (!out) {
        nl_error(c->err, NL_ERR_NOMEM, "%s: out of memory", c->what);
        return NULL;
    }
    memcpy(out, s->s, s->len);
    out[s->len] = 0;
    return out;
}

// A key's value: a scalar, a string, or an array of scalars or of strings (an array of arrays is refused).
static int read_value(Cursor *c, GgufKv *kv) {
    uint32_t type, elem = 0;
    uint64_t count = 1;
    if (read_u32(c, &type, kv->key) != 0) return -1;
    if (type >= GGUF_N_TYPES) return fail(c, "%s: key %s has an unknown value type%s", kv->key, "");
    if (type == GGUF_ARRAY && (read_u32(c, &elem, kv->key) != 0 || read_u64(c, &count, kv->key) != 0)) return -1;
    if (type == GGUF_ARRAY && elem == GGUF_ARRAY)
        return fail(c, "%s: key %s is an array of arrays, nested deeper than normlab reads%s", kv->key, "");
    if (type == GGUF_ARRAY && elem >= GGUF_N_TYPES) return fail(c, "%s: key %s: unknown element type%s", kv->key, "");
    GgufType one = type == GGUF_ARRAY ? (GgufType)elem : (GgufType)type;
    kv->type = (GgufType)type;
    kv->elem = one;
    kv->data = c->buf + c->at;
    if (one != GGUF_STRING) {  // scalars: count values of SCALAR_BYTES each, within the file
        const unsigned char *p;
        if (count > (c->len - c->at) / SCALAR_BYTES[one])
            return fail(c, "%s: key %s: its array of %s runs past the end of the file", kv->key, "values");
        kv->count = (size_t)count;
        return take(c, (size_t)count * SCALAR_BYTES[one], &p, kv->key);
    }
    if (count > (c->len - c->at) / 8)
        return fail(c, "%s: key %s: its %s run past the end of the file", kv->key, "strings");
    kv->count = (size_t)count;
    if (!(kv->strings = calloc(count ? count : 1, sizeof *kv->strings)))
        return nl_error(c->err, NL_ERR_NOMEM, "%s: out of memory", c->what);
    for (size_t i = 0; i < kv->count; i++)
        if (read_string(c, &kv->strings[i], kv->key) != 0) return -1;
    return 0;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

// The first name that appears twice among n (sorted copies of the pointers), or NULL.
static const char *repeated(char **names, size_t n, int *nomem) {
    char **sorted = malloc((n ? n : 1) * sizeof *sorted);
    const char *twice = NULL;
    *nomem = !sorted;
    if (!sorted) return NULL;
    memcpy(sorted, names, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_names);
    for (size_t i = 1; i < n && !twice; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0) twice = sorted[i];
    free(sorted);
    return twice;
}

static int unique(Cursor *c, char **names, size_t n, const char *thing) {
    int nomem;
    const char *twice = repeated(names, n, &nomem);
    if (nomem) return nl_error(c->err, NL_ERR_NOMEM, "%s: out of memory", c->what);
    return twice ? fail(c, "%s: %s \"%s\" appears twice", thing, twice) : 0;
}

static int read_header(Cursor *c, GgufFile *f, uint64_t *n_tensors, uint64_t *n_kv) {
    const unsigned char *magic;
    if (take(c, 4, &magic, "the header") != 0) return -1;
    if (memcmp(magic, "GGUF", 4) != 0)
        return fail(c, "%s: not a GGUF file (its first bytes are not \"GGUF\")%s%s", "", "");
    if (read_u32(c, &f->version, "the header") != 0) return -1;
    if ((f->version & 0xFFFF) == 0 && f->version >> 16 != 0)
        return fail(c, "%s: a big-endian GGUF file: normlab reads little-endian ones%s%s", "", "");
    if (f->version != 2 && f->version != 3)
        return nl_error(c->err, NL_ERR_FORMAT, "%s: GGUF version %u: normlab reads versions 2 and 3", c->what,
                        (unsigned)f->version);
    if (read_u64(c, n_tensors, "the header") != 0 || read_u64(c, n_kv, "the header") != 0) return -1;
    size_t left = c->len - c->at;  // a key takes 13 bytes at least, a tensor's info 24
    if (*n_kv > left / 13 || *n_tensors > left / 24)
        return fail(c, "%s: its counts of %s run past the end of the file%s", "keys and tensors", "");
    return 0;
}

static int read_kvs(Cursor *c, GgufFile *f, size_t n) {
    if (!(f->kvs = calloc(n ? n : 1, sizeof *f->kvs))) return nl_error(c->err, NL_ERR_NOMEM, "out of memory");
    char **keys = malloc((n ? n : 1) * sizeof *keys);
    if (!keys) return nl_error(c->err, NL_ERR_NOMEM, "out of memory");
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++, f->n_kv++) {
        GgufString s;
        rc = read_string(c, &s, "a key") != 0 || !(f->kvs[i].key = owned_name(c, &s, MAX_KEY, "a key")) ||
                     read_value(c, &f->kvs[i]) != 0
                 ? -1
                 : 0;
        keys[i] = f->kvs[i].key;
    }
    if (rc == 0) rc = unique(c, keys, n, "key");
    free(keys);
    return rc;
}

// The alignment general.alignment gives (a u32 power of two), else 32.
static int read_alignment(Cursor *c, GgufFile *f) {
    const GgufKv *kv = nl_gguf_find(f, "general.alignment");
    f->alignment = 32;
    if (!kv) return 0;
    const unsigned char *p = kv->data;
    uint32_t a =
        kv->type == GGUF_U32 ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24 : 0;
    if (kv->type != GGUF_U32 || a == 0 || (a & (a - 1)) || a > MAX_ALIGNMENT)
        return fail(c, "%s: general.alignment must be a u32 power of two up to 2^20%s%s", "", "");
    f->alignment = a;
    return 0;
}

// A tensor's info: name, dims (1 to 4, none 0, their product no overflow), a type normlab reads
// with its rows whole blocks; *offset its data's offset, checked once the data's start is known.
static int read_tensor(Cursor *c, GgufTensor *t, uint64_t *offset) {
    GgufString s;
    uint32_t n_dims, type;
    if (read_string(c, &s, "a tensor name") != 0 || !(t->name = owned_name(c, &s, MAX_NAME, "a tensor name")) ||
        read_u32(c, &n_dims, t->name) != 0)
        return -1;
    if (n_dims < 1 || n_dims > 4) return fail(c, "%s: tensor %s has %s dims: 1 to 4", t->name, n_dims ? "over 4" : "0");
    t->n_dims = (int)n_dims;
    size_t elems = 1;
    for (int d = 0; d < t->n_dims; d++) {
        if (read_u64(c, &t->ne[d], t->name) != 0) return -1;
        if (t->ne[d] == 0 || t->ne[d] > SIZE_MAX / elems)
            return fail(c, "%s: tensor %s: a dimension is 0 or their product overflows%s", t->name, "");
        elems *= (size_t)t->ne[d];
    }
    for (int d = t->n_dims; d < 4; d++) t->ne[d] = 1;
    if (read_u32(c, &type, t->name) != 0 || read_u64(c, offset, t->name) != 0) return -1;
    t->type = type;
    const char *name = nl_gguf_type_name(type);
    if (!name) return fail(c, "%s: tensor %s has an unknown type id%s", t->name, "");
    if (!TYPES[type].block)
        return nl_error(c->err, NL_ERR_FORMAT, "%s: tensor %s has type %s, which normlab does not read (%s)", c->what,
                        t->name, name,
                        name[0] == 'I' || name[0] == 'T' || name[0] == 'M'
                            ? "no IQ, ternary or MXFP4 type"
                            : "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and Q2_K to Q6_K");
    if (t->ne[0] % TYPES[type].block)
        return nl_error(c->err, NL_ERR_FORMAT, "%s: tensor %s: its rows of %llu are not whole %s blocks of %zu",
                        c->what, t->name, (unsigned long long)t->ne[0], name, TYPES[type].block);
    size_t blocks = elems / TYPES[type].block;
    if (blocks > SIZE_MAX / TYPES[type].bytes) return fail(c, "%s: tensor %s: its size overflows%s", t->name, "");
    t->nbytes = blocks * TYPES[type].bytes;
    return 0;
}

typedef struct {
    size_t begin, end, index;
} Span;

static int cmp_span(const void *a, const void *b) {
    const Span *x = a, *y = b;
    return (x->begin > y->begin) - (x->begin < y->begin);
}

// Each tensor's offset: a multiple of the alignment, its bytes inside the data, none overlapping.
static int place_tensors(Cursor *c, GgufFile *f, const uint64_t *offsets) {
    size_t data = (c->at + f->alignment - 1) / f->alignment * f->alignment, n = f->n_tensors;
    if (data > c->len) return fail(c, "%s: the tensor data's start runs past the end of the file%s%s", "", "");
    Span *spans = malloc((n ? n : 1) * sizeof *spans);
    if (!spans) return nl_error(c->err, NL_ERR_NOMEM, "%s: out of memory", c->what);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        GgufTensor *t = &f->tensors[i];
        if (offsets[i] % f->alignment)
            rc = fail(c, "%s: tensor %s: its offset is not a multiple of general.alignment%s", t->name, "");
        else if (offsets[i] > c->len - data || t->nbytes > c->len - data - offsets[i])
            rc = fail(c, "%s: tensor %s: its data runs past the end of the file%s", t->name, "");
        else {
            t->data = c->buf + data + offsets[i];
            spans[i] = (Span){(size_t)offsets[i], (size_t)offsets[i] + t->nbytes, i};
        }
    }
    if (rc == 0) qsort(spans, n, sizeof *spans, cmp_span);
    for (size_t i = 1; i < n && rc == 0; i++)
        if (spans[i].begin < spans[i - 1].end)
            rc = fail(c, "%s: tensors %s and %s overlap", f->tensors[spans[i - 1].index].name,
                      f->tensors[spans[i].index].name);
    free(spans);
    return rc;
}

static int read_tensors(Cursor *c, GgufFile *f, size_t n) {
    uint64_t *offsets = calloc(n ? n : 1, sizeof *offsets);
    char **names = calloc(n ? n : 1, sizeof *names);
    int rc = (f->tensors = calloc(n ? n : 1, sizeof *f->tensors)) && offsets && names
                 ? 0
                 : nl_error(c->err, NL_ERR_NOMEM, "%s: out of memory", c->what);
    for (size_t i = 0; i < n && rc == 0; i++, f->n_tensors++) {
        rc = read_tensor(c, &f->tensors[i], &offsets[i]);
        names[i] = f->tensors[i].name;  // (unique runs only when every one was read)
    }
    if (rc == 0) rc = unique(c, names, n, "tensor");
    if (rc == 0) rc = place_tensors(c, f, offsets);
    free(offsets);
    free(names);
    return rc;
}

int nl_gguf_parse(GgufFile *out, const unsigned char *buf, size_t len, const char *what, NlError *err) {
    Cursor c = {buf, len, 0, what, err};
    uint64_t n_tensors = 0, n_kv = 0;
    *out = (GgufFile){0};
    int rc = read_header(&c, out, &n_tensors, &n_kv) != 0 || read_kvs(&c, out, (size_t)n_kv) != 0 ||
                     read_alignment(&c, out) != 0 || read_tensors(&c, out, (size_t)n_tensors) != 0
                 ? -1
                 : 0;
    if (rc != 0) nl_gguf_free(out);
    return rc;
}

void nl_gguf_free(GgufFile *f) {
    if (!f) return;
    for (size_t i = 0; i < f->n_kv; i++) {
        free(f->kvs[i].key);
        free(f->kvs[i].strings);
    }
    for (size_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
    free(f->kvs);
    free(f->tensors);
    *f = (GgufFile){0};
}

const GgufKv *nl_gguf_find(const GgufFile *f, const char *key) {
    for (size_t i = 0; i < f->n_kv; i++)
        if (strcmp(f->kvs[i].key, key) == 0) return &f->kvs[i];
    return NULL;
}

// ---- typed reads of the keys (gguf.h)

// The key {arch}.suffix (arch NULL: suffix itself), or NULL.
const GgufKv *nl_gguf_key(const GgufMeta *m, const char *suffix, int arch, char *name, size_t cap) {
    snprintf(name, cap, "%s%s%s", arch ? m->arch : "", arch ? "." : "", suffix);
    return nl_gguf_find(m->f, name);
}

// An integer key (any integer type) in [lo, hi]; a missing one is def, or an error where required.
int nl_gguf_get_int(const GgufMeta *m, const char *suffix, int arch, int required, int64_t lo, int64_t hi, int64_t def,
                    int64_t *out) {
    char name[160];
    const GgufKv *kv = nl_gguf_key(m, suffix, arch, name, sizeof name);
    *out = def;
    if (!kv) return required ? nl_error(m->err, NL_ERR_FORMAT, "%s: lacks the key %s", m->what, name) : 0;
    int64_t v = 0;
    uint64_t u = 0;
    switch (kv->type) {
    case GGUF_U8: u = *kv->data; break;
    case GGUF_I8: v = (int8_t)*kv->data; break;
    case GGUF_U16: {
        uint16_t x;
        memcpy(&x, kv->data, 2);
        u = x;
    } break;
    case GGUF_I16: {
        int16_t x;
        memcpy(&x, kv->data, 2);
        v = x;
    } break;
    case GGUF_U32: {
        uint32_t x;
        memcpy(&x, kv->data, 4);
        u = x;
    } break;
    case GGUF_I32: {
        int32_t x;
        memcpy(&x, kv->data, 4);
        v = x;
    } break;
    case GGUF_U64: memcpy(&u, kv->data, 8); break;
    case GGUF_I64: memcpy(&v, kv->data, 8); break;
    default: return nl_error(m->err, NL_ERR_FORMAT, "%s: key %s is not an integer", m->what, name);
    }
    if (u > (uint64_t)INT64_MAX) u = (uint64_t)INT64_MAX;
    v = v ? v : (int64_t)u;
    if (v < lo || v > hi)
        return nl_error(m->err, NL_ERR_FORMAT, "%s: key %s is %lld, not in [%lld, %lld]", m->what, name, (long long)v,
                        (long long)lo, (long long)hi);
    *out = v;
    return 0;
}

int nl_gguf_get_float(const GgufMeta *m, const char *suffix, int required, double def, double *out) {
    char name[160];
    const GgufKv *kv = nl_gguf_key(m, suffix, 1, name, sizeof name);
    *out = def;
    if (!kv) return required ? nl_error(m->err, NL_ERR_FORMAT, "%s: lacks the key %s", m->what, name) : 0;
    if (kv->type == GGUF_F32) {
        float x;
        memcpy(&x, kv->data, 4);
        *out = x;
    } else if (kv->type == GGUF_F64) memcpy(out, kv->data, 8);
    else return nl_error(m->err, NL_ERR_FORMAT, "%s: key %s is not a float", m->what, name);
    return 0;
}

int nl_gguf_get_bool(const GgufMeta *m, const char *name, int def, int *out) {
    const GgufKv *kv = nl_gguf_find(m->f, name);
    *out = def;
    if (kv && kv->type != GGUF_BOOL) return nl_error(m->err, NL_ERR_FORMAT, "%s: key %s is not a bool", m->what, name);
    if (kv) *out = *kv->data != 0;
    return 0;
}

// A string key equal to one of choices (NULL-terminated): its index; missing or another: an error.
int nl_gguf_get_choice(const GgufMeta *m, const char *name, const char *const *choices, const char *said, int *index) {
    const GgufKv *kv = nl_gguf_find(m->f, name);
    if (!kv || kv->type != GGUF_STRING)
        return nl_error(m->err, NL_ERR_FORMAT, "%s: lacks the string key %s", m->what, name);
    for (*index = 0; choices[*index]; ++*index)
        if (strlen(choices[*index]) == kv->strings[0].len &&
            !memcmp(choices[*index], kv->strings[0].s, kv->strings[0].len))
            return 0;
    return nl_error(m->err, NL_ERR_FORMAT, "%s: %s is \"%.*s\": %s", m->what, name,
                    (int)(kv->strings[0].len > 64 ? 64 : kv->strings[0].len), kv->strings[0].s, said);
}

// An array key of n elements of type elem, or NULL where it is absent; one of another shape: an error.
int nl_gguf_get_array(const GgufMeta *m, const char *name, GgufType elem, size_t n, const GgufKv **out) {
    *out = nl_gguf_find(m->f, name);
    if (*out && ((*out)->type != GGUF_ARRAY || (*out)->elem != elem || (n && (*out)->count != n)))
        return nl_error(m->err, NL_ERR_FORMAT, "%s: key %s is not an array of the tokens' count of the type it needs",
                        m->what, name);
    return 0;
}
