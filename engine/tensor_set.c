// tensor_set.c — named float32 tensors (normlab_internal.h's NlTensorSet): what normlab fold reads a
// model into (fold.c) and a family's fold rule rewrites (transformer_fold.c). A leaf: it calls no
// other module, so that the rules, which the family tables name, do not call back into the loader.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "normlab.h"
#include "normlab_internal.h"

void nl_tensor_set_free(NlTensorSet *set) {
    for (size_t i = 0; set && i < set->n; i++) free(set->t[i].data);
    if (set) free(set->t);
    if (set) *set = (NlTensorSet){0};
}

float *nl_tensor_add(NlTensorSet *set, const char *name, int ndim, size_t rows, size_t cols) {
    if (set->n == set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 64;
        NlTensorF32 *t = realloc(set->t, cap * sizeof *t);
        if (!t) return NULL;
        set->t = t, set->cap = cap;
    }
    float *data = calloc(rows * cols > 0 ? rows * cols : 1, sizeof *data);
    if (!data) return NULL;
    NlTensorF32 *t = &set->t[set->n++];
    *t = (NlTensorF32){"", ndim, rows, cols, data};
    snprintf(t->name, sizeof t->name, "%s", name);
    return data;
}

float *nl_tensor_find(const NlTensorSet *set, const char *name, size_t count) {
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->t[i].name, name) == 0) return set->t[i].rows * set->t[i].cols == count ? set->t[i].data : NULL;
    return NULL;
}
