// model_write.c — a model's model.safetensors written again with its matrices in another type
// (normlab.h's nl_model_quantize, llama.cpp's llama_model_quantize): every matrix widened to float32
// as the engine reads it, then stored as asked (dtype.h); the other tensors as the file holds them.
// The file's tensors go float32 first, then the 16-bit and block types, so that every tensor's data
// starts aligned for its values (the data section starts on 64 bytes; float32 tensors are whole words).
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "model.h"
#include "normlab.h"
#include "normlab_internal.h"
#include "safetensors.h"

#define QUANTIZATION_KEY "quantization"  // the metadata entry naming the type asked

// One tensor to write: the file's, and the matrix it holds (NULL for a norm gain or a bias), as type.
typedef struct {
    const StTensor *t;
    const NlMatrix *mat;
    NlDType type;
} OutTensor;

static const char *st_dtype(NlDType type) {
    static const char *const NAMES[] = {"F32", "F16", "BF16", "U8", "U8"};
    return NAMES[type];
}

static const NlMatrix *matrix_named(const NlMatrix *mats, size_t n, const char *name) {
    for (size_t k = 0; k < n; k++)
        if (strcmp(mats[k].name, name) == 0) return &mats[k];
    return NULL;
}

static int kept(const NlQuantizeParams *p, const char *name) {
    for (size_t i = 0; i < p->n_keep; i++)
        if (strcmp(p->keep[i], name) == 0) return 1;
    return 0;
}

// The type matrix m is written as (counted in r): the type asked, or float32 where keep names it,
// where it is a table of positions, or where Q8_0 or Q4_0 cannot block its rows.
static NlDType matrix_type(const NlMatrix *m, const NlQuantizeParams *p, NlQuantizeResult *r) {
    if (kept(p, m->name)) return r->kept++, NL_DTYPE_F32;
    if (m->positions) return r->positions++, NL_DTYPE_F32;
    if (!nl_dtype_row_bytes(p->type, m->cols)) {
        if (!r->unblockable++) snprintf(r->unblockable_name, sizeof r->unblockable_name, "%s", m->name);
        return NL_DTYPE_F32;
    }
    r->stored++;
    return p->type;
}

// Each of the file's tensors, in the file's order, with its matrix and the type it is written as.
static void plan(OutTensor *out, const StFile *file, const NlMatrix *mats, size_t n_mats, const NlQuantizeParams *p,
                 NlQuantizeResult *r) {
    for (size_t i = 0; i < file->n; i++) {
        const NlMatrix *m = matrix_named(mats, n_mats, file->tensors[i].name);
        out[i] = (OutTensor){&file->tensors[i], m, m ? matrix_type(m, p, r) : file->tensors[i].type};
    }
}

// outs reordered: float32 first, then the others, each group in the file's order. Returns -1 when
// out of memory.
static int float32_first(OutTensor *outs, size_t n) {
    OutTensor *ordered = calloc(n + 1, sizeof *ordered);
    size_t at = 0;
    if (!ordered) return -1;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n; i++)
            if ((outs[i].type == NL_DTYPE_F32) == (pass == 0)) ordered[at++] = outs[i];
    memcpy(outs, ordered, n * sizeof *outs);
    free(ordered);
    return 0;
}

// Its header entry: a matrix's shape is (rows, cols) of values, or (rows, bytes a row) of U8 blocks.
static StEntry entry_of(const OutTensor *o) {
    StEntry e = {o->t->name, st_dtype(o->type), o->t->ndim, {0}, o->t->nbytes};
    memcpy(e.shape, o->t->shape, sizeof e.shape);
    if (!o->mat) return e;
    e.shape[1] = nl_dtype_block(o->type) > 1 ? nl_dtype_row_bytes(o->type, o->mat->cols) : o->mat->cols;
    e.nbytes = nl_weight_bytes(o->type, o->mat->rows, o->mat->cols);
    return e;
}

// The largest magnitude type stores finitely: F16's 65504, times 127 (Q8_0's d = amax / 127) or 8
// (Q4_0's d = max / -8); any float32 for float32 and BF16 (whose range is float32's).
static float largest(NlDType type) {
    return type == NL_DTYPE_F16    ? 65504.0f
           : type == NL_DTYPE_Q8_0 ? 65504.0f * 127.0f
           : type == NL_DTYPE_Q4_0 ? 65504.0f * 8.0f
                                   : 3.4e38f;
}

// Matrix m's rows widened and stored as type, one at a time; a weight too large for type (an
// infinite F16 value or block scale, which the loader would refuse) is refused first.
static int write_matrix(FILE *out, const NlMatrix *m, NlDType type, float *row, unsigned char *bytes, NlError *err) {
    size_t row_bytes = nl_dtype_row_bytes(type, m->cols);
    for (size_t r = 0; r < m->rows; r++) {
        nl_weight_rows(row, m->w, r, 1, m->cols);
        for (size_t i = 0; i < m->cols; i++)
            if (fabsf(row[i]) > largest(type))
                return nl_error(err, NL_ERR_NUMERIC, "tensor \"%.100s\": weight %zu of row %zu is %g, too large for %s",
                                m->name, i, r, row[i], nl_name(NL_NAMES_DTYPE, type));
        nl_dtype_from_f32(bytes, row, m->cols, type);
        if (fwrite(bytes, 1, row_bytes, out) != row_bytes)
            return nl_error(err, NL_ERR_IO, "cannot write tensor \"%.100s\": %s", m->name, strerror(errno));
    }
    return 0;
}

// The metadata written: the file's, its "quantization" set to type's name, and each block tensor's
// "dtype.NAME" entry (docs/format.md). Strings in *names (free() each of the first *n_names).
static size_t metadata(const NlModel *model, const OutTensor *outs, size_t n, NlDType type, const char **keys,
                       const char **values, char **names, size_t *n_names) {
    const char *const *k, *const *v;
    size_t m = nl_model_metadata(model, &k, &v), at = 0;
    *n_names = 0;
    for (size_t i = 0; i < m; i++)
        if (strcmp(k[i], QUANTIZATION_KEY) != 0) keys[at] = k[i], values[at++] = v[i];
    keys[at] = QUANTIZATION_KEY;
    values[at++] = nl_name(NL_NAMES_DTYPE, type);
    for (size_t i = 0; i < n; i++) {
        if (!outs[i].mat || nl_dtype_block(outs[i].type) == 1) continue;
        size_t len = strlen(ST_DTYPE_KEY) + strlen(outs[i].t->name) + 1;
        char *name = malloc(len);
        if (!name) continue;  // (the header then fails to name it, and the loader refuses the file)
        snprintf(name, len, "%s%s", ST_DTYPE_KEY, outs[i].t->name);
        names[(*n_names)++] = name;
        keys[at] = name;
        values[at++] = outs[i].type == NL_DTYPE_Q8_0 ? "Q8_0" : "Q4_0";
    }
    return at;
}

int nl_model_quantize(const NlModel *model, const NlQuantizeParams *p, FILE *out, NlQuantizeResult *r, NlError *err) {
    const StFile *file = nl_model_file(model);
    *r = (NlQuantizeResult){0};
    if (!file)
        return nl_error(err, NL_ERR_ARG,
                        "a model read from one .json file cannot be stored otherwise: give a model directory");
    if ((unsigned)p->type >= NL_DTYPE_COUNT) return nl_error(err, NL_ERR_ARG, "unknown type %d", (int)p->type);
    size_t n_mats = nl_model_matrices(model, NULL), n = file->n, widest = 1, header = 0, n_names = 0, n_meta;
    const char *const *mk, *const *mv;
    size_t n_meta_in = nl_model_metadata(model, &mk, &mv);
    NlMatrix *mats = calloc(n_mats + 1, sizeof *mats);
    OutTensor *outs = calloc(n + 1, sizeof *outs);
    StEntry *entries = calloc(n + 1, sizeof *entries);
    const char **keys = calloc(n_meta_in + n + 2, sizeof *keys), **values = calloc(n_meta_in + n + 2, sizeof *values);
    char **names = calloc(n + 1, sizeof *names);
    float *row = NULL;
    unsigned char *bytes = NULL;
    int rc = -1;
    if (!mats || !outs || !entries || !keys || !values || !names) goto nomem;
    nl_model_matrices(model, mats);
    for (size_t i = 0; i < p->n_keep; i++)
        if (!matrix_named(mats, n_mats, p->keep[i])) {
            nl_error(err, NL_ERR_ARG, "no matrix of this model is named \"%.100s\" (info lists them)", p->keep[i]);
            goto cleanup;
        }
    plan(outs, file, mats, n_mats, p, r);
    for (size_t k = 0; k < n_mats; k++) widest = mats[k].cols > widest ? mats[k].cols : widest;
    if (!(row = malloc(widest * sizeof *row)) || !(bytes = malloc(widest * sizeof(float)))) goto nomem;
    if (float32_first(outs, n) != 0) goto nomem;
    for (size_t i = 0; i < n; i++) entries[i] = entry_of(&outs[i]);
    n_meta = metadata(model, outs, n, p->type, keys, values, names, &n_names);
    if (nl_st_write_header(out, entries, n, keys, values, n_meta, &header, err) != 0) goto cleanup;
    r->bytes = header;
    for (size_t i = 0; i < n; i++) {
        if (outs[i].mat && write_matrix(out, outs[i].mat, outs[i].type, row, bytes, err) != 0) goto cleanup;
        if (!outs[i].mat && fwrite(outs[i].t->data, 1, outs[i].t->nbytes, out) != outs[i].t->nbytes) {
            nl_error(err, NL_ERR_IO, "cannot write tensor \"%.100s\": %s", outs[i].t->name, strerror(errno));
            goto cleanup;
        }
        r->bytes += entries[i].nbytes;
    }
    rc = 0;
    goto cleanup;
nomem:
    nl_error(err, NL_ERR_NOMEM, "out of memory");
cleanup:
    for (size_t i = 0; i < n_names; i++) free(names[i]);
    free(names);
    free(keys);
    free(values);
    free(entries);
    free(outs);
    free(mats);
    free(row);
    free(bytes);
    return rc;
}
