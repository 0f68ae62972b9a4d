// bind.h — a model file's tensors as the loader found them, from which each family takes its
// weights by name and shape (internal). The loader (model.c) fills the table from model.safetensors
// or an inline .json and hands it to the family's bind (family.h); a tensor no family took is refused.
#ifndef NL_BIND_H
#define NL_BIND_H

#include <stddef.h>

#include "linear.h"
#include "normlab.h"
#include "normlab_internal.h"
#include "safetensors.h"

#pragma GCC visibility push(hidden)

// One tensor from either source. A matrix stored otherwise than float32 has its shape in weights
// (rows, cols), whatever bytes a row takes.
typedef struct {
    const char *name;
    int ndim;
    size_t shape[ST_MAX_DIMS];
    const void *data;  // (shape) stored as type
    NlDType type;
    int used;  // taken by the family
} NlTensorRef;

typedef struct {
    NlTensorRef *refs;  // (n)
    size_t n;
    const char *what;  // names the file in errors
    NlError *err;
} NlBinder;

// Takes the float32 tensor `name` with shape (d0) or (d0, d1) (d1 == 0 means 1-D) into *out. A
// missing optional tensor gives NULL; a missing required one, or one of another shape or type (norm
// gains, biases and positions are float32), is an error naming it.
int nl_bind_tensor(NlBinder *b, const char *name, size_t d0, size_t d1, int required, const float **out);
// Takes the matrix `name` (rows, cols), stored as float32 or any other NlDType, into *out; required.
int nl_bind_matrix(NlBinder *b, const char *name, size_t rows, size_t cols, NlWeight *out);
// A norm of type norm over width features, as PREFIX.weight and so on: LayerNorm weight and bias;
// RMSNorm weight and an optional bias; BatchNorm weight, bias, running_mean and running_var
// (PyTorch's BatchNorm1d, whose variances must not be negative); DyT weight, an optional bias and
// alpha, shape (1) (a NaN or infinite alpha is refused with every other weight, by the loader);
// nothing for norm none.
int nl_bind_norm(NlBinder *b, NlNormType norm, size_t width, const char *prefix, NlNormWeights *w);
// PREFIX.weight (n_out, n_in) of any NlDType, and PREFIX.bias (n_out, float32) when bias; the plan's
// tier is left unknown (-1) for the loader to set.
int nl_bind_linear(NlBinder *b, int bias, const char *prefix, size_t n_out, size_t n_in, NlLinear *lin);
// A copy of a family's weights struct w (size bytes) and, in *layers_out, of its array of n layers
// (layer_size bytes each), for the family's copy_weights to point the struct at; NULL (and nothing
// kept) when out of memory.
void *nl_bind_copy(const void *w, size_t size, const void *layers, size_t n, size_t layer_size, void **layers_out);
// calloc(n, size), or NULL with an out-of-memory error naming the file.
void *nl_bind_alloc(NlBinder *b, size_t n, size_t size);

#pragma GCC visibility pop

#endif
