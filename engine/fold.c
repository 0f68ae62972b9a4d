// fold.c — a model's tensors read into an NlTensorSet (tensor_set.c) as float32, what its family's
// fold rule rewrites (family.h), and model.safetensors written back from them, every tensor F32.
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "family.h"
#include "model.h"
#include "normlab.h"
#include "normlab_internal.h"
#include "safetensors.h"

#define FOLDED_KEY "folded"  // the metadata entry of a folded model
#define QUANTIZATION_KEY "quantization"  // model_write.c's: the file is float32 now

// dst (rows, cols) = tensor t's values widened: row by row as stored (blocks along each row).
static void widen(float *dst, const StTensor *t, size_t rows, size_t cols) {
    size_t row_bytes = nl_dtype_row_bytes(t->type, cols);
    for (size_t r = 0; r < rows; r++) nl_dtype_to_f32(dst + r * cols, t->data + r * row_bytes, cols, t->type);
}

int nl_model_tensors(const NlModel *model, NlTensorSet *out, NlError *err) {
    const StFile *file = nl_model_file(model);
    *out = (NlTensorSet){0};
    if (!file)
        return nl_error(err, NL_ERR_ARG, "a model read from one .json file cannot be folded: give a model directory");
    for (size_t i = 0; i < file->n; i++) {
        const StTensor *t = &file->tensors[i];
        if (t->ndim < 1 || t->ndim > 2 || strlen(t->name) >= sizeof out->t->name)
            return nl_error(err, NL_ERR_FORMAT, "tensor \"%.100s\": not a vector or a matrix", t->name);
        size_t rows = t->ndim == 2 ? t->shape[0] : 1, cols = t->shape[t->ndim - 1];
        float *data = nl_tensor_add(out, t->name, t->ndim, rows, cols);
        if (!data) return nl_error(err, NL_ERR_NOMEM, "out of memory");
        widen(data, t, rows, cols);
    }
    return 0;
}

// The metadata written: the model's but "quantization", "folded" and those the extra pairs give anew,
// then the extra pairs. keys and values have room for the model's and n_extra; returns their count.
static size_t metadata(const NlModel *model, const char *const *extra_keys, const char *const *extra_values,
                       size_t n_extra, const char **keys, const char **values) {
    const char *const *k, *const *v;
    size_t m = nl_model_metadata(model, &k, &v), at = 0;
    for (size_t i = 0; i < m; i++) {
        int replaced = strcmp(k[i], QUANTIZATION_KEY) == 0 || strcmp(k[i], FOLDED_KEY) == 0;
        for (size_t j = 0; j < n_extra && !replaced; j++) replaced = strcmp(k[i], extra_keys[j]) == 0;
        if (!replaced) keys[at] = k[i], values[at++] = v[i];
    }
    for (size_t i = 0; i < n_extra; i++) keys[at] = extra_keys[i], values[at++] = extra_values[i];
    return at;
}

int nl_tensors_write(FILE *out, const NlTensorSet *set, const NlModel *model, const char *const *extra_keys,
                     const char *const *extra_values, size_t n_extra, size_t *bytes, NlError *err) {
    const char *const *k, *const *v;
    size_t n_meta = nl_model_metadata(model, &k, &v) + n_extra, header = 0;
    StEntry *entries = calloc(set->n + 1, sizeof *entries);
    const char **keys = calloc(n_meta + 1, sizeof *keys), **values = calloc(n_meta + 1, sizeof *values);
    int rc = -1;
    if (!entries || !keys || !values) {
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < set->n; i++) {
        const NlTensorF32 *t = &set->t[i];
        entries[i] = (StEntry){t->name, "F32", t->ndim, {0}, t->rows * t->cols * sizeof(float)};
        entries[i].shape[0] = t->ndim == 2 ? t->rows : t->cols;
        entries[i].shape[1] = t->cols;
    }
    n_meta = metadata(model, extra_keys, extra_values, n_extra, keys, values);
    if (nl_st_write_header(out, entries, set->n, keys, values, n_meta, &header, err) != 0) goto cleanup;
    *bytes = header;
    for (size_t i = 0; i < set->n; i++) {
        if (fwrite(set->t[i].data, 1, entries[i].nbytes, out) != entries[i].nbytes) {
            nl_error(err, NL_ERR_IO, "cannot write tensor \"%.100s\": %s", set->t[i].name, strerror(errno));
            goto cleanup;
        }
        *bytes += entries[i].nbytes;
    }
    rc = 0;
cleanup:
    free(entries);
    free(keys);
    free(values);
    return rc;
}

int nl_model_fold_rule(const NlModel *model, NlTensorSet *set, const NlFoldOptions *opts, NlFoldResult *r,
                       NlError *err) {
    const NlFamily *family = nl_model_family(model);
    *r = (NlFoldResult){0};
    if (!family->fold)
        return nl_error(err, NL_ERR_ARG,
                        "arch %s: its norms sit inside the recurrence, where no linear alone reads them; normlab fold "
                        "folds the transformers' norms",
                        nl_name(NL_NAMES_ARCH, nl_model_config(model)->arch));
    return family->fold(set, nl_model_config(model), opts, r, err);
}
