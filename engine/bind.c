// bind.c — taking a family's tensors from the loader's table by name and shape (bind.h).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind.h"

// Takes `name` of shape (d0) or (d0, d1) into *ref (NULL when missing and not required).
static int bind_ref(NlBinder *b, const char *name, size_t d0, size_t d1, int required, NlTensorRef **ref) {
    *ref = NULL;
    for (size_t i = 0; i < b->n; i++) {
        NlTensorRef *r = &b->refs[i];
        if (strcmp(r->name, name) != 0) continue;
        int want_nd = d1 ? 2 : 1;
        if (r->ndim != want_nd || r->shape[0] != d0 || (d1 && r->shape[1] != d1)) {
            char got[128] = "";
            for (int k = 0; k < r->ndim; k++)
                snprintf(got + strlen(got), sizeof got - strlen(got), "%s%zu", k ? ", " : "", r->shape[k]);
            if (d1)
                nl_error(b->err, NL_ERR_FORMAT, "%s: tensor \"%s\" has shape (%s), expected (%zu, %zu)", b->what, name,
                         got, d0, d1);
            else
                nl_error(b->err, NL_ERR_FORMAT, "%s: tensor \"%s\" has shape (%s), expected (%zu)", b->what, name, got,
                         d0);
            return -1;
        }
        r->used = 1;
        *ref = r;
        return 0;
    }
    if (!required) return 0;
    nl_error(b->err, NL_ERR_FORMAT, "%s: missing tensor \"%s\"", b->what, name);
    return -1;
}

int nl_bind_tensor(NlBinder *b, const char *name, size_t d0, size_t d1, int required, const float **out) {
    NlTensorRef *r;
    *out = NULL;
    if (bind_ref(b, name, d0, d1, required, &r) != 0) return -1;
    if (r && r->type != NL_DTYPE_F32) {
        nl_error(b->err, NL_ERR_FORMAT, "%s: tensor \"%s\" is %s; norm gains, biases and positions must be float32",
                 b->what, name, nl_name(NL_NAMES_DTYPE, r->type));
        return -1;
    }
    *out = r ? r->data : NULL;
    return 0;
}

int nl_bind_matrix(NlBinder *b, const char *name, size_t rows, size_t cols, NlWeight *out) {
    NlTensorRef *r;
    *out = (NlWeight){NULL, NL_DTYPE_F32};
    if (bind_ref(b, name, rows, cols, 1, &r) != 0) return -1;
    *out = (NlWeight){r->data, r->type};
    return 0;
}

int nl_bind_norm(NlBinder *b, NlNormType norm, size_t width, const char *prefix, NlNormWeights *w) {
    static const char *const SUFFIX[] = {"weight", "bias", "running_mean", "running_var", "alpha"};
    const float **dst[] = {&w->gain, &w->bias, &w->mean, &w->var, &w->alpha};
    int bn = norm == NL_NORM_BATCHNORM, dyt = norm == NL_NORM_DYT, none = norm == NL_NORM_NONE;
    int takes[] = {!none, !none, bn, bn, dyt};  // the tensors this norm has
    int required[] = {1, norm != NL_NORM_RMSNORM && !dyt, 1, 1, 1};  // of those, the ones it must have
    size_t len[] = {width, width, width, width, 1};
    *w = (NlNormWeights){0};
    for (int k = 0; k < 5; k++) {
        if (!takes[k]) continue;
        char name[64];
        snprintf(name, sizeof name, "%s.%s", prefix, SUFFIX[k]);
        if (nl_bind_tensor(b, name, len[k], 0, required[k], dst[k]) != 0) return -1;
    }
    for (size_t i = 0; bn && i < width; i++)
        if (w->var[i] < 0.0f) {  // a NaN is caught with the other non-finite weights
            nl_error(b->err, NL_ERR_NUMERIC, "%s: tensor \"%s.running_var\" has a negative variance (%g) at index %zu",
                     b->what, prefix, w->var[i], i);
            return -1;
        }
    return 0;
}

int nl_bind_linear(NlBinder *b, int bias, const char *prefix, size_t n_out, size_t n_in, NlLinear *lin) {
    char name[64];
    *lin = (NlLinear){.n_out = n_out, .n_in = n_in, .tier = -1};
    snprintf(name, sizeof name, "%s.weight", prefix);
    if (nl_bind_matrix(b, name, n_out, n_in, &lin->w) != 0) return -1;
    if (!bias) return 0;
    snprintf(name, sizeof name, "%s.bias", prefix);
    return nl_bind_tensor(b, name, n_out, 0, 1, &lin->b);
}

void *nl_bind_copy(const void *w, size_t size, const void *layers, size_t n, size_t layer_size, void **layers_out) {
    void *copy = malloc(size), *rows = malloc(n ? n * layer_size : 1);
    if (!copy || !rows) {
        free(copy);
        free(rows);
        return NULL;
    }
    memcpy(copy, w, size);
    *layers_out = memcpy(rows, layers, n * layer_size);
    return copy;
}

void *nl_bind_alloc(NlBinder *b, size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) nl_error(b->err, NL_ERR_NOMEM, "%s: out of memory", b->what);
    return p;
}
